// trim-dead-conv-taps: kernel taps that read only padding are removed from W and the pads.
//
// Numbers are checked with require_same_outputs at rtol 1e-4: the removed taps multiplied
// zeros, so the trimmed conv sums the same nonzero products.

#include "inferopt/fusion/trim_dead_conv_taps.hpp"

#include <catch2/catch.hpp>

#include "fusion/fusion_test_util.hpp"
#include "support/conv_attributes.hpp"

using namespace inferopt;

namespace {

const test::pass_checker checker("trim-dead-conv-taps");
using ints = std::vector<std::int64_t>;

struct conv_model {
  ir::model m;
  ir::node* conv = nullptr;
};

/// x[x_dims] -> Conv(W random of w_dims, bias, attrs) -> graph output.
conv_model make_conv(ir::shape x_dims, ints w_dims, std::vector<ir::attribute> attrs) {
  conv_model c{ir::make_model("conv", 17)};
  ir::graph& g = c.m.graph();
  ir::graph_builder b(g, 3);
  ir::value* x = b.input("x", ir::data_type::float32, std::move(x_dims));
  ir::value* w = b.random_constant("w", w_dims, 0.5f);
  ir::value* bias = b.random_constant("b", {w_dims[0]}, 0.5f);
  c.conv = test::add_op(g, "Conv", {x, w, bias}, "conv", {}, std::move(attrs));
  b.output(c.conv->output(0));
  return c;
}

std::vector<ir::attribute> conv_attributes(ints kernel, ints strides, ints pads, ints dilations) {
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_ints("kernel_shape", std::move(kernel)));
  attrs.push_back(ir::attribute::make_ints("strides", std::move(strides)));
  attrs.push_back(ir::attribute::make_ints("pads", std::move(pads)));
  attrs.push_back(ir::attribute::make_ints("dilations", std::move(dilations)));
  return attrs;
}

ints weight_dims(const conv_model& c) { return ir::constant_tensor(c.conv->input(1), c.m.ir_version)->dims; }

}  // namespace

TEST_CASE("trim-dead-conv-taps turns an ASPP conv whose off-center taps read only padding into a 1x1 conv",
          "[fusion][trim-dead-conv-taps]") {
  const std::int64_t dilation = GENERATE(4, 12, 36);
  CAPTURE(dilation);
  conv_model c = make_conv({1, 6, 4, 4}, {5, 6, 3, 3}, test::square_conv_attributes(3, 1, dilation, dilation, 1));
  const pass_record r = checker.run_and_compare(c.m);
  CHECK(r.rewrites == 1);
  CHECK(weight_dims(c) == ints{5, 6, 1, 1});
  CHECK(c.conv->attr_ints("pads", {}) == ints{0, 0, 0, 0});
  CHECK(c.conv->attr_ints("dilations", {}) == ints{1, 1});
  CHECK(c.conv->attr_ints("kernel_shape", {}) == ints{1, 1});
}

TEST_CASE("trim-dead-conv-taps keeps the live ring of a dilated depthwise conv", "[fusion][trim-dead-conv-taps]") {
  // 5x5 at dilation 2 on 4x4 (MobileNetV3's last blocks in DeepLab): offsets +-4 never land
  // inside, +-2 sometimes do.
  conv_model c = make_conv({"batch", 8, 4, 4}, {8, 1, 5, 5}, test::square_conv_attributes(5, 1, 4, 2, 8));
  checker.run_and_compare(c.m);
  CHECK(weight_dims(c) == ints{8, 1, 3, 3});
  CHECK(c.conv->attr_ints("pads", {}) == ints{2, 2, 2, 2});
  CHECK(c.conv->attr_ints("dilations", {}) == ints{2, 2});
}

TEST_CASE("trim-dead-conv-taps trims each axis on its own, strided and 1-D and 3-D convs too",
          "[fusion][trim-dead-conv-taps]") {
  SECTION("a 1-high input loses the kernel's top and bottom rows only") {
    conv_model c = make_conv({1, 3, 1, 7}, {4, 3, 3, 3}, test::square_conv_attributes(3, 2, 1, 1, 1));
    checker.run_and_compare(c.m);
    CHECK(weight_dims(c) == ints{4, 3, 1, 3});
    CHECK(c.conv->attr_ints("pads", {}) == ints{0, 1, 0, 1});
  }
  SECTION("1-D") {
    conv_model c = make_conv({2, 3, 3}, {4, 3, 5}, conv_attributes({5}, {1}, {6, 6}, {3}));
    checker.run_and_compare(c.m);
    CHECK(weight_dims(c) == ints{4, 3, 1});
    CHECK(c.conv->attr_ints("pads", {}) == ints{0, 0});
  }
  SECTION("3-D") {
    conv_model c = make_conv({1, 2, 2, 5, 5}, {3, 2, 3, 3, 3}, conv_attributes({3, 3, 3}, {1, 1, 1}, {3, 1, 1, 3, 1, 1}, {3, 1, 1}));
    checker.run_and_compare(c.m);
    CHECK(weight_dims(c) == ints{3, 2, 1, 3, 3});
    CHECK(c.conv->attr_ints("pads", {}) == ints{0, 1, 1, 0, 1, 1});
  }
}

TEST_CASE("trim-dead-conv-taps keeps a dead tap whose removal would need a negative pad", "[fusion][trim-dead-conv-taps]") {
  // Height 3, kernel 3 at dilation 3, pads (1, 3): one output row, its taps at rows -1, 2, 5.
  // Tap 0 is dead but removing it would make the top pad 1 - 3 < 0; tap 2 goes.
  conv_model c = make_conv({1, 2, 3, 3}, {2, 2, 3, 1}, conv_attributes({3, 1}, {1, 1}, {1, 0, 3, 0}, {3, 1}));
  checker.run_and_compare(c.m);
  CHECK(weight_dims(c) == ints{2, 2, 2, 1});
  CHECK(c.conv->attr_ints("pads", {}) == ints{1, 0, 0, 0});
}

TEST_CASE("trim-dead-conv-taps declines convs it cannot or need not trim", "[fusion][trim-dead-conv-taps]") {
  SECTION("every tap reads the input somewhere") {
    conv_model c = make_conv({1, 3, 8, 8}, {4, 3, 3, 3}, test::square_conv_attributes(3, 1, 1, 1, 1));
    checker.require_declined(c.m);
  }
  SECTION("only a middle tap is dead: height 1, stride 2, pads 2") {
    conv_model c = make_conv({1, 2, 1, 1}, {2, 2, 3, 1}, conv_attributes({3, 1}, {2, 1}, {2, 0, 2, 0}, {1, 1}));
    checker.require_declined(c.m);
  }
  SECTION("every tap is dead: the output is the bias") {
    conv_model c = make_conv({1, 2, 1, 1}, {2, 2, 1, 1}, conv_attributes({1, 1}, {3, 1}, {2, 0, 2, 0}, {1, 1}));
    const pass_record r = checker.require_declined(c.m);
    CHECK(r.counters.at("declined-all-taps-dead") == 1);
  }
  SECTION("the spatial dims are not known") {
    conv_model c = make_conv({1, 6, "h", "w"}, {5, 6, 3, 3}, test::square_conv_attributes(3, 1, 12, 12, 1));
    checker.require_declined(c.m);
  }
  SECTION("auto_pad") {
    std::vector<ir::attribute> attrs;
    attrs.push_back(ir::attribute::make_ints("dilations", {12, 12}));
    attrs.push_back(ir::attribute::make_string("auto_pad", "SAME_UPPER"));
    conv_model c = make_conv({1, 6, 4, 4}, {5, 6, 3, 3}, std::move(attrs));
    checker.require_declined(c.m);
  }
}
