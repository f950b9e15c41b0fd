#pragma once
// The operator definitions validation checks nodes against: ai.onnx up to opset 24, and
// onnxruntime's domains (com.microsoft, com.microsoft.nchwc). Generated from the onnx and
// onnxruntime packages (scripts/gen_schemas.py) and built per operator on first use. Our own
// type, not the ONNX library's OpSchema: a process that validates a model then does not load
// libonnx at all. Private to src/ir/validate.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/ir/attribute.hpp"
#include "inferopt/ir/data_type.hpp"

namespace inferopt::ir::validation {

/// How many values a formal parameter takes: exactly one, one or none, or one or more.
enum class arity { single, optional, variadic };

/// One input or output of an operator, as ONNX's schemas declare it.
struct formal_parameter {
  std::string name;
  std::string type_variable;  ///< a key of `op_definition::type_constraints`
  arity option = arity::single;
  bool homogeneous = true;  ///< a variadic's values share one type
  int min_arity = 1;        ///< a variadic's fewest values
};

/// What a type variable allows: element types of plain tensors, and whether it allows
/// anything else (sequences, optionals, maps, sparse tensors), which we do not check.
struct allowed_types {
  std::vector<data_type> elements;
  bool takes_non_tensors = false;

  [[nodiscard]] bool allows(data_type t) const;
};

struct attribute_definition {
  attribute_kind kind = attribute_kind::undefined;
  bool required = false;
};

/// One version of one operator.
struct op_definition {
  int since = 0;
  bool deprecated = false;
  std::vector<formal_parameter> inputs, outputs;
  std::map<std::string, attribute_definition, std::less<>> attributes;
  std::map<std::string, allowed_types, std::less<>> type_constraints;
  /// Counts the formals allow, as ONNX computes them; `max_*` is INT_MAX after a variadic.
  int min_inputs = 0, max_inputs = 0, min_outputs = 0, max_outputs = 0;
};

/// The definition of `domain`'s `op` in force at `opset` (the model's import of that domain):
/// the newest at or before `opset`; null when the table has none.
[[nodiscard]] const op_definition* find_generated_definition(std::string_view domain, std::string_view op,
                                                             std::int64_t opset);

/// Whether the table holds any definition of `domain` (the ones we can check a node of).
[[nodiscard]] bool has_generated_domain(std::string_view domain);

}  // namespace inferopt::ir::validation
