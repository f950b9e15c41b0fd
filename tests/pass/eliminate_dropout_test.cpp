// eliminate-dropout: removes Dropout nodes that are the identity at inference, following each
// opset's definition of Dropout.
//
// No numeric check against runtime/: a removed Dropout is the identity at inference by the
// operator's definition, and the rewrite only reconnects edges; the structural checks below
// are exact.

#include "inferopt/pass/cleanup/eliminate_dropout.hpp"

#include <catch2/catch.hpp>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "pass/pass_test_util.hpp"

using namespace inferopt;

namespace {

/// `x -> Relu -> Dropout -> Neg -> y` at a given opset; the Dropout's extra inputs,
/// attributes and mask output are up to each test.
struct dropout_graph {
  ir::model m;
  ir::value* data = nullptr;  // the Relu output the Dropout reads
  ir::node* neg = nullptr;

  explicit dropout_graph(std::int64_t opset) : m(ir::make_model("dropout", opset)) {
    ir::value* x = m.graph().add_input("x", test::float_type({2, 3}));
    data = test::add_op(m.graph(), "Relu", {x}, "relu")->output(0);
  }

  ir::node* add_dropout(std::vector<ir::value*> extra_inputs = {}, std::vector<ir::attribute> attrs = {},
                        bool with_mask = false, std::string domain = {}) {
    std::vector<ir::value*> inputs{data};
    inputs.insert(inputs.end(), extra_inputs.begin(), extra_inputs.end());
    std::vector<std::string> outputs{"drop_out"};
    if (with_mask) outputs.emplace_back("drop_mask");
    ir::node* d = test::add_op(m.graph(), "Dropout", std::move(inputs), "drop", std::move(outputs), std::move(attrs),
                               std::move(domain));
    neg = test::add_op(m.graph(), "Neg", {d->output(0)}, "neg", {"y"});
    m.graph().add_output(neg->output(0));
    return d;
  }

  ir::value* ratio() { return ir::graph_builder(m.graph()).constant("ratio", {}, {0.5f}); }
  ir::value* constant_bool(const std::string& name, bool v) { return m.graph().add_initializer(name, test::bool_scalar(v)); }
  ir::value* constant_node_bool(const std::string& name, bool v) {
    std::vector<ir::attribute> attrs;
    attrs.push_back(ir::attribute::make_tensor("value", test::bool_scalar(v)));
    return test::add_op(m.graph(), "Constant", {}, name + "_node", {name}, std::move(attrs))->output(0);
  }
};

std::vector<ir::attribute> attrs(std::int64_t is_test, std::optional<float> ratio = std::nullopt) {
  std::vector<ir::attribute> out;
  if (is_test >= 0) out.push_back(ir::attribute::make_int("is_test", is_test));
  if (ratio) out.push_back(ir::attribute::make_float("ratio", *ratio));
  return out;
}

pass_record run(ir::model& m) {
  run_report r = test::run_cleanups(m, "eliminate-dropout");
  CHECK(ir::find_problems(m.graph()).empty());
  REQUIRE(r.passes.size() == 1);
  return r.passes[0];
}

/// Runs the pass, requires that it removed the one Dropout and that Neg now reads its data.
void require_removed(dropout_graph& d) {
  pass_record r = run(d.m);
  CHECK(r.changed);
  CHECK(r.rewrites == 1);
  CHECK(r.counters.at("dropouts-removed") == 1);
  CHECK(test::count_ops(d.m.graph(), "Dropout") == 0);
  CHECK(d.neg->input(0) == d.data);
  CHECK(test::output_names(d.m.graph()) == std::vector<std::string>{"y"});
}

/// Runs the pass and requires the graph unchanged; returns the record for its statistics.
pass_record require_declined(ir::model& m) {
  const std::string before = test::bytes_of(m);
  pass_record r = run(m);
  CHECK_FALSE(r.changed);
  CHECK(r.rewrites == 0);
  CHECK(test::bytes_of(m) == before);
  return r;
}

}  // namespace

// ---- opsets 1-6: the is_test attribute ------------------------------------------------

TEST_CASE("eliminate-dropout at opset 6 removes a Dropout with is_test=1", "[pass][eliminate-dropout]") {
  dropout_graph d(6);
  d.add_dropout({}, attrs(1, 0.5f));
  require_removed(d);
}

TEST_CASE("eliminate-dropout at opset 6 removes a Dropout with ratio=0", "[pass][eliminate-dropout]") {
  dropout_graph d(6);
  d.add_dropout({}, attrs(0, 0.0f));
  require_removed(d);
}

TEST_CASE("eliminate-dropout at opset 6 removes an is_test Dropout whose unused mask is declared",
          "[pass][eliminate-dropout]") {
  dropout_graph d(6);
  d.add_dropout({}, attrs(1), /*with_mask=*/true);
  require_removed(d);
}

TEST_CASE("eliminate-dropout at opset 6 declines a training Dropout", "[pass][eliminate-dropout]") {
  dropout_graph d(6);
  SECTION("is_test=0") { d.add_dropout({}, attrs(0, 0.5f)); }
  SECTION("is_test absent (0 by default)") { d.add_dropout({}, attrs(-1)); }
  pass_record r = require_declined(d.m);
  CHECK(r.counters.at("declined-training-mode") == 1);
}

// ---- opsets 7-11: always the identity at inference ---------------------------------

TEST_CASE("eliminate-dropout at opsets 7 to 11 removes every Dropout whose mask is unused",
          "[pass][eliminate-dropout]") {
  const std::int64_t opset = GENERATE(7, 10, 11);
  CAPTURE(opset);
  dropout_graph d(opset);
  SECTION("without a mask") { d.add_dropout({}, attrs(-1, 0.5f)); }
  SECTION("with an unused mask") { d.add_dropout({}, attrs(-1, 0.3f), /*with_mask=*/true); }
  require_removed(d);
}

// ---- opsets 12+: the training_mode input ---------------------------------------------

TEST_CASE("eliminate-dropout at opset 13 removes a Dropout whose training_mode is absent",
          "[pass][eliminate-dropout]") {
  dropout_graph d(13);
  SECTION("data only") { d.add_dropout(); }
  SECTION("data and ratio") { d.add_dropout({d.ratio()}); }
  SECTION("training_mode omitted with an empty name") { d.add_dropout({d.ratio(), nullptr}); }
  SECTION("at opset 12") {
    d.m.opsets = {{"", 12}};
    d.add_dropout({d.ratio()});
  }
  require_removed(d);
}

TEST_CASE("eliminate-dropout at opset 13 removes a Dropout whose training_mode is a constant false",
          "[pass][eliminate-dropout]") {
  dropout_graph d(13);
  SECTION("an initializer") { d.add_dropout({d.ratio(), d.constant_bool("training_mode", false)}); }
  SECTION("a Constant node") { d.add_dropout({d.ratio(), d.constant_node_bool("training_mode", false)}); }
  require_removed(d);
}

TEST_CASE("eliminate-dropout at opset 13 declines a Dropout that may train", "[pass][eliminate-dropout]") {
  dropout_graph d(13);
  SECTION("a constant true initializer") { d.add_dropout({d.ratio(), d.constant_bool("training_mode", true)}); }
  SECTION("a Constant node holding true") { d.add_dropout({d.ratio(), d.constant_node_bool("training_mode", true)}); }
  SECTION("a graph input") {
    ir::value* t = d.m.graph().add_input("training_mode", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
    d.add_dropout({d.ratio(), t});
  }
  SECTION("a graph input whose default is false (the caller may feed true)") {
    ir::value* t = d.m.graph().add_input("training_mode", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
    d.m.graph().set_initializer(t, test::bool_scalar(false));
    d.add_dropout({d.ratio(), t});
  }
  SECTION("a value computed at run time") {
    ir::value* flag = d.m.graph().add_input("flag", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
    ir::value* t = test::add_op(d.m.graph(), "Not", {flag}, "not", {"training_mode"})->output(0);
    d.add_dropout({d.ratio(), t});
  }
  SECTION("a false constant that is not a scalar") {
    ir::tensor t = ir::tensor::from_values<std::uint8_t>("", {2}, std::vector<std::uint8_t>{0, 0});
    t.dtype = ir::data_type::boolean;
    d.add_dropout({d.ratio(), d.m.graph().add_initializer("training_mode", t)});
  }
  pass_record r = require_declined(d.m);
  CHECK(r.counters.at("declined-training-mode") == 1);
}

// ---- conditions shared by every opset --------------------------------------------------

TEST_CASE("eliminate-dropout declines a Dropout whose mask is used", "[pass][eliminate-dropout]") {
  const std::int64_t opset = GENERATE(6, 10, 13);
  CAPTURE(opset);
  dropout_graph d(opset);
  ir::node* drop = d.add_dropout({}, opset < 7 ? attrs(1) : attrs(-1), /*with_mask=*/true);
  SECTION("by a node") {
    ir::node* cast = test::add_op(d.m.graph(), "Cast", {drop->output(1)}, "cast");
    d.m.graph().add_output(cast->output(0));
  }
  SECTION("as a graph output") { d.m.graph().add_output(drop->output(1)); }
  pass_record r = require_declined(d.m);
  CHECK(r.counters.at("declined-mask-used") == 1);
}

TEST_CASE("eliminate-dropout declines a Dropout outside the default domain", "[pass][eliminate-dropout]") {
  dropout_graph d(13);
  d.add_dropout({}, {}, false, "com.example");
  require_declined(d.m);
}

TEST_CASE("eliminate-dropout removes a Dropout producing a graph output and keeps the output's name",
          "[pass][eliminate-dropout]") {
  ir::model m = ir::make_model("tail", 13);
  ir::value* x = m.graph().add_input("x", test::float_type({2}));
  ir::node* relu = test::add_op(m.graph(), "Relu", {x}, "relu");
  ir::node* drop = test::add_op(m.graph(), "Dropout", {relu->output(0)}, "drop", {"y"});
  m.graph().add_output(drop->output(0));

  pass_record r = run(m);
  CHECK(r.changed);
  CHECK(test::count_ops(m.graph(), "Dropout") == 0);
  REQUIRE(test::output_names(m.graph()) == std::vector<std::string>{"y"});
  CHECK(m.graph().outputs()[0]->producer() == relu);
}

TEST_CASE("eliminate-dropout declines a Dropout from a graph input straight to a graph output",
          "[pass][eliminate-dropout]") {
  ir::model m = ir::make_model("passthrough", 13);
  ir::value* x = m.graph().add_input("x", test::float_type({2}));
  ir::node* drop = test::add_op(m.graph(), "Dropout", {x}, "drop", {"y"});
  m.graph().add_output(drop->output(0));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-output-name") == 1);
}

TEST_CASE("eliminate-dropout run twice gives the same graph as run once", "[pass][eliminate-dropout]") {
  ir::model m = ir::make_default_model();
  REQUIRE(test::count_ops(m.graph(), "Dropout") == 1);
  pass_record first = run(m);
  CHECK(first.rewrites == 1);
  const std::string once = test::bytes_of(m);
  pass_record second = run(m);
  CHECK_FALSE(second.changed);
  CHECK(test::bytes_of(m) == once);
}
