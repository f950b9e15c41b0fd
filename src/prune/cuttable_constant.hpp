#pragma once
// Constants pruning may cut: an initializer, shared or not (the cut gives its node its own
// copy: ir::replace_constant_input), or a ConstantOfShape output read by one node only
// (cutting it means changing its target shape, which every reader would see).

#include <cstdint>
#include <optional>
#include <vector>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/node.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/value.hpp"

namespace inferopt::prune {

struct cuttable {
  std::vector<std::int64_t> dims;
  const ir::tensor* data = nullptr;          ///< the initializer, or null for ConstantOfShape
  const ir::node* constant_of_shape = nullptr;
};

inline std::optional<cuttable> cuttable_constant(const ir::value* v, std::int64_t ir_version) {
  if (!v) return std::nullopt;
  if (const ir::tensor* t = ir::constant_tensor(v, ir_version)) return cuttable{t->dims, t, nullptr};
  if (v->uses().size() != 1 || v->is_graph_output()) return std::nullopt;
  const ir::node* p = v->producer();
  if (!p || !p->is("ConstantOfShape")) return std::nullopt;  // its shape may be shared: cuts write a new one
  auto shape = ir::constant_ints(p->input(0), ir_version);
  if (!shape) return std::nullopt;
  return cuttable{std::move(*shape), nullptr, p};
}

}  // namespace inferopt::prune
