// The executor's inferopt.BlockSparseMatMul kernel against a float64 dense reference computed
// here (Y = act(X W + bias), X's leading dims as batch), on both storage orientations, ragged
// and non-square blocks, with and without bias and Relu, on one and two threads; and the
// refusals of malformed nodes and arrays, each one line naming the node.
//
// Tolerance: sparse::run's documented bound is (k_s + 1) * 2^-24 * (sum |x w| + |bias|); with
// K <= 96, |x| < 1 and |w| < 1 that is below 1e-4 * (1 + |y|), the check used here.

#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/runtime/session.hpp"
#include "inferopt/sparse/block_prune.hpp"
#include "inferopt/sparse/block_sparse_matmul_op.hpp"
#include "pass/pass_test_util.hpp"
#include "support/random_values.hpp"

using namespace inferopt;
using runtime::tensor;

namespace {

using test::random_values;

/// The dense W [k, n] a node computes with, and how the node stores it.
struct op_case {
  std::vector<std::int64_t> x_dims;  // [..., k]
  std::int64_t k = 0, n = 0;
  std::int32_t block_rows = 8, block_cols = 8;  // on W [k, n]
  bool transposed = false;
  bool bias = false;
  bool relu = false;
};

/// W pruned to 50% block sparsity (dense, [k, n] row-major) and the arrays that store it.
struct weight {
  std::vector<float> dense;
  sparse::bsr_op_arrays arrays;
  sparse::block_shape stored_block;
};

weight make_weight(const op_case& c) {
  weight w;
  const std::vector<float> full = random_values(static_cast<std::size_t>(c.k * c.n), 11);
  sparse::prune_options o;
  o.sparsity = 0.5;
  o.block = {c.block_rows, c.block_cols};
  sparse::bsr_matrix<float> m = sparse::prune_blocks<float>(full, c.k, c.n, o);
  w.dense = m.to_dense();
  if (c.transposed) m = m.transposed();  // W^T [n, k] with block_cols x block_rows blocks
  w.stored_block = m.block();
  w.arrays = sparse::to_op_arrays(m);
  return w;
}

/// A model `x -> inferopt.BlockSparseMatMul -> y` holding `w`'s arrays.
ir::model make_model(const op_case& c, const weight& w, const std::vector<float>& bias) {
  ir::model m = ir::make_model("bsmm");
  m.opsets.push_back({"inferopt", 1});
  ir::graph& g = m.graph();
  ir::graph_builder gb(g, 1);
  ir::shape x_shape;
  for (std::int64_t d : c.x_dims) x_shape.push_back(ir::dim{d});
  ir::value* x = gb.input("x", ir::data_type::float32, x_shape);
  const auto nnz = static_cast<std::int64_t>(w.arrays.col_ind.size());
  std::vector<ir::value*> inputs{
      x, gb.constant_i64("row_ptr", {static_cast<std::int64_t>(w.arrays.row_ptr.size())}, w.arrays.row_ptr),
      gb.constant_i64("col_ind", {nnz}, w.arrays.col_ind),
      gb.constant("values", {nnz, w.stored_block.rows, w.stored_block.cols}, w.arrays.values)};
  if (c.bias) inputs.push_back(gb.constant("bias", {c.n}, bias));
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_int("rows", c.k));
  attrs.push_back(ir::attribute::make_int("cols", c.n));
  attrs.push_back(ir::attribute::make_int("block_rows", c.block_rows));
  attrs.push_back(ir::attribute::make_int("block_cols", c.block_cols));
  attrs.push_back(ir::attribute::make_int("transposed", c.transposed ? 1 : 0));
  if (c.relu) attrs.push_back(ir::attribute::make_string("activation", "Relu"));
  ir::node* n = test::add_op(g, "BlockSparseMatMul", inputs, "bsmm", {"y"}, std::move(attrs), "inferopt");
  g.add_output(n->output(0));
  return m;
}

/// act(X W + bias) in double, X's leading dims flattened into rows.
std::vector<double> reference(const op_case& c, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& bias) {
  const std::int64_t rows = static_cast<std::int64_t>(x.size()) / c.k;
  std::vector<double> y(static_cast<std::size_t>(rows * c.n));
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) {
      double s = c.bias ? bias[static_cast<std::size_t>(j)] : 0.0;
      for (std::int64_t p = 0; p < c.k; ++p) {
        s += static_cast<double>(x[static_cast<std::size_t>(i * c.k + p)]) * w[static_cast<std::size_t>(p * c.n + j)];
      }
      y[static_cast<std::size_t>(i * c.n + j)] = c.relu ? std::max(s, 0.0) : s;
    }
  }
  return y;
}

/// The inferopt::error building a session for `m` throws; fails the test when none does.
std::optional<error> build_error(const ir::model& m) {
  return test::error_from([&] { runtime::session s(m, runtime::session_options{.threads = 1}); });
}

}  // namespace

TEST_CASE("BlockSparseMatMul matches the dense product of its weight", "[sparse][block-sparse-matmul]") {
  auto [x_dims, k, n, br, bc] =
      GENERATE(table<std::vector<std::int64_t>, std::int64_t, std::int64_t, std::int32_t, std::int32_t>({
          {{5, 64}, 64, 48, 16, 16},
          {{2, 3, 50}, 50, 70, 8, 16},   // batch dims, ragged edges, non-square blocks
          {{4, 1, 2, 96}, 96, 33, 32, 4},
          {{40}, 40, 24, 8, 8},          // 1-D X: Y is [N]
          {{0, 40}, 40, 24, 8, 8},       // no rows
      }));
  const bool transposed = GENERATE(false, true);
  const bool bias = GENERATE(false, true);
  const bool relu = GENERATE(false, true);
  const int threads = GENERATE(1, 2);
  const op_case c{x_dims, k, n, br, bc, transposed, bias, relu};
  CAPTURE(x_dims, k, n, br, bc, transposed, bias, relu, threads);

  const weight w = make_weight(c);
  const std::vector<float> b = random_values(static_cast<std::size_t>(n), 5);
  const ir::model m = make_model(c, w, b);
  std::int64_t x_count = 1;
  for (std::int64_t d : x_dims) x_count *= d;
  const std::vector<float> x = random_values(static_cast<std::size_t>(x_count), 9);

  runtime::session s(m, runtime::session_options{.threads = threads});
  const runtime::tensor_map out = s.run({{"x", tensor::from_values<float>(x_dims, x)}});
  const tensor& y = out.at("y");
  std::vector<std::int64_t> y_dims(x_dims.begin(), x_dims.end() - 1);
  y_dims.push_back(n);
  REQUIRE(y.shape() == y_dims);
  const std::vector<double> expected = reference(c, x, w.dense, b);
  REQUIRE(static_cast<std::size_t>(y.element_count()) == expected.size());
  const std::span<const float> got = y.values<float>();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    REQUIRE(std::abs(got[i] - expected[i]) <= 1e-4 * (1.0 + std::abs(expected[i])));
  }
}

TEST_CASE("BlockSparseMatMul refuses malformed nodes and arrays with one line naming the node",
          "[sparse][block-sparse-matmul]") {
  const op_case c{{3, 16}, 16, 8, 4, 4, false, true, false};
  const weight w = make_weight(c);
  const std::vector<float> b = random_values(8, 5);
  ir::model m = make_model(c, w, b);
  ir::graph& g = m.graph();
  ir::node* n = *g.nodes().begin();
  auto replace_array = [&](std::size_t index, ir::tensor t) {
    t.name = g.unique_name("bad");
    g.set_input(n, index, g.add_initializer(t.name, t));
  };
  std::string expected;
  SECTION("a row_ptr of the wrong length") {
    replace_array(1, ir::tensor::from_values<std::int64_t>("", {2}, std::vector<std::int64_t>{0, 1}));
    expected = "row_ptr has 2 entries, expected 5";
  }
  SECTION("a column index out of range") {
    std::vector<std::int64_t> col_ind = w.arrays.col_ind;
    col_ind.back() = 7;
    replace_array(2, ir::tensor::from_values<std::int64_t>("", {static_cast<std::int64_t>(col_ind.size())}, col_ind));
    expected = "out of range";
  }
  SECTION("unsorted column indices") {
    // Block row 0 keeps both of its blocks at 50% only by chance, so build one that does.
    replace_array(1, ir::tensor::from_values<std::int64_t>("", {5}, std::vector<std::int64_t>{0, 2, 2, 2, 2}));
    replace_array(2, ir::tensor::from_values<std::int64_t>("", {2}, std::vector<std::int64_t>{1, 0}));
    replace_array(3, ir::tensor::from_values<float>("", {2, 4, 4}, std::vector<float>(32, 1.0f)));
    expected = "not strictly increasing";
  }
  SECTION("values whose dims do not match the blocks") {
    replace_array(3, ir::tensor::from_values<float>("", {1, 2, 8}, std::vector<float>(16, 1.0f)));
    expected = "values has dims [1,2,8]";
  }
  SECTION("int32 indices") {
    replace_array(2, ir::tensor::from_values<std::int32_t>("", {1}, std::vector<std::int32_t>{0}));
    expected = "col_ind is int32, expected int64";
  }
  SECTION("arrays that are not initializers") {
    g.set_input(n, 3, g.add_input("values_in", std::nullopt));
    expected = "input 3 (values) must be an initializer";
  }
  SECTION("a missing attribute") {
    n->remove_attribute("cols");
    expected = "attribute 'cols' is required";
  }
  SECTION("a block extent outside 1..64") {
    n->set_attribute(ir::attribute::make_int("block_rows", 65));
    expected = "attribute 'block_rows' is 65, expected 1..64";
  }
  SECTION("an activation other than Relu") {
    n->set_attribute(ir::attribute::make_string("activation", "Tanh"));
    expected = "activation 'Tanh'";
  }
  SECTION("a transposed flag other than 0 or 1") {
    n->set_attribute(ir::attribute::make_int("transposed", 2));
    expected = "attribute 'transposed' is 2";
  }
  CAPTURE(expected);
  const std::optional<error> e = build_error(m);
  REQUIRE(e.has_value());
  const std::string what = e->what();
  CAPTURE(what);
  CHECK(e->code() == errc::invalid_model);
  CHECK(what.find("'bsmm'") != std::string::npos);
  CHECK(what.find(expected) != std::string::npos);
  CHECK(what.find('\n') == std::string::npos);
}

TEST_CASE("BlockSparseMatMul checks X and the bias when it runs", "[sparse][block-sparse-matmul]") {
  const op_case c{{3, 16}, 16, 8, 4, 4, false, false, false};
  const weight w = make_weight(c);
  ir::model m = make_model(c, w, {});
  m.graph().inputs()[0]->set_type(std::nullopt);  // let any shape through to the kernel
  runtime::session s(m, runtime::session_options{.threads = 1});
  const auto e = test::error_from([&] { (void)s.run({{"x", tensor::from_values<float>({3, 15}, std::vector<float>(45))}}); });
  REQUIRE(e.has_value());
  CHECK(e->code() == errc::invalid_argument);
  CHECK_THAT(std::string(e->what()), Catch::Contains("'bsmm'") && Catch::Contains("does not end in K = 16"));
}

TEST_CASE("a model without the inferopt opset import cannot run BlockSparseMatMul", "[sparse][block-sparse-matmul]") {
  const op_case c{{3, 16}, 16, 8, 4, 4, false, false, false};
  ir::model m = make_model(c, make_weight(c), {});
  m.opsets.pop_back();
  const std::optional<error> e = build_error(m);
  REQUIRE(e.has_value());
  CHECK(e->code() == errc::unsupported);
  CHECK_THAT(std::string(e->what()), Catch::Contains("BlockSparseMatMul"));
}
