#include <onnx/defs/schema.h>

#include <catch2/catch.hpp>

#include "ir/test_graphs.hpp"
#include "opset_test_util.hpp"

using namespace inferopt;

namespace {

ir::model unsqueeze_model(std::int64_t opset) {
  test::opset_model b(opset);
  ir::value* x = b.input("x", {2, 3});
  b.output_of(b.node("Unsqueeze", {x}, ir::attribute_list(ir::attribute::make_ints("axes", {0}))));
  return std::move(b.m);
}

}  // namespace

TEST_CASE("convert_opset leaves a model already at the target as it is", "[ir][convert-opset]") {
  ir::model m = unsqueeze_model(11);
  const std::string before = ir::serialize_model(m);
  const ir::opset_conversion_report r = ir::convert_opset(m, 11);
  CHECK_FALSE(r.converted());
  CHECK(ir::serialize_model(m) == before);
}

TEST_CASE("convert_opset refuses targets outside the opsets it writes", "[ir][convert-opset]") {
  const std::int64_t target = GENERATE(6, 25, 0, -3);
  CAPTURE(target);
  ir::model m = unsqueeze_model(11);
  const auto e = test::error_from_convert(m, target);
  REQUIRE(e);
  CHECK(e->code() == errc::invalid_argument);
  CHECK_THAT(e->what(), Catch::Contains("out of range") && Catch::Contains("7 to 24"));
}

TEST_CASE("an op without a definition at the target is refused naming the node, and the model stays as it was",
          "[ir][convert-opset]") {
  test::opset_model b(17);
  ir::value* x = b.input("x", {2, 4});
  b.output_of(b.node("LayerNormalization", {x, b.floats("g", {4}, {1, 1, 1, 1})}));
  const std::string before = ir::serialize_model(b.m);
  const auto e = test::error_from_convert(b.m, 16);
  REQUIRE(e);
  CHECK(e->code() == errc::unsupported);
  CHECK(std::string(e->what()) ==
        "converting opset 17 to 16: node 'LayerNormalization_0' (LayerNormalization): LayerNormalization has no "
        "definition before opset 17");
  CHECK(ir::serialize_model(b.m) == before);
}

TEST_CASE("Gelu converts only up", "[ir][convert-opset]") {
  test::opset_model b(20);
  ir::value* x = b.input("x", {4});
  b.output_of(b.node("Gelu", {x}));
  CHECK(test::converted(b.m, 21).opset("") == 21);
  CHECK_THAT(test::conversion_error(b.m, 19).value_or(""), Catch::Contains("Gelu has no definition before opset 20"));
}

TEST_CASE("an op the converter does not know is refused", "[ir][convert-opset]") {
  test::opset_model b(13);
  ir::value* x = b.input("x", {4});
  b.output_of(b.node("NoSuchOp", {x}));
  CHECK_THAT(test::conversion_error(b.m, 14).value_or(""), Catch::Contains("no opset conversion rule for NoSuchOp"));
}

TEST_CASE("nodes of other domains are left alone", "[ir][convert-opset]") {
  ir::model m = unsqueeze_model(11);
  m.opsets.push_back({"com.example", 1});
  ir::node* custom = m.graph().add_node(ir::node_spec{"Unsqueeze", {m.graph().inputs()[0]}, {"custom_out"},
                                                      ir::attribute_list(ir::attribute::make_ints("axes", {1})), "custom", "com.example"});
  m.graph().add_output(custom->output(0));
  const ir::model up = test::converted(m, 13);
  const ir::node* kept = nullptr;
  for (const ir::node* n : up.graph().nodes()) kept = n->domain() == "com.example" ? n : kept;
  REQUIRE(kept);
  CHECK(kept->find_attribute("axes"));
  CHECK(kept->inputs().size() == 1);
  CHECK(up.opset("com.example") == 1);
}

TEST_CASE("If branches are converted with their node", "[ir][convert-opset]") {
  test::opset_model b(11);
  ir::value* cond = b.input("cond", {}, ir::data_type::boolean);
  ir::value* x = b.input("x", {2});
  auto then_branch = std::make_unique<ir::graph>("then");
  ir::node* u = then_branch->add_node(ir::node_spec{"Unsqueeze", {x}, {"then_out"}, ir::attribute_list(ir::attribute::make_ints("axes", {0})), "u", {}});
  then_branch->add_output(u->output(0));
  auto else_branch = std::make_unique<ir::graph>("else");
  ir::node* v = else_branch->add_node(ir::node_spec{"Unsqueeze", {x}, {"else_out"}, ir::attribute_list(ir::attribute::make_ints("axes", {1})), "v", {}});
  else_branch->add_output(v->output(0));
  ir::node* n = b.node("If", {cond}, ir::attribute_list(test::graph_attribute("then_branch", std::move(then_branch)),
                                           test::graph_attribute("else_branch", std::move(else_branch))));
  b.output_of(n);
  ir::opset_conversion_report r;
  const ir::model up = test::converted(b.m, 13, &r);
  const ir::node* branch_node = test::first(*test::first(up.graph(), "If")->subgraphs()[0], "Unsqueeze");
  CHECK_FALSE(branch_node->find_attribute("axes"));
  CHECK(branch_node->inputs().size() == 2);
  CHECK(r.changed_nodes.at("axes-attribute-to-input") == 2);
  CHECK(r.nodes_visited == 3);
}

TEST_CASE("a deprecated Upsample becomes a Resize going up, and then takes Resize's later changes", "[ir][convert-opset]") {
  const std::int64_t opset = GENERATE(10, 12);
  CAPTURE(opset);
  test::opset_model b(opset);
  ir::value* x = b.input("x", {1, 1, 2, 2});
  b.output_of(b.node("Upsample", {x, b.floats("scales", {4}, {1, 1, 2, 2})}));
  const ir::model up = test::converted(b.m, 13);
  CHECK(test::count(up.graph(), "Upsample") == 0);
  const ir::node* r = test::first(up.graph(), "Resize");
  REQUIRE(r);
  CHECK(r->inputs().size() == 3);  // roi added at 11: the executor runs no deprecated Upsample-10 to compare with
  CHECK(r->attr_string("coordinate_transformation_mode", "") == "asymmetric");
}

TEST_CASE("converting an already converted model to the same opset changes nothing more", "[ir][convert-opset]") {
  const ir::model once = test::converted(unsqueeze_model(9), 17);
  const ir::model twice = test::converted(once, 17);
  CHECK(ir::serialize_model(twice) == ir::serialize_model(once));
}

TEST_CASE("the op table's versions are those of ONNX's schemas", "[ir][convert-opset]") {
  // The linked ONNX library knows opsets up to its own newest; the table goes to 24.
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const std::int64_t newest = std::min<std::int64_t>(ranges.at("").second, ir::newest_target_opset);
  for (const ir::op_versions& o : ir::convertible_ops()) {
    for (std::int64_t opset = 1; opset <= newest; ++opset) {
      CAPTURE(o.op, opset);
      const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(o.op, static_cast<int>(opset), "");
      std::int64_t ours = 0;
      for (std::int64_t v : o.versions) ours = v <= opset ? v : ours;
      CHECK((s ? s->SinceVersion() : 0) == ours);
    }
  }
}

TEST_CASE("constants a conversion leaves unread are dropped, ones unread before stay", "[ir][convert-opset]") {
  ir::model m = unsqueeze_model(11);
  m.graph().add_initializer("spare", ir::tensor::from_values<float>("spare", {1}, std::vector<float>{1.0f}));
  const ir::model round_trip = test::converted(test::converted(m, 13), 11);
  std::vector<std::string> names;
  for (const ir::value* v : round_trip.graph().initializers()) names.push_back(v->name());
  CHECK(names == std::vector<std::string>{"spare"});
}
