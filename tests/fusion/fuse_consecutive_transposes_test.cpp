// fuse-consecutive-transposes: Transpose -> Transpose becomes one Transpose, or none.
//
// Numbers are checked with require_same_outputs at its default rtol 1e-4; a transpose only
// moves elements, so any difference at all would be a wrong permutation.

#include "inferopt/fusion/fuse_consecutive_transposes.hpp"

#include <catch2/catch.hpp>

#include "fusion/fusion_test_util.hpp"
#include "inferopt/ir/serialize.hpp"

using namespace inferopt;

namespace {

const test::pass_checker checker("fuse-consecutive-transposes");
using test::copy_of;
pass_record run(ir::model& m) { return checker.run(m); }
pass_record require_declined(ir::model& m) { return checker.require_declined(m); }

ir::attribute perm(std::vector<std::int64_t> p) { return ir::attribute::make_ints("perm", std::move(p)); }

/// x[2,3,4] -> Relu -> Transpose(p1) -> Transpose(p2) -> Neg -> graph output.
struct chain {
  ir::model m = ir::make_model("transposes");
  ir::node* relu = nullptr;
  ir::node* first = nullptr;
  ir::node* second = nullptr;
  ir::node* neg = nullptr;
};

chain make_chain(std::vector<std::int64_t> p1, std::vector<std::int64_t> p2) {
  chain c;
  ir::graph& g = c.m.graph();
  ir::value* x = g.add_input("x", test::float_type({2, 3, 4}));
  c.relu = test::add_op(g, "Relu", {x}, "relu");
  std::vector<ir::attribute> a1;
  if (!p1.empty()) a1.push_back(perm(std::move(p1)));
  c.first = test::add_op(g, "Transpose", {c.relu->output(0)}, "t1", {}, std::move(a1));
  std::vector<ir::attribute> a2;
  if (!p2.empty()) a2.push_back(perm(std::move(p2)));
  c.second = test::add_op(g, "Transpose", {c.first->output(0)}, "t2", {}, std::move(a2));
  c.neg = test::add_op(g, "Neg", {c.second->output(0)}, "neg");
  g.add_output(c.neg->output(0));
  return c;
}

}  // namespace

TEST_CASE("fuse-consecutive-transposes composes two perms into one Transpose",
          "[fusion][fuse-consecutive-transposes]") {
  chain c = make_chain({1, 2, 0}, {1, 0, 2});
  const ir::model before = copy_of(c.m);
  pass_record r = run(c.m);
  CHECK(r.changed);
  CHECK(r.rewrites == 1);
  CHECK(test::count_ops(c.m.graph(), "Transpose") == 1);
  CHECK(c.second->input(0) == c.relu->output(0));
  // c[i] = p1[p2[i]] = {p1[1], p1[0], p1[2]}
  CHECK(c.second->attr_ints("perm", {}) == std::vector<std::int64_t>{2, 1, 0});
  test::require_same_outputs(before, c.m);
}

TEST_CASE("fuse-consecutive-transposes removes a pair that cancels", "[fusion][fuse-consecutive-transposes]") {
  chain c = make_chain({1, 2, 0}, {2, 0, 1});
  const ir::model before = copy_of(c.m);
  pass_record r = run(c.m);
  CHECK(r.counters.at("transposes-cancelled") == 1);
  CHECK(test::count_ops(c.m.graph(), "Transpose") == 0);
  CHECK(c.neg->input(0) == c.relu->output(0));
  test::require_same_outputs(before, c.m);
}

TEST_CASE("fuse-consecutive-transposes reads omitted perms as reversing a known rank",
          "[fusion][fuse-consecutive-transposes]") {
  chain c = make_chain({}, {});
  c.relu->output(0)->set_type(test::float_type({2, 3, 4}));
  c.first->output(0)->set_type(test::float_type({4, 3, 2}));
  const ir::model before = copy_of(c.m);
  run(c.m);
  CHECK(test::count_ops(c.m.graph(), "Transpose") == 0);
  test::require_same_outputs(before, c.m);
}

TEST_CASE("fuse-consecutive-transposes declines an omitted perm of unknown rank",
          "[fusion][fuse-consecutive-transposes]") {
  chain c = make_chain({}, {1, 0, 2});
  require_declined(c.m);
}

TEST_CASE("fuse-consecutive-transposes declines perms that are not permutations of one rank",
          "[fusion][fuse-consecutive-transposes]") {
  SECTION("different ranks") {
    chain c = make_chain({1, 0, 2}, {1, 0});
    require_declined(c.m);
  }
  SECTION("a repeated axis") {
    chain c = make_chain({1, 1, 2}, {1, 0, 2});
    require_declined(c.m);
  }
}

TEST_CASE("fuse-consecutive-transposes keeps the first Transpose for its other readers",
          "[fusion][fuse-consecutive-transposes]") {
  chain c = make_chain({0, 2, 1}, {2, 1, 0});
  ir::graph& g = c.m.graph();
  ir::node* other = test::add_op(g, "Sigmoid", {c.first->output(0)}, "other");
  g.add_output(other->output(0));
  const ir::model before = copy_of(c.m);
  run(c.m);
  CHECK(test::count_ops(g, "Transpose") == 2);
  CHECK_FALSE(c.first->is_dead());
  CHECK(c.second->input(0) == c.relu->output(0));
  CHECK(c.second->attr_ints("perm", {}) == std::vector<std::int64_t>{1, 2, 0});
  test::require_same_outputs(before, c.m);
}

TEST_CASE("fuse-consecutive-transposes keeps the output name when a cancelling pair ends the graph",
          "[fusion][fuse-consecutive-transposes]") {
  ir::model m = ir::make_model("tail");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2, 3}));
  ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
  ir::node* t1 = test::add_op(g, "Transpose", {relu->output(0)}, "t1", {}, [] {
    std::vector<ir::attribute> a;
    a.push_back(perm({1, 0}));
    return a;
  }());
  ir::node* t2 = test::add_op(g, "Transpose", {t1->output(0)}, "t2", {"y"}, [] {
    std::vector<ir::attribute> a;
    a.push_back(perm({1, 0}));
    return a;
  }());
  g.add_output(t2->output(0));
  const ir::model before = copy_of(m);
  run(m);
  CHECK(test::count_ops(g, "Transpose") == 0);
  CHECK(test::output_names(g) == std::vector<std::string>{"y"});
  CHECK(g.outputs()[0]->producer() == relu);
  test::require_same_outputs(before, m);
}

TEST_CASE("fuse-consecutive-transposes leaves an identity Transpose when a graph input cannot take the output name",
          "[fusion][fuse-consecutive-transposes]") {
  ir::model m = ir::make_model("passthrough");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2, 3}));
  std::vector<ir::attribute> a1;
  a1.push_back(perm({1, 0}));
  std::vector<ir::attribute> a2;
  a2.push_back(perm({1, 0}));
  ir::node* t1 = test::add_op(g, "Transpose", {x}, "t1", {}, std::move(a1));
  ir::node* t2 = test::add_op(g, "Transpose", {t1->output(0)}, "t2", {"y"}, std::move(a2));
  g.add_output(t2->output(0));
  const ir::model before = copy_of(m);
  pass_record r = run(m);
  CHECK(r.counters.at("declined-output-name") == 1);
  CHECK(test::count_ops(g, "Transpose") == 1);
  CHECK(t2->input(0) == x);
  CHECK(test::output_names(g) == std::vector<std::string>{"y"});
  test::require_same_outputs(before, m);
}

TEST_CASE("fuse-consecutive-transposes declines a Transpose of another domain", "[fusion][fuse-consecutive-transposes]") {
  chain c = make_chain({1, 0, 2}, {1, 0, 2});
  c.first->set_domain("com.example");
  require_declined(c.m);
}

TEST_CASE("fuse-consecutive-transposes collapses a chain of three in one run and is then idempotent",
          "[fusion][fuse-consecutive-transposes]") {
  chain c = make_chain({1, 2, 0}, {1, 0, 2});
  ir::graph& g = c.m.graph();
  std::vector<ir::attribute> a3;
  a3.push_back(perm({2, 0, 1}));
  ir::node* third = test::add_op(g, "Transpose", {c.second->output(0)}, "t3", {}, std::move(a3));
  g.move_before(third, c.neg);
  g.set_input(c.neg, 0, third->output(0));
  const ir::model before = copy_of(c.m);
  run(c.m);
  CHECK(test::count_ops(g, "Transpose") == 1);
  test::require_same_outputs(before, c.m);
  const std::string once = test::bytes_of(c.m);
  CHECK_FALSE(run(c.m).changed);
  CHECK(test::bytes_of(c.m) == once);
}
