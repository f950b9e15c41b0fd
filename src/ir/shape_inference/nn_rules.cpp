// Convolutions, pools, normalizations and products.

#include "inference_context.hpp"

namespace inferopt::ir::shape_inference_detail {
namespace {

using namespace shape_rules;

/// Spatial attributes of a sliding-window op, defaulted for `spatial` axes.
struct window {
  std::vector<std::int64_t> kernel, strides, dilations, pads;
  std::string auto_pad;
  bool ceil_mode = false;
};

window read_window(const inference_context& ctx, std::size_t spatial, std::vector<std::int64_t> kernel) {
  const node& n = ctx.node();
  window w;
  w.kernel = n.attr_ints("kernel_shape", std::move(kernel));
  w.strides = n.attr_ints("strides", std::vector<std::int64_t>(spatial, 1));
  w.dilations = n.attr_ints("dilations", std::vector<std::int64_t>(spatial, 1));
  w.pads = n.attr_ints("pads", std::vector<std::int64_t>(2 * spatial, 0));
  w.auto_pad = n.attr_string("auto_pad", "NOTSET");
  w.ceil_mode = n.attr_int("ceil_mode", 0) != 0;
  if (w.kernel.size() != spatial || w.strides.size() != spatial || w.dilations.size() != spatial ||
      w.pads.size() != 2 * spatial) {
    ctx.fail("kernel_shape, strides, dilations and pads must cover " + std::to_string(spatial) + " spatial axes");
  }
  return w;
}

sym_dim windowed(const window& w, const sym_dim& in, std::size_t i) {
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") return same_padded_dim(in, w.strides[i]);
  if (w.auto_pad == "VALID") return window_output_dim(in, w.kernel[i], w.strides[i], w.dilations[i], 0, 0, w.ceil_mode);
  return window_output_dim(in, w.kernel[i], w.strides[i], w.dilations[i], w.pads[i], w.pads[i + w.kernel.size()], w.ceil_mode);
}

/// X and W of a convolution, with the window read against W's spatial dims (-1 where W's dim
/// is not a number); nullopt when either rank is unknown.
struct conv_operands {
  const sym_shape& x;
  const sym_shape& w;
  std::size_t spatial;
  window win;
};

std::optional<conv_operands> read_conv(const inference_context& ctx) {
  const sym_shape* x = ctx.dims(0);
  const sym_shape* wd = ctx.dims(1);
  if (!x || !wd) return std::nullopt;
  if (x->size() < 3 || wd->size() != x->size()) ctx.fail("input and weights must have the same rank, at least 3");
  const std::size_t spatial = x->size() - 2;
  std::vector<std::int64_t> kernel;
  for (std::size_t i = 0; i < spatial; ++i) kernel.push_back((*wd)[i + 2].constant().value_or(-1));
  return conv_operands{*x, *wd, spatial, read_window(ctx, spatial, kernel)};
}

/// Conv and FusedConv: [N, M, spatial...] from X [N, C, spatial...] and W [M, C/group, k...].
void conv(inference_context& ctx) {
  const auto c = read_conv(ctx);
  if (!c) return ctx.set_output_like(0, 0, std::nullopt);
  const std::int64_t group = ctx.node().attr_int("group", 1);
  if (group <= 0) ctx.fail("group must be positive");
  expect_same(c->x[1], c->w[1] * sym_dim(group), "input channels and weights times group differ");
  if (const sym_shape* bias = ctx.input_count() > 2 ? ctx.dims(2) : nullptr) {
    if (bias->size() != 1) ctx.fail("bias must be a vector, not of rank " + std::to_string(bias->size()));
    expect_same((*bias)[0], c->w[0], "bias entries and output channels differ");
  }
  sym_shape out{c->x[0], c->w[0]};
  for (std::size_t i = 0; i < c->spatial; ++i) out.push_back(c->win.kernel[i] < 0 ? sym_dim{} : windowed(c->win, c->x[i + 2], i));
  ctx.set_output_like(0, 0, std::move(out));
}

void conv_transpose(inference_context& ctx) {
  const auto c = read_conv(ctx);
  if (!c) return ctx.set_output_like(0, 0, std::nullopt);
  const sym_shape* x = &c->x;
  const sym_shape* wd = &c->w;
  const std::size_t spatial = c->spatial;
  const window& w = c->win;
  const std::int64_t group = ctx.node().attr_int("group", 1);
  const auto output_shape = ctx.node().attr_ints("output_shape", {});
  const auto output_padding = ctx.node().attr_ints("output_padding", std::vector<std::int64_t>(spatial, 0));
  sym_shape out{(*x)[0], (*wd)[1] * sym_dim(group)};
  for (std::size_t i = 0; i < spatial; ++i) {
    if (output_shape.size() == spatial) out.push_back(output_shape[i]);
    else if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") out.push_back((*x)[i + 2] * sym_dim(w.strides[i]));
    else if (w.kernel[i] < 0) out.emplace_back();
    else out.push_back(transposed_window_output_dim((*x)[i + 2], w.kernel[i], w.strides[i], w.dilations[i], w.pads[i],
                                                    w.pads[i + spatial], i < output_padding.size() ? output_padding[i] : 0));
  }
  ctx.set_output_like(0, 0, std::move(out));
}

/// MaxPool, AveragePool, LpPool; MaxPool's optional Indices output is int64.
void pool(inference_context& ctx) {
  const sym_shape* x = ctx.dims(0);
  if (!x) return ctx.set_output_like(0, 0, std::nullopt);
  if (x->size() < 3) ctx.fail("input must have rank 3 or more");
  const std::size_t spatial = x->size() - 2;
  const window w = read_window(ctx, spatial, {});
  sym_shape out{(*x)[0], (*x)[1]};
  for (std::size_t i = 0; i < spatial; ++i) out.push_back(windowed(w, (*x)[i + 2], i));
  ctx.set_output_like(0, 0, out);
  ctx.set_output(1, value_facts::of(data_type::int64, std::move(out)));
}

void global_pool(inference_context& ctx) {
  const sym_shape* x = ctx.dims(0);
  if (!x) return ctx.set_output_like(0, 0, std::nullopt);
  if (x->size() < 3) ctx.fail("input must have rank 3 or more");
  sym_shape out{(*x)[0], (*x)[1]};
  out.resize(x->size(), sym_dim(1));
  ctx.set_output_like(0, 0, std::move(out));
}

/// BatchNormalization: Y like X; training outputs (running mean/var) like the scale. Scale,
/// bias, mean and variance are vectors of X's channels.
void batch_norm(inference_context& ctx) {
  const sym_shape* x = ctx.dims(0);
  for (std::size_t i = 1; i < std::min<std::size_t>(ctx.input_count(), 5); ++i) {
    const sym_shape* p = ctx.dims(i);
    if (!p) continue;
    if (p->size() != 1) ctx.fail("input " + std::to_string(i) + " must be a vector, not of rank " + std::to_string(p->size()));
    if (x && x->size() >= 2 && (*x)[1].constant() && (*p)[0].constant() && *(*x)[1].constant() != *(*p)[0].constant()) {
      ctx.fail("input " + std::to_string(i) + " has " + std::to_string(*(*p)[0].constant()) + " entries for " +
               std::to_string(*(*x)[1].constant()) + " channels");
    }
  }
  same_as_input(ctx);
  for (std::size_t i = 1; i < ctx.output_count(); ++i) ctx.set_output(i, value_facts{ctx.input(1).elem, ctx.input(1).dims, std::nullopt});
}

/// LayerNormalization: Y like X; Mean and InvStdDev keep the dims before `axis`, 1 after.
void layer_norm(inference_context& ctx) {
  same_as_input(ctx);
  const sym_shape* x = ctx.dims(0);
  if (!x) return;
  const std::int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), static_cast<std::int64_t>(x->size()));
  sym_shape stats(x->begin(), x->begin() + axis);
  stats.resize(x->size(), sym_dim(1));
  const data_type stash = static_cast<data_type>(ctx.node().attr_int("stash_type", 1));
  for (std::size_t i = 1; i < 3; ++i) ctx.set_output(i, value_facts::of(stash, stats));
}

/// com.microsoft SkipLayerNormalization / SkipSimplifiedLayerNormalization: the output and the
/// sum (output 3) like the input; mean and inverse deviation (outputs 1, 2) float32 [B, S, 1].
void skip_layer_norm(inference_context& ctx) {
  same_as_input(ctx);
  ctx.set_output(3, ctx.input(0));
  const sym_shape* x = ctx.dims(0);
  if (!x || x->empty()) return;
  sym_shape stats(x->begin(), x->end() - 1);
  stats.push_back(sym_dim(1));
  for (std::size_t i = 1; i < 3; ++i) ctx.set_output(i, value_facts::of(data_type::float32, stats));
}

void matmul(inference_context& ctx) {
  const sym_shape* a = ctx.dims(0);
  const sym_shape* b = ctx.dims(1);
  ctx.set_output_like(0, 0, a && b ? std::optional(matmul_shape<sym_dim>(*a, *b)) : std::nullopt);
}

/// Gemm's C broadcasts one way to the product: at most its rank, each dim 1 or the product's.
void expect_broadcasts_to(const inference_context& ctx, const sym_shape& c, const sym_shape& out) {
  if (c.size() > out.size()) ctx.fail("C has rank " + std::to_string(c.size()) + ", more than the product's");
  for (std::size_t i = 0; i < c.size(); ++i) {
    const sym_dim& d = c[c.size() - 1 - i];
    const sym_dim& o = out[out.size() - 1 - i];
    if (d.constant() && o.constant() && *d.constant() != 1 && *d.constant() != *o.constant()) {
      ctx.fail("C of shape " + to_string(c) + " does not broadcast to the product's " + to_string(out));
    }
  }
}

void gemm(inference_context& ctx) {
  const sym_shape* a = ctx.dims(0);
  const sym_shape* b = ctx.dims(1);
  const node& n = ctx.node();
  const bool trans_a = n.attr_int("transA", 0) != 0, trans_b = n.attr_int("transB", 0) != 0;
  if (a && b) {
    sym_shape out = gemm_shape<sym_dim>(*a, *b, trans_a, trans_b);
    if (const sym_shape* c = ctx.input_count() > 2 ? ctx.dims(2) : nullptr) expect_broadcasts_to(ctx, *c, out);
    return ctx.set_output_like(0, 0, std::move(out));
  }
  // Gemm is always 2-D: a known operand still gives its side of the result, so the next
  // node can check its inner dimension.
  const sym_dim rows = a && a->size() == 2 ? (*a)[trans_a ? 1 : 0] : sym_dim{};
  const sym_dim cols = b && b->size() == 2 ? (*b)[trans_b ? 0 : 1] : sym_dim{};
  ctx.set_output_like(0, 0, sym_shape{rows, cols});
}

/// com.microsoft MultiHeadAttention: [B, S, Dv] from query [B, S, D] and value [B, L, Dv].
void multi_head_attention(inference_context& ctx) {
  const sym_shape* q = ctx.dims(0);
  const sym_shape* v = ctx.input_count() > 2 ? ctx.dims(2) : nullptr;
  if (!q || q->size() != 3) return ctx.set_output_like(0, 0, std::nullopt);
  ctx.set_output_like(0, 0, sym_shape{(*q)[0], (*q)[1], v && v->size() == 3 ? (*v)[2] : (*q)[2]});
}

/// com.microsoft Attention: [B, S, Dv] from input [B, S, Din] and the packed weights
/// [Din, D + D + Dv] (Dv a third of them unless qkv_hidden_sizes says otherwise).
void packed_attention(inference_context& ctx) {
  const sym_shape* x = ctx.dims(0);
  const sym_shape* w = ctx.input_count() > 1 ? ctx.dims(1) : nullptr;
  if (!x || x->size() != 3) return ctx.set_output_like(0, 0, std::nullopt);
  const std::vector<std::int64_t> sizes = ctx.node().attr_ints("qkv_hidden_sizes", {});
  sym_dim value_hidden;
  if (sizes.size() == 3) {
    value_hidden = sym_dim{sizes[2]};
  } else if (const std::optional<std::int64_t> packed = w && w->size() == 2 ? (*w)[1].constant() : std::nullopt;
             packed && *packed % 3 == 0) {
    value_hidden = sym_dim{*packed / 3};
  }
  ctx.set_output_like(0, 0, sym_shape{(*x)[0], (*x)[1], value_hidden});
}

/// ai.onnx Attention (opset 23): Y [B, S, N*hv] for 3-D inputs (N = q_num_heads, hv = value
/// hidden / kv_num_heads), [B, N, S, hv] for 4-D ones.
void onnx_attention(inference_context& ctx) {
  const sym_shape* q = ctx.dims(0);
  const sym_shape* v = ctx.input_count() > 2 ? ctx.dims(2) : nullptr;
  if (!q || !v || q->size() != v->size() || (q->size() != 3 && q->size() != 4)) return ctx.set_output_like(0, 0, std::nullopt);
  if (q->size() == 4) return ctx.set_output_like(0, 0, sym_shape{(*q)[0], (*q)[1], (*q)[2], (*v)[3]});
  const std::int64_t q_heads = ctx.node().attr_int("q_num_heads", 0), kv_heads = ctx.node().attr_int("kv_num_heads", 0);
  const std::optional<std::int64_t> dv = (*v)[2].constant();
  sym_dim out;
  if (q_heads > 0 && kv_heads > 0 && dv && *dv % kv_heads == 0) out = sym_dim{q_heads * (*dv / kv_heads)};
  ctx.set_output_like(0, 0, sym_shape{(*q)[0], (*q)[1], out});
}

/// inferopt.BlockSparseMatMul: X [..., K] -> [..., cols] (docs/SPARSE_OPS.md).
void block_sparse_matmul(inference_context& ctx) {
  const sym_shape* x = ctx.dims(0);
  if (!x || x->empty()) return ctx.set_output_like(0, 0, std::nullopt);
  sym_shape out(x->begin(), x->end() - 1);
  out.push_back(ctx.node().attr_int("cols", 0));
  ctx.set_output_like(0, 0, std::move(out));
}

}  // namespace

void register_nn_rules(rule_table& t) {
  t["Conv"] = conv;
  t["com.microsoft.FusedConv"] = conv;
  t["ConvTranspose"] = conv_transpose;
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) t[op] = pool;
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) t[op] = global_pool;
  t["BatchNormalization"] = batch_norm;
  t["LayerNormalization"] = layer_norm;
  for (const char* op : {"InstanceNormalization", "LRN", "Softmax", "LogSoftmax", "Hardmax", "GroupNormalization",
                         "RMSNormalization", "SimplifiedLayerNormalization", "MeanVarianceNormalization", "LpNormalization"}) {
    t[op] = same_as_input;
  }
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
  t["com.microsoft.FusedGemm"] = gemm;
  t["inferopt.BlockSparseMatMul"] = block_sparse_matmul;
  t["com.microsoft.MultiHeadAttention"] = multi_head_attention;
  t["com.microsoft.Attention"] = packed_attention;
  t["Attention"] = onnx_attention;
  t["com.microsoft.SkipLayerNormalization"] = skip_layer_norm;
  t["com.microsoft.SkipSimplifiedLayerNormalization"] = skip_layer_norm;
}

}  // namespace inferopt::ir::shape_inference_detail
