#include "inferopt/fusion/fuse_attention.hpp"

#include <optional>
#include <vector>

#include "attention_match.hpp"
#include "fused_activation.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt {
namespace {

using fusion::detail::attention_match;
using fusion::detail::decline;
using fusion::detail::dims_of;
using fusion::detail::is_node;
using fusion::detail::same_dim;
using fusion::detail::token_layout;

/// The batch-first core and `merge`, the head-merging Reshape that becomes the fused output.
struct batch_first_match {
  attention_match core;
  ir::node* merge = nullptr;
};

/// From the V product to the merged heads: an optional no-op Reshape (ts), Transpose
/// (0,2,1,3) and the Reshape to [B,S,N*h].
decline read_merge(batch_first_match& bm) {
  attention_match& m = bm.core;
  ir::value* heads = m.heads_out;
  ir::node* next = fusion::detail::only_reader(heads, m);
  if (is_node(next, "Reshape", 2) && dims_of(heads) && dims_of(next->output(0)) &&
      *dims_of(heads) == *dims_of(next->output(0))) {  // ts: a Reshape that changes nothing
    m.replaced.push_back(next);
    heads = next->output(0);
    next = fusion::detail::only_reader(heads, m);
  }
  if (!fusion::detail::has_perm(next, {0, 2, 1, 3})) return "declined-pattern";
  m.replaced.push_back(next);
  ir::node* merge = ir::sole_user(next->output(0));
  const ir::shape* q = dims_of(m.q);
  const ir::shape* out = merge ? dims_of(merge->output(0)) : nullptr;
  if (!is_node(merge, "Reshape", 2) || !out || out->size() != 3 || !same_dim((*out)[0], (*q)[0]) ||
      !same_dim((*out)[1], (*q)[1]) || !(*out)[2].is_static() || !dims_of(m.v) || !((*dims_of(m.v))[2] == (*out)[2])) {
    return "declined-head-merge";
  }
  bm.merge = merge;
  return nullptr;
}

match_result<batch_first_match> find_match(const pass_context& ctx, ir::node& softmax) {
  using result = match_result<batch_first_match>;
  if (!is_node(&softmax, "Softmax", 1)) return {};
  const ir::shape* s = dims_of(softmax.input(0));
  if (!s || s->size() != 4) return {};
  const std::int64_t axis = softmax.attr_int("axis", ctx.onnx_opset() >= 13 ? -1 : 1);
  if (axis != -1 && axis != 3) return result::declined("declined-axis");
  batch_first_match bm;
  attention_match& m = bm.core;
  if (decline why = fusion::detail::read_attention_core(ctx, softmax, token_layout::batch_first, m)) {
    return result::declined(why);
  }
  if (decline why = read_merge(bm)) return result::declined(why);
  if (decline why = fusion::detail::check_operands(m, token_layout::batch_first)) return result::declined(why);
  if (!fusion::detail::absorb_shape_readers(m, bm.merge)) return result::declined("declined-shape-reader");
  if (!fusion::detail::microsoft_opset_usable(ctx)) return result::declined("declined-opset");
  return bm;
}

void apply_match(ir::graph& g, pass_context& ctx, const batch_first_match& bm) {
  const attention_match& m = bm.core;
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_int("num_heads", m.heads));
  attrs.push_back(ir::attribute::make_float("scale", static_cast<float>(m.scale)));
  std::vector<ir::value*> inputs{m.q, m.k, m.v};
  if (m.mask) inputs.insert(inputs.end(), {nullptr, nullptr, m.mask});
  ir::node* merge = bm.merge;
  const std::optional<ir::value_type> type = merge->output(0)->type();
  if (m.guard_zero) {  // O = Where(IsNaN(attention), 0, attention)
    ir::node* mha = g.add_node(ir::node_spec{"MultiHeadAttention", inputs, {""}, std::move(attrs), merge->name() + "_attention",
                                             fusion::detail::microsoft_domain},
                               merge);
    mha->output(0)->set_type(type);
    ir::node* isnan = g.add_node(ir::node_spec{"IsNaN", {mha->output(0)}, {""}, {}, merge->name() + "_isnan", {}}, merge);
    g.set_input(merge, 0, isnan->output(0));
    g.set_input(merge, 1, m.guard_zero);
    g.add_node_input(merge, mha->output(0));
    merge->set_op_type("Where");
    merge->attributes().clear();
  } else {
    for (std::size_t i = 0; i < inputs.size(); ++i) g.set_input(merge, i, inputs[i]);
    merge->set_op_type("MultiHeadAttention");
    merge->set_domain(fusion::detail::microsoft_domain);
    merge->attributes() = std::move(attrs);
  }
  fusion::detail::erase_replaced(g, m.replaced);
  ctx.require_opset(fusion::detail::microsoft_domain, fusion::detail::microsoft_opset);
}

class attention_pattern final : public pattern<batch_first_match> {
 public:
  attention_pattern() : pattern("fuse-attention", pattern_root{{"Softmax"}}, 1, {"attention-fused"}) {}

  match_result<batch_first_match> match(const ir::graph&, ir::node& root, const pass_context& ctx) const override {
    return find_match(ctx, root);
  }

  std::int64_t rewrite(ir::graph& g, const batch_first_match& m, pass_context& ctx) const override {
    apply_match(g, ctx, m);
    ctx.count("attention-fused");
    return 1;
  }
};

}  // namespace

// The sequence-first pattern goes first: it stays silent on cores it does not recognise,
// while the batch-first one names its decline for every core it cannot fuse.
fuse_attention::fuse_attention() : pattern_pass([] {
  std::vector<std::unique_ptr<rewrite_pattern>> patterns;
  patterns.push_back(fusion::detail::make_seq_first_attention_pattern());
  patterns.push_back(std::make_unique<attention_pattern>());
  return patterns;
}()) {}

}  // namespace inferopt
