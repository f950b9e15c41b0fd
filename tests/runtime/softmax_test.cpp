// Softmax along contiguous float rows, which runs on the vector math's row softmax (one build
// per instruction set; tagged [nn] so the isa-variant tests run every build), against a double
// reference: row lengths below, at and past the 16-value vector pieces, masked entries (at
// -inf and at float's lowest, as exports write padding) that must be exactly 0, and the rows
// the scalar loop keeps (a NaN, an infinite maximum), which give NaN.
//
// Tolerance: exp within a few ulps, one reciprocal and a product: 1e-5 relative plus 1e-7.

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/runtime/session.hpp"
#include "support/random_values.hpp"

using namespace inferopt;
using runtime::tensor;

namespace {

std::vector<float> softmax_of(const std::vector<float>& x, std::int64_t rows, std::int64_t cols, int threads) {
  ir::model m = ir::make_model("softmax", 17);
  ir::graph_builder b(m.graph());
  ir::node* n = m.graph().add_node(ir::node_spec{"Softmax", {b.input("x", ir::data_type::float32, {rows, cols})}, {"y"}, {}, "softmax", ""});
  b.output(n->output(0));
  runtime::session s(m, runtime::session_options{.threads = threads});
  const tensor y = s.run({{"x", tensor::from_values<float>({rows, cols}, x)}}).at("y");
  const auto v = y.values<float>();
  return {v.begin(), v.end()};
}

}  // namespace

TEST_CASE("float softmax along rows matches a double reference, masked entries exactly zero", "[runtime][nn][softmax]") {
  const std::int64_t cols = GENERATE(1, 5, 16, 17, 128, 1000);
  const int threads = GENERATE(1, 2);
  const std::int64_t rows = 37;
  CAPTURE(cols, threads);
  std::vector<float> x = test::random_values(static_cast<std::size_t>(rows * cols), 11);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] *= 8.0f;
    if (cols > 1 && i % 7 == 3) x[i] = i % 2 ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::lowest();
  }
  const std::vector<float> y = softmax_of(x, rows, cols, threads);
  std::int64_t bad = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * cols;
    double top = -std::numeric_limits<double>::infinity(), sum = 0;
    for (std::int64_t i = 0; i < cols; ++i) top = std::max<double>(top, row[i]);
    for (std::int64_t i = 0; i < cols; ++i) sum += std::exp(row[i] - top);
    for (std::int64_t i = 0; i < cols; ++i) {
      const double want = std::exp(row[i] - top) / sum;
      const float got = y[static_cast<std::size_t>(r * cols + i)];
      if (row[i] < -1e30f) bad += got != 0.0f;
      else bad += !(std::abs(got - want) <= 1e-5 * want + 1e-7);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("a softmax row holding NaN or an infinite maximum is NaN, like onnxruntime's", "[runtime][nn][softmax]") {
  constexpr float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // Rows of 20 (a full vector piece and a tail): NaN at the end, +inf, all -inf, NaN first, and a plain row.
  const std::int64_t rows = 5, cols = 20;
  std::vector<float> x(static_cast<std::size_t>(rows * cols), 1.0f);
  x[cols - 1] = nan;
  x[cols + 3] = inf;
  for (std::int64_t i = 0; i < cols; ++i) x[static_cast<std::size_t>(2 * cols + i)] = -inf;
  x[3 * cols] = nan;
  const std::vector<float> y = softmax_of(x, rows, cols, 1);
  for (std::int64_t r = 0; r < rows - 1; ++r) {
    CAPTURE(r);
    for (std::int64_t i = 0; i < cols; ++i) CHECK(std::isnan(y[static_cast<std::size_t>(r * cols + i)]));
  }
  for (std::int64_t i = 0; i < cols; ++i) CHECK(y[static_cast<std::size_t>(4 * cols + i)] == Approx(1.0 / cols).epsilon(1e-6));
}
