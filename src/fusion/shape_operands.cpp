#include "inferopt/fusion/detail/shape_operands.hpp"

#include <algorithm>

#include "inferopt/fusion/detail/constant_tensor.hpp"
#include "inferopt/pass/detail/bypass.hpp"

namespace inferopt::detail {

std::optional<std::vector<std::int64_t>> static_dims(const ir::value* v) {
  if (!v || !v->type() || !v->type()->is_tensor || !v->type()->has_static_shape()) return std::nullopt;
  std::vector<std::int64_t> out;
  for (const ir::dim& d : *v->type()->dims) out.push_back(d.value());
  return out;
}

std::optional<std::size_t> known_rank(const ir::value* v) {
  if (!v || !v->type() || !v->type()->is_tensor || !v->type()->dims) return std::nullopt;
  return v->type()->dims->size();
}

std::optional<int_list> int_list_operand(const pass_context& ctx, const ir::node& n, std::string_view attribute,
                                         std::size_t input, bool from_attribute) {
  if (from_attribute) {
    const ir::attribute* a = n.find_attribute(attribute);
    if (!a) return int_list{};
    if (a->kind != ir::attribute_kind::ints) return std::nullopt;
    return int_list{true, a->ints};
  }
  const ir::value* v = n.input(input);
  if (!v) return int_list{};
  std::optional<std::vector<std::int64_t>> values = constant_ints(ctx, v);
  if (!values) return std::nullopt;
  return int_list{true, std::move(*values)};
}

std::optional<std::vector<std::int64_t>> normalized_axes(std::vector<std::int64_t> axes, std::int64_t rank) {
  for (std::int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

bool can_forward_past(const ir::graph& g, const ir::node* n, const ir::value* in) {
  const ir::value* out = n->output(0);
  return out && (!out->is_graph_output() || can_take_output_name(g, in, out));
}

void forward_past(ir::graph& g, ir::node* n, ir::value* in) {
  // bypass forwards an input slot; pointing slot 0 at `in` first lets it do the rest (types,
  // value_info, the output name) exactly as for an Identity.
  g.set_input(n, 0, in);
  const bypass_result r = bypass(g, n, 0, 0);
  expects(r == bypass_result::removed, "forward_past: the caller did not check can_forward_past");
}

}  // namespace inferopt::detail
