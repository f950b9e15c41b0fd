#pragma once
/// Typed node attributes. Graph-valued attributes own their subgraphs.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "inferopt/ir/fwd.hpp"
#include "inferopt/ir/tensor.hpp"

namespace inferopt::ir {

/// Numbered as ONNX's AttributeProto.AttributeType.
enum class attribute_kind : std::int32_t {
  undefined = 0,
  f = 1,
  i = 2,
  s = 3,
  t = 4,
  g = 5,
  floats = 6,
  ints = 7,
  strings = 8,
  tensors = 9,
  graphs = 10,
  sparse_tensor = 11,
  sparse_tensors = 12,
  type_proto = 13,
  type_protos = 14,
};

/// One attribute. Exactly the member that matches `kind` is meaningful; `t` and `g` use the
/// first element of `tensors` and `graphs`. Sparse tensors and type protos are not modelled:
/// they stay in `residual` and round-trip untouched.
class attribute {
 public:
  std::string name;
  attribute_kind kind = attribute_kind::undefined;
  float f = 0.0f;
  std::int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<std::int64_t> ints;
  std::vector<std::string> strings;
  std::vector<tensor> tensors;
  std::vector<std::unique_ptr<graph>> graphs;
  /// Serialized AttributeProto of the fields above left out (doc_string, ref_attr_name, ...).
  std::string residual;

  attribute();
  ~attribute();
  attribute(attribute&&) noexcept;
  attribute& operator=(attribute&&) noexcept;

  static attribute make_float(std::string name, float v);
  static attribute make_int(std::string name, std::int64_t v);
  static attribute make_string(std::string name, std::string v);
  static attribute make_floats(std::string name, std::vector<float> v);
  static attribute make_ints(std::string name, std::vector<std::int64_t> v);
  static attribute make_strings(std::string name, std::vector<std::string> v);
  static attribute make_tensor(std::string name, tensor v);
};

/// Attributes for a `node_spec`: they are move-only, so a braced list cannot hold them.
template <class... A>
[[nodiscard]] std::vector<attribute> attribute_list(A&&... a) {
  std::vector<attribute> out;
  (out.push_back(std::forward<A>(a)), ...);
  return out;
}

}  // namespace inferopt::ir
