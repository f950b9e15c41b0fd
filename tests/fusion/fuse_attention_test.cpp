// fuse-attention: the attention core torch exports becomes com.microsoft MultiHeadAttention.
//
// Numbers: the executor runs the model before (MatMul, Softmax, the reshapes) and after (our
// MultiHeadAttention kernel) on the same random inputs (require_same_outputs, rtol 1e-4):
// the same products and the same softmax, summed in another order.

#include "inferopt/fusion/fuse_attention.hpp"

#include <catch2/catch.hpp>

#include <string>

#include "fusion_test_util.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/shape_inference.hpp"
#include "inferopt/ir/statistics.hpp"

using namespace inferopt;

namespace {

constexpr std::int64_t batch = 2, seq = 5, heads = 2, head = 4, hidden = heads * head;

/// How the block is written: the two exporters' forms and the knobs the conditions check.
struct block_form {
  bool dynamo_key = false;     ///< K^T through the 3-D reshape/transpose sandwich
  bool split_scale = true;     ///< sqrt(scale) on Q and on K^T (SDPA), else Div after QK^T
  bool mask = true;            ///< an additive mask input
  bool guard = true;           ///< Where(IsNaN(p), 0, p)
  bool shaped_noop = false;    ///< Reshape(ctx, Shape(ctx)) before the merge, as dynamic exports write it
  bool cross = false;          ///< K and V from a second input (cross-attention): no packed projection
  std::vector<std::int64_t> mask_dims{batch, 1, seq, seq};
};

ir::value* transpose(ir::graph_builder& gb, ir::value* x, std::vector<std::int64_t> perm) {
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_ints("perm", std::move(perm)));
  return gb.op("Transpose", {x}, std::move(attrs));
}

ir::value* scalar(ir::graph_builder& gb, float v) { return gb.constant("c", {}, {v}); }

ir::value* projection(ir::graph_builder& gb, ir::value* x) {
  return gb.add(gb.matmul(x, gb.random_constant("w", {hidden, hidden}, 0.4f)), gb.random_constant("b", {hidden}, 0.1f));
}

ir::value* heads_of(ir::graph_builder& gb, ir::value* x, std::vector<std::int64_t> perm) {
  return transpose(gb, gb.reshape(x, {batch, seq, -1, head}), std::move(perm));
}

/// x [B,S,D] -> self-attention core in `form` -> [B,S,D]; returns the output.
ir::value* attention_block(ir::graph_builder& gb, ir::value* x, ir::value* memory, ir::value* mask, const block_form& form) {
  ir::value* qh = heads_of(gb, projection(gb, x), {0, 2, 1, 3});
  ir::value* k = projection(gb, memory);
  ir::value* kt = form.dynamo_key ? gb.reshape(transpose(gb, gb.reshape(heads_of(gb, k, {0, 2, 1, 3}), {-1, seq, head}), {0, 2, 1}),
                                               {batch, heads, head, seq})
                                  : heads_of(gb, k, {0, 2, 3, 1});
  ir::value* vh = heads_of(gb, projection(gb, memory), {0, 2, 1, 3});
  ir::value* scores = form.split_scale ? gb.matmul(gb.mul(qh, scalar(gb, 0.7071068f)), gb.mul(kt, scalar(gb, 0.7071068f)))
                                       : gb.op("Div", {gb.matmul(qh, kt), scalar(gb, 2.0f)});
  if (mask) scores = gb.add(scores, mask);
  std::vector<ir::attribute> axis;
  axis.push_back(ir::attribute::make_int("axis", -1));
  ir::value* p = gb.op("Softmax", {scores}, std::move(axis));
  if (form.guard) p = gb.op("Where", {gb.op("IsNaN", {p}), gb.constant("zero", {1}, {0.0f}), p});
  ir::value* ctx = gb.matmul(p, vh);
  if (form.shaped_noop) ctx = gb.op("Reshape", {ctx, gb.op("Shape", {ctx})});
  return gb.reshape(transpose(gb, ctx, {0, 2, 1, 3}), {batch, seq, -1});
}

ir::model make(const block_form& form) {
  ir::model m = ir::make_model("attention", 17);
  ir::graph_builder gb(m.graph(), 11);
  ir::value* x = gb.input("x", ir::data_type::float32, ir::shape{ir::dim{batch}, ir::dim{seq}, ir::dim{hidden}});
  ir::value* mask = nullptr;
  if (form.mask) {
    ir::shape dims(form.mask_dims.begin(), form.mask_dims.end());
    mask = gb.input("mask", ir::data_type::float32, dims);
  }
  ir::value* memory =
      form.cross ? gb.input("memory", ir::data_type::float32, ir::shape{ir::dim{batch}, ir::dim{seq}, ir::dim{hidden}}) : x;
  gb.output(attention_block(gb, x, memory, mask, form));
  (void)ir::infer_shapes(m);
  return m;
}

/// The block's one Softmax.
ir::node& the_softmax(const ir::model& m) {
  for (ir::node* n : m.graph().nodes()) {
    if (n->is("Softmax")) return *n;
  }
  FAIL("the block has no Softmax");
  throw;
}

}  // namespace

TEST_CASE("fuse-attention fuses both exporters' attention cores, with and without mask and guard",
          "[fusion][fuse-attention]") {
  block_form form;
  form.dynamo_key = GENERATE(false, true);
  form.split_scale = GENERATE(true, false);
  form.guard = GENERATE(true, false);
  form.mask = GENERATE(true, false);
  form.shaped_noop = GENERATE(false, true);
  form.cross = GENERATE(false, true);
  CAPTURE(form.dynamo_key, form.split_scale, form.guard, form.mask, form.shaped_noop, form.cross);
  ir::model m = make(form);
  const std::int64_t macs = ir::compute_statistics(m).macs;
  const pass_record r = test::pass_checker("fuse-attention").run_and_compare(m);
  CHECK(ir::compute_statistics(m).macs == macs);  // the fused op does the same products
  CHECK(r.rewrites == 1);
  // Self-attention's three projections of one x go in as packed weights (Attention).
  const std::string fused = form.cross ? "MultiHeadAttention" : "Attention";
  CHECK(test::count_op_type(m, fused) == 1);
  CHECK(test::count_op_type(m, "MatMul") == (form.cross ? 3u : 0u));
  CHECK(test::count_op_type(m, "Softmax") == 0);
  CHECK(test::count_op_type(m, "Transpose") == 0);
  CHECK(test::count_op_type(m, "IsNaN") == (form.guard ? 1 : 0));
  CHECK(test::count_op_type(m, "Shape") == 0);  // the no-op Reshape's shape arithmetic goes with it
  CHECK(test::count_op_type(m, "Add") == 0);
  CHECK(m.opset("com.microsoft") == std::optional<std::int64_t>(1));
  for (const ir::node* n : m.graph().nodes()) {
    if (n->op_type() != fused) continue;
    CHECK(n->attr_int("num_heads", 0) == heads);
    CHECK(n->attr_float("scale", 0.0f) == Approx(0.5));
    // MultiHeadAttention takes the projections' biases as input 3, Attention as input 2
    CHECK(n->inputs().size() == (form.mask ? 6u : form.cross ? 4u : 3u));
  }
}

TEST_CASE("fuse-attention expands a mask broadcast over the queries, as the classic BERT export writes it",
          "[fusion][fuse-attention]") {
  block_form form;
  form.mask_dims = GENERATE(std::vector<std::int64_t>{batch, 1, 1, seq}, std::vector<std::int64_t>{1, 1, 1, seq});
  form.cross = GENERATE(false, true);
  ir::model m = make(form);
  test::pass_checker("fuse-attention").run_and_compare(m);
  CHECK(test::count_op_type(m, "Expand") == 1);
  CHECK(test::count_op_type(m, form.cross ? "MultiHeadAttention" : "Attention") == 1);
}

TEST_CASE("fuse-attention declines a mask MultiHeadAttention cannot take, and scores read elsewhere",
          "[fusion][fuse-attention]") {
  const test::pass_checker checker("fuse-attention");
  SECTION("a mask broadcast over the key axis") {
    block_form form;
    form.mask_dims = {batch, 1, seq, 1};
    ir::model m = make(form);
    const pass_record r = checker.require_declined(m);
    CHECK(r.counters.at("declined-mask-shape") == 1);
  }
  SECTION("a Shape of the scores read outside the pattern") {
    block_form form;
    ir::model m = make(form);
    ir::graph_builder gb(m.graph(), 1);
    gb.output(gb.op("Shape", {the_softmax(m).input(0)}));
    const pass_record r = checker.require_declined(m);
    CHECK(r.counters.at("declined-shape-reader") == 1);
  }
  SECTION("the probabilities are also a graph output") {
    block_form form;
    ir::model m = make(form);
    m.graph().add_output(the_softmax(m).output(0));
    checker.require_declined(m);
  }
}

namespace {

/// nn.MultiheadAttention as ViT exports it: x [B,S,D] -> Transpose into [S,B,D] -> packed
/// in-projection -> q, k, v -> sequence-first head splits -> core -> Gemm out-projection ->
/// back to [B,S,D].
struct seq_first_form {
  bool dynamo_key = false;  ///< K^T as one [B*N,h,S] transpose, else a 4-D transpose of K's heads
  bool in_bias = true;      ///< the packed projection has a bias
  bool out_bias = true;     ///< the Gemm has C
  bool out_gemm = true;     ///< the out-projection is a Gemm (else a MatMul, which is declined)
};

ir::value* seq_first_heads(ir::graph_builder& gb, ir::value* part, bool key_transposed) {
  ir::value* rows = gb.reshape(part, {seq, batch * heads, head});
  if (key_transposed) return gb.reshape(transpose(gb, rows, {1, 2, 0}), {batch, heads, head, seq});
  return gb.reshape(transpose(gb, rows, {1, 0, 2}), {batch, heads, seq, head});
}

ir::model make_seq_first(const seq_first_form& form) {
  ir::model m = ir::make_model("vit_attention", 17);
  ir::graph_builder gb(m.graph(), 11);
  ir::value* x = gb.input("x", ir::data_type::float32, ir::shape{ir::dim{batch}, ir::dim{seq}, ir::dim{hidden}});
  ir::value* packed = gb.matmul(transpose(gb, x, {1, 0, 2}), gb.random_constant("w_in", {hidden, 3 * hidden}, 0.4f));
  if (form.in_bias) packed = gb.add(packed, gb.random_constant("b_in", {3 * hidden}, 0.1f));
  ir::value* split = transpose(gb, gb.reshape(packed, {1, seq, batch, 3, hidden}), {3, 1, 2, 0, 4});
  ir::value* parts = gb.op("Squeeze", {split, gb.constant_i64("axes", {1}, {3})});
  std::vector<ir::value*> qkv;
  for (std::int64_t i = 0; i < 3; ++i) {
    std::vector<ir::attribute> axis;
    axis.push_back(ir::attribute::make_int("axis", 0));
    qkv.push_back(gb.op("Gather", {parts, gb.constant_i64("index", {}, {i})}, std::move(axis)));
  }
  ir::value* q = seq_first_heads(gb, qkv[0], false);
  ir::value* kt = form.dynamo_key ? seq_first_heads(gb, qkv[1], true) : transpose(gb, seq_first_heads(gb, qkv[1], false), {0, 1, 3, 2});
  ir::value* v = seq_first_heads(gb, qkv[2], false);
  ir::value* scores = gb.matmul(gb.mul(q, gb.constant("s", {1}, {0.7071068f})), gb.mul(kt, gb.constant("s", {1}, {0.7071068f})));
  std::vector<ir::attribute> axis;
  axis.push_back(ir::attribute::make_int("axis", -1));
  ir::value* merged = gb.reshape(transpose(gb, gb.matmul(gb.op("Softmax", {scores}, std::move(axis)), v), {2, 0, 1, 3}),
                                 {seq * batch, hidden});
  ir::value* projected = nullptr;
  if (form.out_gemm) {
    std::vector<ir::value*> in{merged, gb.random_constant("w_out", {hidden, hidden}, 0.4f)};
    if (form.out_bias) in.push_back(gb.random_constant("b_out", {hidden}, 0.1f));
    std::vector<ir::attribute> trans;
    trans.push_back(ir::attribute::make_int("transB", 1));
    projected = gb.op("Gemm", in, std::move(trans));
  } else {
    projected = gb.matmul(merged, gb.random_constant("w_out", {hidden, hidden}, 0.4f));
  }
  gb.output(transpose(gb, gb.reshape(projected, {seq, batch, hidden}), {1, 0, 2}));
  (void)ir::infer_shapes(m);
  return m;
}

}  // namespace

TEST_CASE("fuse-attention fuses nn.MultiheadAttention's sequence-first block into Attention and its out-projection",
          "[fusion][fuse-attention]") {
  seq_first_form form;
  form.dynamo_key = GENERATE(false, true);
  form.in_bias = GENERATE(true, false);
  form.out_bias = GENERATE(true, false);
  CAPTURE(form.dynamo_key, form.in_bias, form.out_bias);
  ir::model m = make_seq_first(form);
  const std::int64_t macs = ir::compute_statistics(m).macs;
  const pass_record r = test::pass_checker("fuse-attention").run_and_compare(m);
  CHECK(ir::compute_statistics(m).macs == macs);
  CHECK(r.rewrites == 1);
  CHECK(test::count_op_type(m, "Attention") == 1);
  CHECK(test::count_op_type(m, "Softmax") == 0);
  CHECK(test::count_op_type(m, "Transpose") == 0);
  CHECK(test::count_op_type(m, "Gemm") == 0);
  CHECK(test::count_op_type(m, "MatMul") == 1);
  CHECK(test::count_op_type(m, "Add") == (form.out_bias ? 1 : 0));
  for (const ir::node* n : m.graph().nodes()) {
    if (n->op_type() != "Attention") continue;
    CHECK(n->attr_int("num_heads", 0) == heads);
    CHECK(n->attr_float("scale", 0.0f) == Approx(0.5));
    CHECK(n->inputs().size() == 3u);  // the bias is there, zeros when the projection had none
  }
}

TEST_CASE("fuse-attention declines a sequence-first block whose out-projection is not a Gemm",
          "[fusion][fuse-attention]") {
  seq_first_form form;
  form.out_gemm = false;
  ir::model m = make_seq_first(form);
  const pass_record r = test::pass_checker("fuse-attention").require_declined(m);
  CHECK(r.counters.at("declined-out-projection") == 1);
}

TEST_CASE("fuse-attention{domain=ai.onnx} writes the standard Attention from opset 23 and declines below",
          "[fusion][fuse-attention]") {
  block_form form;
  form.mask = GENERATE(true, false);
  form.guard = GENERATE(true, false);
  SECTION("opset 23") {
    ir::model m = make(form);
    m.opsets[0].version = 23;
    const pass_record r = test::pass_checker("fuse-attention{domain=ai.onnx}").run_and_compare(m);
    CHECK(r.rewrites == 1);
    const ir::node* fused = nullptr;
    for (const ir::node* n : m.graph().nodes()) {
      if (n->is("Attention")) fused = n;
    }
    REQUIRE(fused);
    CHECK(fused->is_onnx_domain());
    CHECK(fused->attr_int("q_num_heads", 0) == heads);
    CHECK(fused->attr_int("kv_num_heads", 0) == heads);
    CHECK(fused->inputs().size() == (form.mask ? 4u : 3u));
    CHECK(test::count_op_type(m, "Add") == 3);  // the projections keep their biases: Attention-23 takes none
    CHECK_FALSE(m.opset("com.microsoft"));
  }
  SECTION("opset 17") {
    ir::model m = make(form);
    CHECK(test::pass_checker("fuse-attention{domain=ai.onnx}").require_declined(m).counters.at("declined-opset") == 1);
  }
}
