// The session's MatMul + GELU fold (src/runtime/linear_gelu.hpp) against the same graph run
// as given (session_options::rewrite_graph = false): every GELU op it folds (com.microsoft
// Gelu, BiasGelu, FastGelu with and without bias, ai.onnx Gelu in both forms), batched inputs,
// and the cases it must leave alone. Tagged [fused] so that the instruction-set variants run it
// too: under INFEROPT_NN_GEMM=eigen the fused kernel takes its nn::gemm path.
//
// Tolerance: the same float32 products on both sides (oneDNN on prepacked weights against
// the MatMul kernel) and oneDNN's erf/tanh fits against vector_math's erfc and std::exp:
// 1e-4 * (1 + |expected|) is far above both.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/runtime/session.hpp"
#include "support/random_values.hpp"
#include "support/tensor_compare.hpp"

using namespace inferopt;
using runtime::tensor;

namespace {

using test::random_values;

constexpr std::int64_t k = 48, n = 40;

struct gelu_case {
  std::string domain, op;
  bool bias;
  std::string approximate;  // ai.onnx Gelu's attribute; empty: none written
};

ir::model gelu_model(const gelu_case& c, const std::vector<std::int64_t>& a_dims, bool matmul_is_output) {
  ir::model m = ir::make_model("linear_gelu", 20);  // ai.onnx Gelu is opset 20
  m.opsets.push_back({"com.microsoft", 1});
  ir::graph_builder gb(m.graph());
  ir::shape shape;
  for (std::int64_t d : a_dims) shape.push_back(ir::dim{d});
  ir::value* a = gb.input("a", ir::data_type::float32, shape);
  ir::value* w = gb.constant("w", {k, n}, random_values(k * n, 2, 0.3f));
  ir::value* y = gb.op("MatMul", {a, w});
  std::vector<ir::value*> inputs{y};
  if (c.bias) inputs.push_back(gb.constant("bias", {n}, random_values(n, 3)));
  std::vector<ir::attribute> attrs;
  if (!c.approximate.empty()) attrs.push_back(ir::attribute::make_string("approximate", c.approximate));
  ir::node* act = m.graph().add_node(ir::node_spec{c.op, inputs, {"out"}, std::move(attrs), "act", c.domain});
  gb.output(act->output(0));
  if (matmul_is_output) gb.output(y);
  return m;
}

runtime::tensor_map run(const ir::model& m, const runtime::tensor_map& feeds, bool rewrite, bool profile = false,
                        std::vector<std::string>* ops = nullptr) {
  runtime::session s(m, runtime::session_options{.threads = 2, .rewrite_graph = rewrite});
  s.set_profiling(profile);
  runtime::tensor_map out = s.run(feeds);
  if (ops) {
    for (const auto& entry : s.profile()) ops->push_back(entry.first);
  }
  return out;
}

}  // namespace

TEST_CASE("MatMul followed by a GELU runs as one product with the GELU as it would run apart", "[runtime][fused]") {
  const std::vector<gelu_case> cases{
      {"com.microsoft", "Gelu", false, ""},   {"com.microsoft", "BiasGelu", true, ""},
      {"com.microsoft", "FastGelu", true, ""}, {"com.microsoft", "FastGelu", false, ""},
      {"", "Gelu", false, ""},                {"", "Gelu", false, "tanh"}};
  for (const gelu_case& c : cases) {
    for (const std::vector<std::int64_t>& dims : {std::vector<std::int64_t>{7, k}, std::vector<std::int64_t>{2, 5, k}}) {
      INFO(c.domain << " " << c.op << (c.bias ? " with bias " : " ") << c.approximate << ", A of rank " << dims.size());
      const ir::model m = gelu_model(c, dims, false);
      const auto values = random_values(static_cast<std::size_t>(std::max<std::int64_t>(dims[0], 1) * (dims.size() == 3 ? dims[1] : 1) * k), 1, 2.0f);
      const runtime::tensor_map feeds{{"a", tensor::from_values<float>(dims, values)}};
      std::vector<std::string> ops;
      const runtime::tensor_map fused = run(m, feeds, true, true, &ops);
      CHECK(std::find(ops.begin(), ops.end(), "inferopt.cpu.MatMulGelu") != ops.end());
      CHECK(std::find(ops.begin(), ops.end(), "MatMul") == ops.end());
      CHECK(test::compare_tensors(fused.at("out"), run(m, feeds, false).at("out"), 1e-4, 1e-4) == "");
    }
  }
}

TEST_CASE("a MatMul whose output is read elsewhere keeps its GELU apart", "[runtime][fused]") {
  const ir::model m = gelu_model({"com.microsoft", "BiasGelu", true, ""}, {3, k}, true);
  const runtime::tensor_map feeds{{"a", tensor::from_values<float>({3, k}, random_values(3 * k, 4))}};
  std::vector<std::string> ops;
  const runtime::tensor_map rewritten = run(m, feeds, true, true, &ops);
  CHECK(std::find(ops.begin(), ops.end(), "inferopt.cpu.MatMulGelu") == ops.end());
  const runtime::tensor_map plain = run(m, feeds, false);
  for (const auto& [name, want] : plain) CHECK(test::compare_tensors(rewritten.at(name), want, 1e-4, 1e-4) == "");
}
