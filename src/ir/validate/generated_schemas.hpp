#pragma once
// The operator definitions validation checks nodes against: ai.onnx up to opset 24, and
// onnxruntime's domains (com.microsoft, com.microsoft.nchwc). Generated from the onnx and
// onnxruntime packages (scripts/gen_schemas.py) and built into the library's schema type, so
// that `OpSchema::Verify` and our type checks read them like the library's own. The linked
// library's registry is not used: it builds all its definitions at once. Private to
// src/ir/validate.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/defs/schema.h>

#include "inferopt/ir/data_type.hpp"

namespace inferopt::ir::validation {

/// One definition, and per type variable the element types the library cannot name
/// (float8, int4, uint4).
struct generated_definition {
  onnx::OpSchema schema;
  std::map<std::string, std::vector<data_type>, std::less<>> newer_types;
};

/// The generated definition of `domain`'s `op` in force at `opset` (the model's import of
/// that domain); null when the table has none at or before `opset`.
[[nodiscard]] const generated_definition* find_generated_definition(std::string_view domain, std::string_view op,
                                                                    std::int64_t opset);

/// Whether the table holds any definition of `domain` (the ones we can check a node of).
[[nodiscard]] bool has_generated_domain(std::string_view domain);

}  // namespace inferopt::ir::validation
