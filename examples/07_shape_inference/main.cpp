// Shape inference on the pattern torch exporters emit for attention heads: the Reshape target
// is computed in the graph from Shape(x), and the model's batch and sequence are symbolic.
// Inference carries the shape vector's values, so every value comes out typed in terms of
// `batch` and `sequence`; `dim_values` then gives the sizes a deployment uses.
//
//   example_07_shape_inference [OUT_DIR]

#include <iostream>

#include "inferopt/ir.hpp"

namespace ir = inferopt::ir;

namespace {

/// x [batch, sequence, 64] -> Reshape to [batch, sequence, 4, 16] -> Transpose -> scores.
ir::model attention_scores() {
  ir::model m = ir::make_model("attention_scores", 17);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {"batch", "sequence", 64});
  ir::value* shape = b.op("Shape", {x});
  std::vector<ir::value*> parts;
  for (std::int64_t axis : {0, 1}) {
    std::vector<ir::attribute> gather_axis;
    gather_axis.push_back(ir::attribute::make_int("axis", 0));
    ir::value* dim = b.op("Gather", {shape, b.constant_i64("axis" + std::to_string(axis), {}, {axis})}, std::move(gather_axis));
    parts.push_back(b.op("Unsqueeze", {dim, b.constant_i64("at0_" + std::to_string(axis), {1}, {0})}));
  }
  parts.push_back(b.constant_i64("heads", {1}, {4}));
  parts.push_back(b.constant_i64("head_dim", {1}, {-1}));
  std::vector<ir::attribute> concat_axis;
  concat_axis.push_back(ir::attribute::make_int("axis", 0));
  ir::value* heads = b.op("Reshape", {x, b.op("Concat", parts, std::move(concat_axis))});
  std::vector<ir::attribute> perm;
  perm.push_back(ir::attribute::make_ints("perm", {0, 2, 1, 3}));
  ir::value* q = b.op("Transpose", {heads}, std::move(perm));
  std::vector<ir::attribute> perm_k;
  perm_k.push_back(ir::attribute::make_ints("perm", {0, 1, 3, 2}));
  b.output(b.op("MatMul", {q, b.op("Transpose", {q}, std::move(perm_k))}));
  return m;
}

void print_shapes(const ir::model& m) {
  for (const ir::node* n : m.graph().nodes()) {
    const ir::value* out = n->output(0);
    std::cout << "  " << n->op_type() << " -> " << (out->type() ? ir::to_string(out->type()->dims) : "?") << "\n";
  }
}

}  // namespace

int main() {
  try {
    ir::model m = attention_scores();
    const ir::shape_inference_report report = ir::infer_shapes(m);
    std::cout << "symbolic (" << report.values_typed << " values typed, " << report.unknown_shapes << " unknown):\n";
    print_shapes(m);

    ir::model fixed = attention_scores();
    ir::shape_inference_options options;
    options.dim_values = {{"batch", 8}, {"sequence", 128}};
    (void)ir::infer_shapes(fixed, options);
    std::cout << "with batch=8, sequence=128:\n";
    print_shapes(fixed);
    const ir::value* scores = fixed.graph().outputs()[0];
    return report.unknown_shapes == 0 && ir::to_string(scores->type()->dims) == "8x4x128x128" ? 0 : 1;
  } catch (const inferopt::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
