// nn.MultiheadAttention as torch exports it inside ViT (sequence-first, one packed input
// projection): the whole block, from the Transpose into [S,B,D] to the Transpose back to
// [B,S,D], becomes com.microsoft Attention (the packed projection and the core) and a MatMul
// (+ Add) for the output projection. fuse_attention.hpp gives the before and after.

#include <cmath>
#include <optional>
#include <vector>

#include "attention_match.hpp"
#include "fused_activation.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt::fusion::detail {
namespace {

/// The block around a sequence-first core: the packed projection P = Transpose(x) W_in (+ b_in)
/// it splits q, k and v from, and the output projection Gemm(., W_out, b_out) it ends in.
struct seq_first_match {
  attention_match core;
  ir::value* x = nullptr;      ///< [B,S,D], before the Transpose into sequence-first
  ir::value* w_in = nullptr;   ///< [D, 3D]
  ir::value* b_in = nullptr;   ///< [3D]; null when the projection has none
  ir::value* w_out = nullptr;  ///< the Gemm's B
  bool w_out_transposed = false;
  ir::value* b_out = nullptr;  ///< the Gemm's C; null when none
  ir::node* last = nullptr;    ///< the Transpose back to [B,S,D]: becomes the projection's last node
};

bool is_float_constant(const pass_context& ctx, const ir::value* v, const std::vector<std::int64_t>& dims) {
  const ir::tensor* t = ir::constant_tensor(v, ctx.ir_version());
  return t && t->dtype == ir::data_type::float32 && t->dims == dims;
}

std::optional<std::int64_t> constant_scalar(const pass_context& ctx, const ir::value* v) {
  const auto c = ir::constant_ints(v, ctx.ir_version());
  if (!c || c->size() != 1) return std::nullopt;
  return (*c)[0];
}

/// q, k, v = Gather(S, 0 | 1 | 2, axis 0) of one S read by nothing else: S, else null.
ir::value* packed_heads_source(const pass_context& ctx, attention_match& m) {
  ir::value* s = nullptr;
  const ir::value* parts[] = {m.q, m.k, m.v};
  for (std::int64_t i = 0; i < 3; ++i) {
    ir::node* gather = parts[i]->producer();
    if (!is_node(gather, "Gather", 2) || gather->attr_int("axis", 0) != 0 || constant_scalar(ctx, gather->input(1)) != i ||
        !only_reader(parts[i], m) || (s && gather->input(0) != s)) {
      return nullptr;
    }
    s = gather->input(0);
    m.replaced.push_back(gather);
  }
  if (s->is_graph_output() || s->uses().size() != 3) return nullptr;
  return s;
}

/// S [3,S,B,D] = Squeeze(Transpose(Reshape(P [S,B,3D], [1,S,B,3,D]), 3,1,2,0,4), axis 3): P.
ir::value* packed_projection(const pass_context& ctx, ir::value* s, attention_match& m) {
  ir::node* squeeze = s->producer();
  if (!squeeze || !squeeze->is("Squeeze") || squeeze->outputs().size() != 1) return nullptr;
  const auto axes = squeeze->inputs().size() == 2 ? ir::constant_ints(squeeze->input(1), ctx.ir_version())
                                                  : std::optional(squeeze->attr_ints("axes", {}));
  if (!axes || axes->size() != 1 || ((*axes)[0] != 3 && (*axes)[0] != -2)) return nullptr;
  ir::node* t = private_producer(squeeze->input(0), squeeze, m);
  if (!has_perm(t, {3, 1, 2, 0, 4})) return nullptr;
  ir::node* r = private_producer(t->input(0), t, m);
  if (!is_node(r, "Reshape", 2)) return nullptr;
  const ir::shape* p = dims_of(r->input(0));
  const ir::shape* five = dims_of(r->output(0));
  if (!p || !five || p->size() != 3 || five->size() != 5 || (*five)[0] != ir::dim{1} || !same_dim((*five)[1], (*p)[0]) ||
      !same_dim((*five)[2], (*p)[1]) || (*five)[3] != ir::dim{3} || !(*five)[4].is_static() ||
      !((*p)[2] == ir::dim{3 * (*five)[4].value()})) {
    return nullptr;
  }
  m.replaced.insert(m.replaced.end(), {squeeze, t, r});
  return r->input(0);
}

/// P = Transpose(x, 1,0,2) W_in (+ b_in, either side), the weights constant: fills x and the weights.
decline read_input_projection(const pass_context& ctx, ir::value* p, seq_first_match& sm) {
  attention_match& m = sm.core;
  ir::node* reshape = ir::sole_user(p);
  ir::node* producer = private_producer(p, reshape, m);
  const std::int64_t d = dims_of(m.q)->back().value();
  if (is_node(producer, "Add", 2)) {
    for (std::size_t i = 0; i < 2 && !sm.b_in; ++i) {
      if (is_float_constant(ctx, producer->input(1 - i), {3 * d})) {
        sm.b_in = producer->input(1 - i);
        m.replaced.push_back(producer);
        producer = private_producer(producer->input(i), producer, m);
      }
    }
  }
  if (!is_node(producer, "MatMul", 2) || !is_float_constant(ctx, producer->input(1), {d, 3 * d})) {
    return "declined-projection";
  }
  ir::node* t = private_producer(producer->input(0), producer, m);
  if (!has_perm(t, {1, 0, 2})) return "declined-projection";
  m.replaced.insert(m.replaced.end(), {producer, t});
  sm.w_in = producer->input(1);
  sm.x = t->input(0);
  return nullptr;
}

/// heads_out [B,N,S,h] -> Transpose(2,0,1,3) -> Reshape [S*B, D] -> Gemm(W_out, b_out) ->
/// Reshape [S,B,D] -> Transpose(1,0,2): fills the output weights and `last`.
decline read_output_projection(const pass_context& ctx, seq_first_match& sm) {
  attention_match& m = sm.core;
  const std::int64_t d = dims_of(m.q)->back().value();
  ir::node* t = only_reader(m.heads_out, m);
  if (!has_perm(t, {2, 0, 1, 3})) return "declined-head-merge";
  ir::node* merge = ir::sole_user(t->output(0));
  const ir::shape* rows = merge ? dims_of(merge->output(0)) : nullptr;
  if (!is_node(merge, "Reshape", 2) || !rows || rows->size() != 2 || (*rows)[1] != ir::dim{d}) return "declined-head-merge";
  ir::node* gemm = ir::sole_user(merge->output(0));
  if (!gemm || !gemm->is("Gemm") || gemm->outputs().size() != 1 || gemm->input(0) != merge->output(0) ||
      gemm->attr_int("transA", 0) != 0 || gemm->attr_float("alpha", 1.0f) != 1.0f ||
      !is_float_constant(ctx, gemm->input(1), {d, d})) {
    return "declined-out-projection";
  }
  if (gemm->inputs().size() == 3 && gemm->input(2)) {
    if (gemm->attr_float("beta", 1.0f) != 1.0f ||
        !(is_float_constant(ctx, gemm->input(2), {d}) || is_float_constant(ctx, gemm->input(2), {1, d}))) {
      return "declined-out-projection";
    }
    sm.b_out = gemm->input(2);
  }
  ir::node* unflat = ir::sole_user(gemm->output(0));
  ir::node* back = unflat ? ir::sole_user(unflat->output(0)) : nullptr;
  const ir::shape* q = dims_of(m.q);
  const ir::shape* tokens = unflat ? dims_of(unflat->output(0)) : nullptr;
  if (!is_node(unflat, "Reshape", 2) || !tokens || *tokens != *q || !has_perm(back, {1, 0, 2}) ||
      gemm->output(0)->is_graph_output() || unflat->output(0)->is_graph_output()) {
    return "declined-out-projection";
  }
  sm.w_out = gemm->input(1);
  sm.w_out_transposed = gemm->attr_int("transB", 0) != 0;
  sm.last = back;
  m.replaced.insert(m.replaced.end(), {t, merge, gemm, unflat});
  return nullptr;
}

match_result<seq_first_match> find_match(const pass_context& ctx, ir::node& softmax) {
  using result = match_result<seq_first_match>;
  const ir::shape* s = dims_of(softmax.input(0));
  if (!is_node(&softmax, "Softmax", 1) || !s || s->size() != 4) return {};
  const std::int64_t axis = softmax.attr_int("axis", ctx.onnx_opset() >= 13 ? -1 : 1);
  if (axis != -1 && axis != 3) return {};  // the batch-first pattern names the decline
  seq_first_match sm;
  attention_match& m = sm.core;
  // A core that is not sequence-first is the batch-first pattern's to fuse or decline.
  if (read_attention_core(ctx, softmax, token_layout::seq_first, m)) return {};
  ir::value* packed = packed_heads_source(ctx, m);
  ir::value* p = packed ? packed_projection(ctx, packed, m) : nullptr;
  if (!p) return result::declined("declined-projection");
  if (decline why = read_input_projection(ctx, p, sm)) return result::declined(why);
  if (decline why = read_output_projection(ctx, sm)) return result::declined(why);
  if (decline why = check_operands(m, token_layout::seq_first)) return result::declined(why);
  if (!absorb_shape_readers(m, nullptr)) return result::declined("declined-shape-reader");
  if (!microsoft_opset_usable(ctx)) return result::declined("declined-opset");
  return sm;
}

/// W [D,D] as a new initializer holding W^T.
ir::value* transposed_weights(ir::graph& g, const pass_context& ctx, const ir::value* w) {
  const ir::tensor& t = *ir::constant_tensor(w, ctx.ir_version());
  const std::vector<float> values = t.values<float>();
  const std::int64_t rows = t.dims[0], cols = t.dims[1];
  std::vector<float> out(values.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) out[static_cast<std::size_t>(c * rows + r)] = values[static_cast<std::size_t>(r * cols + c)];
  }
  std::string name = g.unique_name(w->name() + "_transposed");
  return g.add_initializer(name, ir::tensor::from_values<float>(name, {cols, rows}, out));
}

void apply_match(ir::graph& g, pass_context& ctx, const seq_first_match& sm) {
  const attention_match& m = sm.core;
  const std::int64_t d = dims_of(m.q)->back().value();
  ir::value* b_in = sm.b_in;
  if (!b_in) {  // Attention's CPU kernel in onnxruntime wants the bias
    std::string name = g.unique_name(sm.w_in->name() + "_bias");
    b_in = g.add_initializer(name, ir::tensor::from_values<float>(name, {3 * d}, std::vector<float>(3 * d, 0.0f)));
  }
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_int("num_heads", m.heads));
  attrs.push_back(ir::attribute::make_float("scale", static_cast<float>(m.scale)));
  std::vector<ir::value*> inputs{sm.x, sm.w_in, b_in};
  ir::node* last = sm.last;
  if (m.mask) inputs.insert(inputs.end(), {nullptr, nullptr, microsoft_mask(g, m, last)});
  const std::optional<ir::value_type> type = last->output(0)->type();
  ir::node* attention =
      g.add_node(ir::node_spec{"Attention", inputs, {""}, std::move(attrs), last->name() + "_attention", microsoft_domain}, last);
  attention->output(0)->set_type(type);
  ir::value* heads = attention->output(0);
  if (m.guard_zero) {  // Where(IsNaN(attention), 0, attention), before the projection as before
    ir::node* isnan = g.add_node(ir::node_spec{"IsNaN", {heads}, {""}, {}, last->name() + "_isnan", {}}, last);
    ir::node* where = g.add_node(ir::node_spec{"Where", {isnan->output(0), m.guard_zero, heads}, {""}, {}, last->name() + "_guard", {}}, last);
    where->output(0)->set_type(type);
    heads = where->output(0);
  }
  ir::value* w_out = sm.w_out_transposed ? transposed_weights(g, ctx, sm.w_out) : sm.w_out;
  ir::node* product = last;
  if (sm.b_out) {
    product = g.add_node(ir::node_spec{"MatMul", {heads, w_out}, {""}, {}, last->name() + "_projection", {}}, last);
    product->output(0)->set_type(type);
    g.set_input(last, 0, product->output(0));
    g.add_node_input(last, sm.b_out);
    last->set_op_type("Add");
  } else {
    g.set_input(last, 0, heads);
    g.add_node_input(last, w_out);
    last->set_op_type("MatMul");
  }
  last->attributes().clear();
  erase_replaced(g, m.replaced);
  ctx.require_opset(microsoft_domain, microsoft_opset);
}

class seq_first_attention_pattern final : public pattern<seq_first_match> {
 public:
  explicit seq_first_attention_pattern(std::shared_ptr<const attention_fusion_options> options)
      : pattern("fuse-attention", pattern_root{{"Softmax"}}, 1, {"attention-fused"}), options_(std::move(options)) {}

  match_result<seq_first_match> match(const ir::graph&, ir::node& root, const pass_context& ctx) const override {
    if (options_->standard) return {};
    return find_match(ctx, root);
  }

  std::int64_t rewrite(ir::graph& g, const seq_first_match& m, pass_context& ctx) const override {
    apply_match(g, ctx, m);
    ctx.count("attention-fused");
    return 1;
  }

 private:
  std::shared_ptr<const attention_fusion_options> options_;
};

}  // namespace

std::unique_ptr<rewrite_pattern> make_seq_first_attention_pattern(std::shared_ptr<const attention_fusion_options> options) {
  return std::make_unique<seq_first_attention_pattern>(std::move(options));
}

}  // namespace inferopt::fusion::detail
