#include "inferopt/fusion/fuse_attention.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "attention_match.hpp"
#include "fused_activation.hpp"
#include "two_way_option.hpp"
#include "inferopt/ir/constants.hpp"
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
/// `bias_adds` are the projections' bias Adds MultiHeadAttention takes in (input 3, the three
/// biases side by side); null where a projection has none (its part of the bias is zeros).
struct batch_first_match {
  attention_match core;
  ir::node* merge = nullptr;
  std::array<ir::node*, 3> bias_adds{};
  /// Set when Q, K and V are MatMul(x, W) of one x with constant weights: the fused op is
  /// then Attention, which computes the three in one product of x with the weights side by side.
  ir::value* packed_x = nullptr;
  std::array<ir::node*, 3> products{};
};

/// `v` = Add(MatMul(..), b) or Add(b, MatMul(..)) with b a float32 constant [D], read only by
/// the pattern: the Add (its other input is the product), else null.
ir::node* projection_bias_add(const pass_context& ctx, const ir::value* v, std::int64_t d) {
  ir::node* add = v->producer();
  if (v->uses().size() != 1 || v->is_graph_output() || !is_node(add, "Add", 2)) return nullptr;
  for (std::size_t i = 0; i < 2; ++i) {
    const ir::tensor* b = ir::constant_tensor(add->input(1 - i), ctx.ir_version());
    const ir::node* product = add->input(i)->producer();
    if (b && b->dtype == ir::data_type::float32 && b->dims == std::vector<std::int64_t>{d} && product &&
        product->is("MatMul") && ir::sole_user(add->input(i)) == add && dims_of(add->input(i)) &&
        *dims_of(add->input(i)) == *dims_of(v)) {
      return add;
    }
  }
  return nullptr;
}

/// The product an Add found by projection_bias_add adds its bias to, and the bias.
std::pair<ir::value*, ir::value*> product_and_bias(const pass_context& ctx, const ir::node* add) {
  const bool bias_second = ir::constant_tensor(add->input(1), ctx.ir_version()) != nullptr;
  return bias_second ? std::pair{add->input(0), add->input(1)} : std::pair{add->input(1), add->input(0)};
}

/// The projection biases MultiHeadAttention can take in: all three values distinct, each its
/// Add or none (condition 6 of the header).
void find_projection_biases(const pass_context& ctx, batch_first_match& bm) {
  const attention_match& m = bm.core;
  if (m.q == m.k || m.k == m.v || m.q == m.v || m.k->type()->dims->back() != m.v->type()->dims->back()) return;
  const std::int64_t d = dims_of(m.q)->back().value();
  const ir::value* parts[] = {m.q, m.k, m.v};
  for (std::size_t i = 0; i < 3; ++i) bm.bias_adds[i] = projection_bias_add(ctx, parts[i], d);
}

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

/// The product a projection adds its bias to, or the projection itself when it has none.
ir::value* projection_product(const pass_context& ctx, const batch_first_match& bm, std::size_t i) {
  const ir::value* parts[] = {bm.core.q, bm.core.k, bm.core.v};
  return bm.bias_adds[i] ? product_and_bias(ctx, bm.bias_adds[i]).first : const_cast<ir::value*>(parts[i]);
}

/// Whether Q, K and V are MatMul(x, W_i) of one x [B,S,Din] with constant float32 weights
/// [Din, D_i], each product read only by its bias Add or the head split: fills packed_x.
void find_packed_projection(const pass_context& ctx, batch_first_match& bm) {
  ir::value* x = nullptr;
  std::array<ir::node*, 3> products{};
  for (std::size_t i = 0; i < 3; ++i) {
    const ir::value* p = projection_product(ctx, bm, i);
    ir::node* matmul = p->producer();
    if (p->uses().size() != 1 || p->is_graph_output() || !is_node(matmul, "MatMul", 2) || (x && matmul->input(0) != x)) return;
    const ir::tensor* w = ir::constant_tensor(matmul->input(1), ctx.ir_version());
    if (!w || w->dtype != ir::data_type::float32 || w->dims.size() != 2) return;
    x = matmul->input(0);
    products[i] = matmul;
  }
  if (!dims_of(x) || dims_of(x)->size() != 3 || x->elem_type() != ir::data_type::float32) return;
  bm.packed_x = x;
  bm.products = products;
}

/// Attention's inputs: x, the weights and biases side by side (zeros for a projection without
/// one), the mask as attention_bias; and its qkv_hidden_sizes when V's width differs.
std::vector<ir::value*> packed_inputs(ir::graph& g, const pass_context& ctx, const batch_first_match& bm,
                                      std::vector<std::int64_t>& sizes) {
  std::vector<std::vector<float>> weights;
  std::vector<float> biases;
  std::int64_t rows = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const ir::tensor& w = *ir::constant_tensor(bm.products[i]->input(1), ctx.ir_version());
    rows = w.dims[0];
    sizes.push_back(w.dims[1]);
    weights.push_back(w.values<float>());
    if (bm.bias_adds[i]) {
      const std::vector<float> b = ir::constant_tensor(product_and_bias(ctx, bm.bias_adds[i]).second, ctx.ir_version())->values<float>();
      biases.insert(biases.end(), b.begin(), b.end());
    } else {
      biases.insert(biases.end(), static_cast<std::size_t>(w.dims[1]), 0.0f);
    }
  }
  std::vector<float> packed;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < 3; ++i) {
      const auto row = weights[i].begin() + r * sizes[i];
      packed.insert(packed.end(), row, row + sizes[i]);
    }
  }
  const std::int64_t width = sizes[0] + sizes[1] + sizes[2];
  std::string w_name = g.unique_name(bm.merge->name() + "_qkv_weights");
  std::string b_name = g.unique_name(bm.merge->name() + "_qkv_bias");
  std::vector<ir::value*> inputs{bm.packed_x, g.add_initializer(w_name, ir::tensor::from_values<float>(w_name, {rows, width}, packed)),
                                 g.add_initializer(b_name, ir::tensor::from_values<float>(b_name, {width}, biases))};
  if (bm.core.mask) inputs.insert(inputs.end(), {nullptr, nullptr, fusion::detail::microsoft_mask(g, bm.core, bm.merge)});
  return inputs;
}

match_result<batch_first_match> find_match(const pass_context& ctx, const attention_fusion_options& options, ir::node& softmax) {
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
  if (options.standard) {  // condition 5: Attention-23 takes no biases nor packed weights
    if (ctx.onnx_opset() < 23) return result::declined("declined-opset");
    return bm;
  }
  if (!fusion::detail::microsoft_opset_usable(ctx)) return result::declined("declined-opset");
  find_projection_biases(ctx, bm);
  find_packed_projection(ctx, bm);
  return bm;
}

/// MultiHeadAttention's inputs: query, key, value (the products, when their biases go in),
/// the packed bias, the mask.
std::vector<ir::value*> fused_inputs(ir::graph& g, const pass_context& ctx, const batch_first_match& bm) {
  const attention_match& m = bm.core;
  std::vector<ir::value*> inputs{m.q, m.k, m.v};
  ir::value* packed = nullptr;
  if (std::any_of(bm.bias_adds.begin(), bm.bias_adds.end(), [](const ir::node* a) { return a != nullptr; })) {
    std::vector<float> values;
    for (std::size_t i = 0; i < 3; ++i) {
      const std::int64_t d = dims_of(inputs[i])->back().value();
      if (!bm.bias_adds[i]) {
        values.insert(values.end(), static_cast<std::size_t>(d), 0.0f);
        continue;
      }
      auto [product, bias] = product_and_bias(ctx, bm.bias_adds[i]);
      const std::vector<float> b = ir::constant_tensor(bias, ctx.ir_version())->values<float>();
      values.insert(values.end(), b.begin(), b.end());
      inputs[i] = product;
    }
    std::string name = g.unique_name(bm.merge->name() + "_qkv_bias");
    packed = g.add_initializer(name, ir::tensor::from_values<float>(name, {static_cast<std::int64_t>(values.size())}, values));
  }
  if (packed || m.mask) inputs.push_back(packed);
  if (m.mask) inputs.insert(inputs.end(), {nullptr, fusion::detail::microsoft_mask(g, m, bm.merge)});
  return inputs;
}

void apply_match(ir::graph& g, pass_context& ctx, const attention_fusion_options& options, const batch_first_match& bm) {
  const attention_match& m = bm.core;
  std::vector<ir::attribute> attrs;
  std::vector<ir::value*> inputs;
  if (options.standard) {
    attrs.push_back(ir::attribute::make_int("q_num_heads", m.heads));
    attrs.push_back(ir::attribute::make_int("kv_num_heads", m.heads));
    inputs = {m.q, m.k, m.v};
    if (m.mask) inputs.push_back(m.mask);
  } else {
    attrs.push_back(ir::attribute::make_int("num_heads", m.heads));
    std::vector<std::int64_t> sizes;
    inputs = bm.packed_x ? packed_inputs(g, ctx, bm, sizes) : fused_inputs(g, ctx, bm);
    if (bm.packed_x && sizes[2] != sizes[0]) attrs.push_back(ir::attribute::make_ints("qkv_hidden_sizes", sizes));
  }
  attrs.push_back(ir::attribute::make_float("scale", static_cast<float>(m.scale)));
  const char* op = options.standard || bm.packed_x ? "Attention" : "MultiHeadAttention";
  const std::string domain = options.standard ? "" : fusion::detail::microsoft_domain;
  ir::node* merge = bm.merge;
  const std::optional<ir::value_type> type = merge->output(0)->type();
  if (m.guard_zero) {  // O = Where(IsNaN(attention), 0, attention)
    ir::node* mha = g.add_node(ir::node_spec{op, inputs, {""}, std::move(attrs), merge->name() + "_attention", domain}, merge);
    mha->output(0)->set_type(type);
    ir::node* isnan = g.add_node(ir::node_spec{"IsNaN", {mha->output(0)}, {""}, {}, merge->name() + "_isnan", {}}, merge);
    g.set_input(merge, 0, isnan->output(0));
    g.set_input(merge, 1, m.guard_zero);
    g.add_node_input(merge, mha->output(0));
    merge->set_op_type("Where");
    merge->attributes().clear();
  } else {
    for (std::size_t i = 0; i < inputs.size(); ++i) g.set_input(merge, i, inputs[i]);
    merge->set_op_type(op);
    merge->set_domain(domain);
    merge->attributes() = std::move(attrs);
  }
  std::vector<ir::node*> replaced = m.replaced;
  for (ir::node* n : bm.bias_adds) {
    if (n) replaced.push_back(n);
  }
  for (ir::node* n : bm.products) {
    if (n) replaced.push_back(n);
  }
  fusion::detail::erase_replaced(g, replaced);
  if (!options.standard) ctx.require_opset(fusion::detail::microsoft_domain, fusion::detail::microsoft_opset);
}

class attention_pattern final : public pattern<batch_first_match> {
 public:
  explicit attention_pattern(std::shared_ptr<const attention_fusion_options> options)
      : pattern("fuse-attention", pattern_root{{"Softmax"}}, 1, {"attention-fused"}), options_(std::move(options)) {}

  match_result<batch_first_match> match(const ir::graph&, ir::node& root, const pass_context& ctx) const override {
    return find_match(ctx, *options_, root);
  }

  std::int64_t rewrite(ir::graph& g, const batch_first_match& m, pass_context& ctx) const override {
    apply_match(g, ctx, *options_, m);
    ctx.count("attention-fused");
    return 1;
  }

 private:
  std::shared_ptr<const attention_fusion_options> options_;
};

}  // namespace

// The sequence-first pattern goes first: it stays silent on cores it does not recognise,
// while the batch-first one names its decline for every core it cannot fuse.
fuse_attention::fuse_attention() : fuse_attention(std::make_shared<attention_fusion_options>()) {}

fuse_attention::fuse_attention(std::shared_ptr<attention_fusion_options> options)
    : pattern_pass([&] {
        std::vector<std::unique_ptr<rewrite_pattern>> patterns;
        patterns.push_back(fusion::detail::make_seq_first_attention_pattern(options));
        patterns.push_back(std::make_unique<attention_pattern>(options));
        return patterns;
      }()),
      options_(std::move(options)) {}

namespace {
constexpr fusion::detail::two_way_option fuse_attention_option{"domain", "com.microsoft", "ai.onnx"};
}  // namespace

void fuse_attention::set_option(std::string_view key, std::string_view value) {
  fuse_attention_option.set(name(), key, value, options_->standard);
}

std::map<std::string, std::string> fuse_attention::options() const { return fuse_attention_option.text(options_->standard); }

}  // namespace inferopt
