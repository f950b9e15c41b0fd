// The shape kernel family (src/runtime/kernels/shape_*.cpp) run through a session: shapes
// computed from data are checked and refused with an error naming the node, never an
// out-of-bounds access; data movement is checked against naive loops.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <numeric>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/runtime/session.hpp"

using namespace inferopt;
using runtime::shape_t;
using runtime::tensor;

namespace {

/// Attributes are move-only, so a braced list cannot hold them.
template <class... A>
std::vector<ir::attribute> attrs(A&&... a) {
  std::vector<ir::attribute> v;
  (v.push_back(std::forward<A>(a)), ...);
  return v;
}

struct feed {
  std::string name;
  tensor value;
};

/// Runs one `op` node named `node_under_test` over graph inputs named and typed after `feeds`
/// and returns its outputs in order.
std::vector<tensor> run_node(const std::string& op, const std::vector<feed>& feeds, std::vector<ir::attribute> attributes = {},
                             std::size_t outputs = 1, std::int64_t opset = 17) {
  ir::model m = ir::make_model("single_node", opset);
  ir::graph_builder b(m.graph());
  ir::node_spec spec;
  spec.op_type = op;
  spec.name = "node_under_test";
  spec.attributes = std::move(attributes);
  runtime::tensor_map map;
  for (const feed& f : feeds) {
    spec.inputs.push_back(b.input(f.name, f.value.dtype(), ir::shape(f.value.shape().begin(), f.value.shape().end())));
    map[f.name] = f.value;
  }
  for (std::size_t k = 0; k < outputs; ++k) spec.outputs.push_back("out" + std::to_string(k));
  ir::node* n = m.graph().add_node(std::move(spec));
  for (ir::value* v : n->outputs()) b.output(v);
  runtime::session s(m, runtime::session_options{.threads = 2});
  runtime::tensor_map result = s.run(map);
  std::vector<tensor> out;
  for (std::size_t k = 0; k < outputs; ++k) out.push_back(result.at("out" + std::to_string(k)));
  return out;
}

tensor iota_tensor(shape_t shape) {
  std::vector<float> values(static_cast<std::size_t>(ir::tensor::element_count(shape)));
  std::iota(values.begin(), values.end(), 0.0f);
  return tensor::from_values<float>(std::move(shape), values);
}

tensor i64(shape_t shape, std::vector<std::int64_t> values) { return tensor::from_values<std::int64_t>(std::move(shape), values); }

/// Expects `fn` to throw inferopt::error naming the node under test and containing `what`.
template <class Fn>
void require_node_error(Fn&& fn, const std::string& what) {
  try {
    fn();
  } catch (const error& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK(message.find("node_under_test") != std::string::npos);
    CHECK(message.find(what) != std::string::npos);
    return;
  }
  FAIL("no error was thrown");
}

}  // namespace

TEST_CASE("gather with an out-of-range index fails naming the node", "[runtime][shape]") {
  const tensor data = iota_tensor({3, 4});
  SECTION("past the end") {
    require_node_error([&] { run_node("Gather", {{"data", data}, {"idx", i64({2}, {0, 3})}}); }, "out of range");
  }
  SECTION("below minus the dim") {
    require_node_error([&] { run_node("Gather", {{"data", data}, {"idx", i64({1}, {-4})}}); }, "out of range");
  }
  SECTION("a negative index inside the dim counts from the end") {
    const tensor y = run_node("Gather", {{"data", data}, {"idx", i64({1}, {-1})}})[0];
    CHECK(y.shape() == shape_t{1, 4});
    CHECK(y.to_float() == std::vector<float>{8, 9, 10, 11});
  }
}

TEST_CASE("gather elements refuses indices beyond the data", "[runtime][shape]") {
  const tensor data = iota_tensor({2, 2});
  require_node_error([&] { run_node("GatherElements", {{"data", data}, {"idx", i64({2, 2}, {0, 1, 2, 0})}}); },
                     "out of range");
  require_node_error([&] { run_node("GatherElements", {{"data", data}, {"idx", i64({3, 2}, {0, 0, 0, 0, 0, 0})}}, attrs(ir::attribute::make_int("axis", 1))); },
                     "do not fit");
}

TEST_CASE("reshape refuses a target shape that does not fit", "[runtime][shape]") {
  const tensor x = iota_tensor({2, 3});
  SECTION("wrong element count") {
    require_node_error([&] { run_node("Reshape", {{"x", x}, {"shape", i64({2}, {4, 2})}}); }, "cannot reshape");
  }
  SECTION("-1 that cannot be inferred") {
    require_node_error([&] { run_node("Reshape", {{"x", x}, {"shape", i64({2}, {4, -1})}}); }, "cannot be inferred");
  }
  SECTION("two -1") {
    require_node_error([&] { run_node("Reshape", {{"x", x}, {"shape", i64({2}, {-1, -1})}}); }, "more than one -1");
  }
  SECTION("a negative dim") {
    require_node_error([&] { run_node("Reshape", {{"x", x}, {"shape", i64({2}, {-2, -3})}}); }, "negative");
  }
  SECTION("0 copies the input dim and -1 takes the rest, sharing storage") {
    const tensor y = run_node("Reshape", {{"x", x}, {"shape", i64({3}, {0, -1, 1})}})[0];
    CHECK(y.shape() == shape_t{2, 3, 1});
    CHECK(y.to_float() == x.to_float());
  }
}

TEST_CASE("concat refuses inputs whose shapes differ outside the axis", "[runtime][shape]") {
  require_node_error([&] { run_node("Concat", {{"a", iota_tensor({2, 3})}, {"b", iota_tensor({3, 3})}}, attrs(ir::attribute::make_int("axis", 1))); },
                     "does not match");
  require_node_error([&] { run_node("Concat", {{"a", iota_tensor({2, 3})}, {"b", iota_tensor({2, 3, 1})}}, attrs(ir::attribute::make_int("axis", 0))); },
                     "does not match");
  const tensor y = run_node("Concat", {{"a", iota_tensor({2, 1})}, {"b", iota_tensor({2, 2})}}, attrs(ir::attribute::make_int("axis", 1)))[0];
  CHECK(y.shape() == shape_t{2, 3});
  CHECK(y.to_float() == std::vector<float>{0, 0, 1, 1, 2, 3});
}

TEST_CASE("expand refuses a target shape that does not broadcast", "[runtime][shape]") {
  const tensor x = iota_tensor({2, 3});
  require_node_error([&] { run_node("Expand", {{"x", x}, {"shape", i64({2}, {4, 3})}}); }, "do not broadcast");
  require_node_error([&] { run_node("Expand", {{"x", x}, {"shape", i64({2}, {-1, 3})}}); }, "negative");
  const tensor y = run_node("Expand", {{"x", iota_tensor({3, 1})}, {"shape", i64({3}, {2, 1, 2})}})[0];
  CHECK(y.shape() == shape_t{2, 3, 2});
  CHECK(y.to_float() == std::vector<float>{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2});
}

TEST_CASE("slice with a zero step fails naming the node", "[runtime][shape]") {
  const tensor x = iota_tensor({4});
  require_node_error([&] {
    run_node("Slice", {{"x", x}, {"starts", i64({1}, {0})}, {"ends", i64({1}, {4})}, {"axes", i64({1}, {0})}, {"steps", i64({1}, {0})}});
  }, "step");
}

TEST_CASE("slice clamps out-of-range starts and ends like numpy", "[runtime][shape]") {
  const tensor x = iota_tensor({5});
  auto slice = [&](std::int64_t start, std::int64_t end, std::int64_t step) {
    return run_node("Slice", {{"x", x}, {"starts", i64({1}, {start})}, {"ends", i64({1}, {end})}, {"axes", i64({1}, {0})},
                              {"steps", i64({1}, {step})}})[0]
        .to_float();
  };
  CHECK(slice(-100, 100, 1) == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(slice(100, -100, -1) == std::vector<float>{4, 3, 2, 1, 0});
  CHECK(slice(INT64_MAX, INT64_MIN, -2) == std::vector<float>{4, 2, 0});
  CHECK(slice(1, 4, INT64_MAX) == std::vector<float>{1});
  CHECK(slice(3, 1, 1).empty());
  CHECK(slice(-7, -100, -1) == std::vector<float>{0});  // the spec clamps the start to 0; numpy would give []
}

TEST_CASE("tile, range and constant of shape refuse negative sizes", "[runtime][shape]") {
  require_node_error([&] { run_node("Tile", {{"x", iota_tensor({2})}, {"r", i64({1}, {-1})}}); }, "negative");
  require_node_error([&] { run_node("ConstantOfShape", {{"shape", i64({2}, {3, -2})}}); }, "negative");
  require_node_error([&] {
    run_node("Range", {{"a", tensor::from_values<float>({}, {0.0f})}, {"b", tensor::from_values<float>({}, {1.0f})},
                       {"d", tensor::from_values<float>({}, {0.0f})}});
  }, "delta is 0");
}

TEST_CASE("a huge shape read from data is refused, not allocated", "[runtime][shape]") {
  require_node_error([&] { run_node("ConstantOfShape", {{"shape", i64({3}, {1 << 20, 1 << 20, 1 << 20})}}); }, "too large");
  require_node_error([&] { run_node("Expand", {{"x", iota_tensor({1})}, {"shape", i64({2}, {INT64_MAX, 2})}}); }, "overflows");
}

TEST_CASE("split checks its sizes and splits unevenly by num_outputs from opset 18", "[runtime][shape]") {
  const tensor x = iota_tensor({5});
  require_node_error([&] { run_node("Split", {{"x", x}, {"split", i64({2}, {2, 2})}}, {}, 2); }, "does not add up");
  require_node_error([&] { run_node("Split", {{"x", x}}, {}, 2); }, "does not split evenly");
  const auto parts = run_node("Split", {{"x", x}}, attrs(ir::attribute::make_int("num_outputs", 2)), 2, 18);
  CHECK(parts[0].to_float() == std::vector<float>{0, 1, 2});
  CHECK(parts[1].to_float() == std::vector<float>{3, 4});
}

TEST_CASE("transpose matches a naive permutation for 4-D tensors", "[runtime][shape]") {
  using row = std::tuple<shape_t, std::vector<std::int64_t>>;
  const auto [shape, perm] = GENERATE(table<shape_t, std::vector<std::int64_t>>({
      row{{2, 3, 4, 5}, {0, 2, 3, 1}},     // NCHW -> NHWC
      row{{2, 4, 5, 3}, {0, 3, 1, 2}},     // NHWC -> NCHW
      row{{3, 37, 41, 2}, {3, 1, 2, 0}},   // odd sizes across tile edges
      row{{1, 64, 33, 1}, {0, 2, 1, 3}},   // unit dims around a 2-D transpose
      row{{2, 1, 3, 1}, {1, 0, 3, 2}},     // only unit dims move: zero copy
  }));
  CAPTURE(shape, perm);
  const tensor x = iota_tensor(shape);
  const tensor y = run_node("Transpose", {{"x", x}}, attrs(ir::attribute::make_ints("perm", perm)))[0];
  shape_t out_shape(4);
  for (std::size_t k = 0; k < 4; ++k) out_shape[k] = shape[static_cast<std::size_t>(perm[k])];
  REQUIRE(y.shape() == out_shape);
  const std::vector<float> in = x.to_float();
  const std::vector<float> got = y.to_float();
  std::vector<std::int64_t> in_strides(4, 1);
  for (std::size_t k = 3; k-- > 0;) in_strides[k] = in_strides[k + 1] * shape[k + 1];
  std::size_t flat = 0;
  bool same = true;
  for (std::int64_t a = 0; a < out_shape[0]; ++a) {
    for (std::int64_t b = 0; b < out_shape[1]; ++b) {
      for (std::int64_t c = 0; c < out_shape[2]; ++c) {
        for (std::int64_t d = 0; d < out_shape[3]; ++d) {
          const std::int64_t idx[4] = {a, b, c, d};
          std::int64_t offset = 0;
          for (std::size_t k = 0; k < 4; ++k) offset += idx[k] * in_strides[static_cast<std::size_t>(perm[k])];
          same = same && got[flat++] == in[static_cast<std::size_t>(offset)];
        }
      }
    }
  }
  CHECK(same);
}

TEST_CASE("shape ops move any element type by width", "[runtime][shape]") {
  const tensor x = tensor::from_values<std::uint16_t>({2, 2}, {1, 2, 3, 4});
  tensor flags(ir::data_type::boolean, {2, 2});
  const std::uint8_t bits[] = {1, 0, 0, 1};
  std::memcpy(flags.mutable_raw(), bits, sizeof bits);
  CHECK(run_node("Transpose", {{"x", x}})[0].to_int64() == std::vector<std::int64_t>{1, 3, 2, 4});
  const tensor t = run_node("Transpose", {{"x", flags}})[0];
  CHECK(t.dtype() == ir::data_type::boolean);
  CHECK(t.to_int64() == std::vector<std::int64_t>{1, 0, 0, 1});
}

TEST_CASE("pad supports constant, reflect and edge modes and crops with negative pads", "[runtime][shape]") {
  const tensor x = iota_tensor({3});
  auto pad = [&](const char* mode, std::vector<std::int64_t> pads) {
    return run_node("Pad", {{"x", x}, {"pads", i64({2}, std::move(pads))}}, attrs(ir::attribute::make_string("mode", mode)))[0].to_float();
  };
  CHECK(pad("constant", {2, 1}) == std::vector<float>{0, 0, 0, 1, 2, 0});
  CHECK(pad("reflect", {2, 2}) == std::vector<float>{2, 1, 0, 1, 2, 1, 0});
  CHECK(pad("edge", {1, 2}) == std::vector<float>{0, 0, 1, 2, 2, 2});
  CHECK(pad("constant", {-1, 1}) == std::vector<float>{1, 2, 0});
  require_node_error([&] { pad("constant", {-2, -2}); }, "invalid size");
}

TEST_CASE("float linear resize of the last two axes agrees with the double path", "[runtime][shape][resize]") {
  // Float inputs take resize_bilinear_float; double inputs take the general separable path,
  // which follows the ONNX reference. Both must give the same numbers.
  struct resize_case {
    shape_t shape;
    std::vector<float> scales;
  };
  const resize_case c = GENERATE(resize_case{{2, 3, 4, 5}, {1, 1, 2, 3}},       // up
                                 resize_case{{1, 2, 7, 9}, {1, 1, 0.5f, 0.6f}},  // down
                                 resize_case{{1, 2, 4, 4}, {1, 1, 16, 16}},      // DeepLab's head
                                 resize_case{{1, 2, 4, 4}, {1, 1, 1, 2.5f}},     // width only
                                 resize_case{{1, 2, 5, 3}, {1, 1, 1.5f, 1}},     // height only
                                 resize_case{{3, 5, 6}, {1, 2, 2}},              // rank 3
                                 resize_case{{1, 2, 2, 3, 3}, {1, 1, 1, 2, 2}},  // rank 5
                                 resize_case{{1, 2, 3, 3}, {1, 2, 2, 2}});       // channels too: general path
  const std::string coordinates = GENERATE("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric");
  const int exclude_outside = GENERATE(0, 1);
  CAPTURE(c.shape, c.scales, coordinates, exclude_outside);

  std::vector<float> values(static_cast<std::size_t>(ir::tensor::element_count(c.shape)));
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = std::sin(0.7f * static_cast<float>(k)) * 3.0f;
  const std::vector<double> wide(values.begin(), values.end());
  const tensor scales = tensor::from_values<float>({static_cast<std::int64_t>(c.scales.size())}, c.scales);
  const tensor roi = tensor::from_values<float>({0}, std::vector<float>{});
  const auto resized = [&](tensor x) {
    return run_node("Resize", {{"x", std::move(x)}, {"roi", roi}, {"scales", scales}},
                    attrs(ir::attribute::make_string("mode", "linear"),
                          ir::attribute::make_string("coordinate_transformation_mode", coordinates),
                          ir::attribute::make_int("exclude_outside", exclude_outside)))[0];
  };
  const tensor narrow = resized(tensor::from_values<float>(c.shape, values));
  const tensor reference = resized(tensor::from_values<double>(c.shape, wide));
  REQUIRE(narrow.shape() == reference.shape());
  for (std::int64_t k = 0; k < narrow.element_count(); ++k) {
    CAPTURE(k);
    REQUIRE(narrow.data<float>()[k] == Approx(reference.data<double>()[k]).margin(1e-5));
  }
}
