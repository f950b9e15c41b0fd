// fuse-pad-into-conv: a zero Pad before a Conv or AveragePool becomes part of its pads.
//
// Numbers are checked with require_same_outputs at rtol 1e-4: the fused Conv sums the same
// products in the same order, so only float rounding of the kernel could differ.

#include "inferopt/fusion/fuse_pad_into_conv.hpp"

#include <catch2/catch.hpp>

#include "fusion/fusion_test_util.hpp"
#include "inferopt/ir/serialize.hpp"

using namespace inferopt;

namespace {

const test::pass_checker checker("fuse-pad-into-conv");
using test::copy_of;
pass_record run(ir::model& m) { return checker.run(m); }
pass_record require_declined(ir::model& m) { return checker.require_declined(m); }

/// x[1,2,5,5] -> Pad(pads) -> Conv 3x3 (pads 1) or AveragePool 3x3 -> graph output.
struct pad_chain {
  ir::model m;
  ir::node* pad = nullptr;
  ir::node* consumer = nullptr;
};

pad_chain make_chain(std::int64_t opset, std::vector<std::int64_t> pads, bool conv = true,
                     std::vector<ir::attribute> pad_attrs = {}) {
  pad_chain c{ir::make_model("pad", opset)};
  ir::graph& g = c.m.graph();
  ir::graph_builder b(g);
  ir::value* x = b.input("x", ir::data_type::float32, {1, 2, 5, 5});
  if (opset < 11) {
    pad_attrs.push_back(ir::attribute::make_ints("pads", pads));
    c.pad = test::add_op(g, "Pad", {x}, "pad", {}, std::move(pad_attrs));
  } else {
    c.pad = test::add_op(g, "Pad", {x, b.constant_i64("pads", {static_cast<std::int64_t>(pads.size())}, pads)}, "pad", {},
                         std::move(pad_attrs));
  }
  c.pad->output(0)->set_type(test::float_type({1, 2, 5 + pads[2] + pads[6], 5 + pads[3] + pads[7]}));
  ir::value* y = nullptr;
  if (conv) {
    y = b.conv(c.pad->output(0), 3);
  } else {
    y = b.average_pool(c.pad->output(0), ir::pool_options{3, 1, 0});
    y->producer()->set_attribute(ir::attribute::make_int("count_include_pad", 1));
  }
  c.consumer = y->producer();
  b.output(y);
  return c;
}

}  // namespace

TEST_CASE("fuse-pad-into-conv adds the Pad's spatial pads to the Conv's pads", "[fusion][fuse-pad-into-conv]") {
  const std::int64_t opset = GENERATE(10, 11, 18);
  CAPTURE(opset);
  pad_chain c = make_chain(opset, {0, 0, 1, 2, 0, 0, 0, 1});
  const ir::model before = copy_of(c.m);
  pass_record r = run(c.m);
  CHECK(r.rewrites == 1);
  CHECK(test::count_ops(c.m.graph(), "Pad") == 0);
  CHECK(c.consumer->input(0) == c.m.graph().inputs()[0]);
  CHECK(c.consumer->attr_ints("pads", {}) == std::vector<std::int64_t>{2, 3, 1, 2});
  test::require_same_outputs(before, c.m);
  const std::string once = test::bytes_of(c.m);
  CHECK_FALSE(run(c.m).changed);
  CHECK(test::bytes_of(c.m) == once);
}

TEST_CASE("fuse-pad-into-conv folds into an AveragePool that counts padding", "[fusion][fuse-pad-into-conv]") {
  pad_chain c = make_chain(17, {0, 0, 1, 1, 0, 0, 2, 0}, false);
  const ir::model before = copy_of(c.m);
  run(c.m);
  CHECK(test::count_ops(c.m.graph(), "Pad") == 0);
  CHECK(c.consumer->attr_ints("pads", {}) == std::vector<std::int64_t>{1, 1, 2, 0});
  test::require_same_outputs(before, c.m);
}

TEST_CASE("fuse-pad-into-conv reads the opset 18 axes input", "[fusion][fuse-pad-into-conv]") {
  ir::model m = ir::make_model("axes", 18);
  ir::graph& g = m.graph();
  ir::graph_builder b(g);
  ir::value* x = b.input("x", ir::data_type::float32, {1, 2, 5, 5});
  ir::node* pad = test::add_op(g, "Pad", {x, b.constant_i64("pads", {4}, {1, 0, 0, 2}), nullptr,
                                          b.constant_i64("axes", {2}, {-1, 2})}, "pad");
  pad->output(0)->set_type(test::float_type({1, 2, 7, 6}));
  ir::value* y = b.conv(pad->output(0), 3);
  b.output(y);
  const ir::model before = copy_of(m);
  run(m);
  CHECK(test::count_ops(g, "Pad") == 0);
  // axis 3: begin 1, end 0; axis 2: begin 0, end 2 -> pads {h_begin, w_begin, h_end, w_end} + 1
  CHECK(y->producer()->attr_ints("pads", {}) == std::vector<std::int64_t>{1, 2, 3, 1});
  test::require_same_outputs(before, m);
}

TEST_CASE("fuse-pad-into-conv declines a Pad it cannot absorb", "[fusion][fuse-pad-into-conv]") {
  SECTION("reflect mode") {
    pad_chain c = make_chain(17, {0, 0, 1, 1, 0, 0, 1, 1}, true, [] {
      std::vector<ir::attribute> a;
      a.push_back(ir::attribute::make_string("mode", "reflect"));
      return a;
    }());
    require_declined(c.m);
  }
  SECTION("a non-zero value attribute before opset 11") {
    pad_chain c = make_chain(10, {0, 0, 1, 1, 0, 0, 1, 1}, true, [] {
      std::vector<ir::attribute> a;
      a.push_back(ir::attribute::make_float("value", 1.0f));
      return a;
    }());
    require_declined(c.m);
  }
  SECTION("a non-zero value input") {
    pad_chain c = make_chain(17, {0, 0, 1, 1, 0, 0, 1, 1});
    ir::graph_builder b(c.m.graph());
    c.m.graph().set_input(c.pad, 2, b.constant("value", {}, {0.5f}));
    require_declined(c.m);
  }
  SECTION("a pad on the channel axis") {
    pad_chain c = make_chain(17, {0, 1, 1, 1, 0, 0, 1, 1});
    require_declined(c.m);
  }
  SECTION("a negative pad") {
    pad_chain c = make_chain(17, {0, 0, -1, 0, 0, 0, 1, 1});
    require_declined(c.m);
  }
  SECTION("pads that are not constant") {
    pad_chain c = make_chain(17, {0, 0, 1, 1, 0, 0, 1, 1});
    c.m.graph().set_input(c.pad, 1, c.m.graph().add_input("pads_in", ir::value_type{true, ir::data_type::int64, ir::shape{8}}));
    require_declined(c.m);
  }
  SECTION("a Pad with a second reader") {
    pad_chain c = make_chain(17, {0, 0, 1, 1, 0, 0, 1, 1});
    c.m.graph().add_output(c.pad->output(0));
    require_declined(c.m);
  }
  SECTION("a Conv with auto_pad") {
    pad_chain c = make_chain(17, {0, 0, 1, 1, 0, 0, 1, 1});
    c.consumer->remove_attribute("pads");
    c.consumer->set_attribute(ir::attribute::make_string("auto_pad", "SAME_UPPER"));
    require_declined(c.m);
  }
  SECTION("an AveragePool that does not count padding") {
    pad_chain c = make_chain(17, {0, 0, 1, 1, 0, 0, 1, 1}, false);
    c.consumer->set_attribute(ir::attribute::make_int("count_include_pad", 0));
    require_declined(c.m);
  }
  SECTION("an AveragePool in ceil mode") {
    pad_chain c = make_chain(17, {0, 0, 1, 1, 0, 0, 1, 1}, false);
    c.consumer->set_attribute(ir::attribute::make_int("ceil_mode", 1));
    require_declined(c.m);
  }
  SECTION("a MaxPool") {
    pad_chain c = make_chain(17, {0, 0, 1, 1, 0, 0, 1, 1}, false);
    c.consumer->set_op_type("MaxPool");
    require_declined(c.m);
  }
}
