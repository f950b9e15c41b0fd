#include "inferopt/fusion/merge_parallel_matmuls.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "inferopt/ir/constants.hpp"

namespace inferopt {
namespace {

/// The constant [K, N] float32 weight of `n` read by `n` alone, or null.
const ir::tensor* own_weight(const ir::node& n, const pass_context& ctx) {
  const ir::value* w = n.input(1);
  if (!w || w->uses().size() != 1 || w->is_graph_output()) return nullptr;
  const ir::tensor* t = ir::constant_tensor(w, ctx.ir_version());
  return t && t->dtype == ir::data_type::float32 && t->dims.size() == 2 ? t : nullptr;
}

/// The MatMuls that could join a group, one list per value they read as input 0, the lists in
/// graph order of their first reader (so that the names merging makes do not depend on
/// addresses).
std::vector<std::vector<ir::node*>> candidates(ir::graph& g, const pass_context& ctx) {
  std::vector<std::vector<ir::node*>> groups;
  std::map<const ir::value*, std::size_t> index;
  for (ir::node* n : g.node_list()) {
    if (!n->is("MatMul") || n->inputs().size() != 2 || !n->input(0) || !n->output(0) || n->output(0)->is_graph_output()) continue;
    if (ctx.is_constant(*n->input(0)) || !own_weight(*n, ctx)) continue;
    auto [it, added] = index.try_emplace(n->input(0), groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(n);
  }
  return groups;
}

/// [W_0 | W_1 | ...] of the group's [K, N_i] weights.
ir::tensor concatenated(const std::vector<ir::node*>& group, const pass_context& ctx, std::vector<std::int64_t>& widths,
                        const std::string& name) {
  const std::int64_t k = own_weight(*group[0], ctx)->dims[0];
  std::vector<std::vector<double>> parts;
  std::int64_t total = 0;
  for (const ir::node* n : group) {
    parts.push_back(*ir::constant_floats(n->input(1), ctx.ir_version()));
    widths.push_back(own_weight(*n, ctx)->dims[1]);
    total += widths.back();
  }
  std::vector<float> values(static_cast<std::size_t>(k * total));
  std::int64_t offset = 0;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    for (std::int64_t r = 0; r < k; ++r) {
      for (std::int64_t c = 0; c < widths[p]; ++c) {
        values[static_cast<std::size_t>(r * total + offset + c)] = static_cast<float>(parts[p][static_cast<std::size_t>(r * widths[p] + c)]);
      }
    }
    offset += widths[p];
  }
  return ir::tensor::from_values<float>(name, {k, total}, values);
}

void merge(ir::graph& g, const std::vector<ir::node*>& group, const pass_context& ctx) {
  ir::node* first = group[0];
  std::vector<std::int64_t> widths;
  const std::string base = first->name().empty() ? first->output(0)->name() : first->name();
  const std::string weight_name = g.unique_name(base + "_merged_weight");
  ir::value* w = g.add_initializer(weight_name, concatenated(group, ctx, widths, weight_name));
  const std::string sizes_name = g.unique_name(base + "_split_sizes");
  ir::value* sizes = g.add_initializer(sizes_name, ir::tensor::from_values<std::int64_t>(sizes_name, {static_cast<std::int64_t>(widths.size())}, widths));
  ir::node* product = g.add_node(ir::node_spec{"MatMul", {first->input(0), w}, {g.unique_name(base + "_merged")}, {}, base + "_merged", {}}, first);
  std::vector<std::string> outputs;
  for (std::size_t i = 0; i < group.size(); ++i) outputs.push_back(g.unique_name(group[i]->output(0)->name() + "_split"));
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_int("axis", -1));
  ir::node* split = g.add_node(ir::node_spec{"Split", {product->output(0), sizes}, outputs, std::move(attrs), base + "_split", {}}, first);
  for (std::size_t i = 0; i < group.size(); ++i) {
    ir::value* old_out = group[i]->output(0);
    ir::value* weight = group[i]->input(1);
    const std::string name = old_out->name();
    split->output(i)->set_type(old_out->type());
    g.replace_all_uses(old_out, split->output(i));
    g.erase(group[i]);
    g.rename(split->output(i), name);
    if (!weight->has_uses() && weight->is_initializer() && !weight->is_graph_input()) g.erase_value(weight);
  }
}

}  // namespace

bool merge_parallel_matmuls::run(ir::graph& g, pass_context& ctx) {
  if (ctx.onnx_opset() < 13) return false;
  std::int64_t merged = 0;
  for (const std::vector<ir::node*>& group : candidates(g, ctx)) {
    // A valid model gives every reader of one activation the same K; a malformed one is left.
    const std::int64_t k = own_weight(*group[0], ctx)->dims[0];
    const bool one_k = std::all_of(group.begin(), group.end(), [&](const ir::node* n) { return own_weight(*n, ctx)->dims[0] == k; });
    if (group.size() < 2 || !one_k) continue;
    merge(g, group, ctx);
    ctx.count("matmuls-merged", static_cast<std::int64_t>(group.size()));
    ++merged;
  }
  ctx.rewrote(merged);
  return merged > 0;
}

}  // namespace inferopt
