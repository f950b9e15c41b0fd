// Our shape inference on what exporters emit: shape vectors computed inside the graph,
// symbolic batch and sequence dims, data-dependent sizes, unknown ops, and contradictions.

#include <catch2/catch.hpp>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/shape_inference.hpp"

using namespace inferopt;
using Catch::Matchers::Contains;

namespace {

std::string shape_of(const ir::value* v) {
  REQUIRE(v);
  REQUIRE(v->type());
  return ir::to_string(v->type()->dims);
}

template <class... A>
std::vector<ir::attribute> attrs(A&&... a) {
  std::vector<ir::attribute> v;
  (v.push_back(std::forward<A>(a)), ...);
  return v;
}

const ir::value* output_of(const ir::graph& g, const std::string& node_name) {
  for (const ir::node* n : g.nodes()) {
    if (n->name() == node_name) return n->output(0);
  }
  return nullptr;
}

ir::value* int_constant(ir::graph_builder& b, const std::string& name, std::vector<std::int64_t> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return b.constant_i64(name, {n}, values);
}

/// x [batch, sequence, 64] -> Reshape to [batch, sequence, 4, 16] with the target computed
/// from Shape(x) as torch exports it: Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
ir::model heads_model() {
  ir::model m = ir::make_model("heads", 17);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {"batch", "sequence", 64});
  ir::value* shape = b.op("Shape", {x});
  auto dim_of = [&](std::int64_t axis) {
    ir::value* index = b.constant_i64("axis" + std::to_string(axis), {}, {axis});
    ir::value* picked = b.op("Gather", {shape, index}, attrs(ir::attribute::make_int("axis", 0)));
    return b.op("Unsqueeze", {picked, int_constant(b, "unsqueeze_axes" + std::to_string(axis), {0})});
  };
  ir::value* target = b.op("Concat", {dim_of(0), dim_of(1), int_constant(b, "heads", {4}), int_constant(b, "head_dim", {-1})},
                           attrs(ir::attribute::make_int("axis", 0)));
  ir::value* y = b.op("Reshape", {x, target}, {}, "split_heads");
  y = b.op("Transpose", {y}, attrs(ir::attribute::make_ints("perm", {0, 2, 1, 3})));
  ir::value* scores = b.op("MatMul", {y, b.op("Transpose", {y}, attrs(ir::attribute::make_ints("perm", {0, 1, 3, 2})))});
  b.output(b.op("Softmax", {scores}, attrs(ir::attribute::make_int("axis", -1))));
  return m;
}

}  // namespace

TEST_CASE("infer_shapes carries symbolic dims through a shape vector computed in the graph", "[ir][shape-inference]") {
  ir::model m = heads_model();
  const ir::shape_inference_report report = ir::infer_shapes(m);
  CHECK(report.ran);
  CHECK(report.unknown_shapes == 0);
  CHECK(report.unknown_ops.empty());
  const ir::graph& g = m.graph();
  CHECK(shape_of(output_of(g, "split_heads")) == "batchxsequencex4x16");
  CHECK(shape_of(g.outputs()[0]) == "batchx4xsequencexsequence");

  SECTION("--dims style values turn the symbols into numbers") {
    ir::model fixed = heads_model();
    ir::shape_inference_options options;
    options.dim_values = {{"batch", 2}, {"sequence", 10}};
    (void)ir::infer_shapes(fixed, options);
    CHECK(shape_of(fixed.graph().outputs()[0]) == "2x4x10x10");
  }
}

TEST_CASE("infer_shapes refuses a declared shape its node contradicts, naming the node", "[ir][shape-inference]") {
  ir::model m = ir::make_model("contradiction", 17);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {1, 3, 8, 8});
  ir::value* y = b.op("MaxPool", {x}, attrs(ir::attribute::make_ints("kernel_shape", {2, 2}), ir::attribute::make_ints("strides", {2, 2})),
                      "pool");
  b.output(b.relu(y));
  y->set_type(ir::value_type{true, ir::data_type::float32, ir::shape{1, 3, 8, 8}});
  CHECK_THROWS_WITH(ir::infer_shapes(m), Contains("'pool'") && Contains("1x3x8x8") && Contains("1x3x4x4"));

  SECTION("after our own edits, refresh mode replaces the stale type instead") {
    ir::shape_inference_options refresh;
    refresh.declared = ir::shape_inference_options::declared_types::refresh;
    (void)ir::infer_shapes(m, refresh);
    CHECK(shape_of(y) == "1x3x4x4");
  }
}

TEST_CASE("infer_shapes refuses a zero stride instead of dividing by it", "[ir][shape-inference]") {
  ir::model m = ir::make_model("zero_stride", 17);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {1, 3, 8, 8});
  b.output(b.op("AveragePool", {x}, attrs(ir::attribute::make_ints("kernel_shape", {2, 2}), ir::attribute::make_ints("strides", {0, 2})),
                "zero"));
  CHECK_THROWS_WITH(ir::infer_shapes(m), Contains("'zero'") && Contains("stride"));
}

TEST_CASE("infer_shapes keeps an unknown op's declared type and reports the op", "[ir][shape-inference]") {
  ir::model m = ir::make_model("custom", 17);
  m.opsets.push_back({"com.example", 1});
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 5});
  ir::node* custom = m.graph().add_node(ir::node_spec{"Mystery", {x}, {"mystery_out"}, {}, "mystery", "com.example"});
  ir::value* out = custom->output(0);
  ir::value* after = b.relu(out);
  b.output(after);
  SECTION("declared: kept, and what follows is typed from it") {
    out->set_type(ir::value_type{true, ir::data_type::float32, ir::shape{7}});
    const ir::shape_inference_report report = ir::infer_shapes(m);
    CHECK(report.unknown_ops == std::vector<std::string>{"com.example.Mystery"});
    CHECK(shape_of(out) == "7");
    CHECK(shape_of(after) == "7");
  }
  SECTION("undeclared: left unknown, never guessed") {
    const ir::shape_inference_report report = ir::infer_shapes(m);
    CHECK_FALSE(out->type());
    CHECK(report.unknown_shapes == 2);
  }
}

TEST_CASE("infer_shapes names a data-dependent dim after its value", "[ir][shape-inference]") {
  ir::model m = ir::make_model("nonzero", 17);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {3, 4});
  ir::value* indices = b.op("NonZero", {x}, {}, "nz");
  b.output(b.op("Transpose", {indices}));
  (void)ir::infer_shapes(m);
  CHECK(shape_of(indices) == "2x" + indices->name() + "_dim_1");
  CHECK(indices->type()->elem_type == ir::data_type::int64);
  CHECK(shape_of(m.graph().outputs()[0]) == indices->name() + "_dim_1x2");
}

TEST_CASE("infer_shapes reads the input forms of newer opsets and the attributes of older ones", "[ir][shape-inference]") {
  const std::int64_t opset = GENERATE(11, 13, 18, 21, 24);
  CAPTURE(opset);
  ir::model m = ir::make_model("axes", opset);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 1, 6});
  std::vector<ir::value*> squeeze_inputs{x};
  std::vector<ir::attribute> squeeze_attrs;
  if (opset >= 13) squeeze_inputs.push_back(int_constant(b, "axes", {1}));
  else squeeze_attrs.push_back(ir::attribute::make_ints("axes", {1}));
  ir::value* squeezed = b.op("Squeeze", squeeze_inputs, std::move(squeeze_attrs));
  std::vector<ir::value*> reduce_inputs{squeezed};
  std::vector<ir::attribute> reduce_attrs = attrs(ir::attribute::make_int("keepdims", 0));
  if (opset >= 18) reduce_inputs.push_back(int_constant(b, "reduce_axes", {-1}));
  else reduce_attrs.push_back(ir::attribute::make_ints("axes", {-1}));
  ir::value* reduced = b.op("ReduceMean", reduce_inputs, std::move(reduce_attrs));
  b.output(reduced);
  (void)ir::infer_shapes(m);
  CHECK(shape_of(squeezed) == "2x6");
  CHECK(shape_of(reduced) == "2");
}
