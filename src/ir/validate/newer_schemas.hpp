#pragma once
// ONNX's definitions newer than the linked ONNX library (opsets 18 to 24), as schemas the
// library's own `OpSchema::Verify` and type checks read. Private to src/ir/validate.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/defs/schema.h>

#include "inferopt/ir/data_type.hpp"

namespace inferopt::ir::validation {

/// One definition: the library's schema type, built from the generated table, and per type
/// variable the element types the library cannot name (float8, int4, uint4).
struct newer_definition {
  onnx::OpSchema schema;
  std::map<std::string, std::vector<data_type>, std::less<>> newer_types;
};

/// The definition of `op` in force at `opset`, when one was introduced after the library's
/// newest opset and at or before `opset`; null otherwise.
[[nodiscard]] const newer_definition* find_newer_definition(std::string_view op, std::int64_t opset);

}  // namespace inferopt::ir::validation
