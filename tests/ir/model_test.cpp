// ir::model::clone: a deep, independent copy that serializes to the same bytes as the
// original, so that it can replace serialize-and-parse copies.

#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/model.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "inferopt/ir/serialize.hpp"
#include "test_protos.hpp"

using namespace inferopt;

namespace {

/// The relu model with every ModelProto field we keep verbatim or model as metadata: a
/// model-local function, metadata_props, producer version, domain, model version, doc string.
ir::model model_with_everything() {
  onnx::ModelProto mp = test::relu_model_proto();
  mp.set_producer_version("1.2.3");
  mp.set_domain("org.example");
  mp.set_model_version(7);
  mp.set_doc_string("a model for clone tests");
  auto* kv = mp.add_metadata_props();
  kv->set_key("author");
  kv->set_value("tests");
  onnx::FunctionProto& f = *mp.add_functions();
  f.set_name("twice_relu");
  f.set_domain("org.example");
  f.add_input("a");
  f.add_output("b");
  onnx::NodeProto& n = *f.add_node();
  n.set_op_type("Relu");
  n.add_input("a");
  n.add_output("b");
  f.add_opset_import()->set_version(17);
  return ir::parse_model(test::bytes_of(mp));
}

std::set<const ir::node*> nodes_of(const ir::model& m) {
  std::set<const ir::node*> out;
  for (const ir::node* n : m.graph().nodes()) out.insert(n);
  return out;
}

}  // namespace

TEST_CASE("clone serializes to the same bytes as the model it copies", "[ir][model]") {
  SECTION("the generated default model") {
    const ir::model m = ir::make_default_model();
    const ir::model copy = m.clone();
    CHECK(ir::serialize_model(copy) == ir::serialize_model(m));
  }
  SECTION("a model with a function, metadata and every modelled field set") {
    const ir::model m = model_with_everything();
    const ir::model copy = m.clone();
    CHECK(copy.function_count() == 1);
    CHECK(copy.metadata == m.metadata);
    CHECK(copy.producer_version == "1.2.3");
    CHECK(copy.domain == "org.example");
    CHECK(copy.model_version == 7);
    CHECK(copy.doc_string == m.doc_string);
    CHECK(copy.opsets == m.opsets);
    CHECK(ir::serialize_model(copy) == ir::serialize_model(m));
  }
}

TEST_CASE("clone is deep: its graph has its own nodes and values, weights are shared", "[ir][model]") {
  const ir::model m = ir::make_default_model();
  const ir::model copy = m.clone();
  CHECK(&copy.graph() != &m.graph());
  const std::set<const ir::node*> original_nodes = nodes_of(m);
  for (const ir::node* n : copy.graph().nodes()) CHECK_FALSE(original_nodes.contains(n));
  REQUIRE_FALSE(m.graph().initializers().empty());
  for (const ir::value* w : m.graph().initializers()) {
    CAPTURE(w->name());
    const ir::value* twin = copy.graph().find_value(w->name());
    REQUIRE(twin);
    CHECK(twin != w);
    // Tensor bytes are immutable, so sharing them is what makes a clone cheap.
    CHECK(twin->initializer()->bytes == w->initializer()->bytes);
  }
}

TEST_CASE("editing a clone leaves the original as it was, and the other way round", "[ir][model]") {
  ir::model m = model_with_everything();
  const std::string before = ir::serialize_model(m);

  SECTION("editing the clone") {
    ir::model copy = m.clone();
    ir::graph& g = copy.graph();
    ir::node* relu = g.node_list().at(0);
    ir::node* neg = g.add_node(ir::node_spec{"Neg", {relu->output(0)}, {"z"}, {}, "neg", {}});
    g.add_output(neg->output(0));
    g.rename(g.inputs()[0], "renamed");
    copy.opsets[0].version = 18;
    copy.metadata.clear();
    copy.doc_string = "changed";
    CHECK(ir::serialize_model(copy) != before);
    CHECK(ir::serialize_model(m) == before);
  }
  SECTION("editing the original") {
    const ir::model copy = m.clone();
    m.graph().rename(m.graph().inputs()[0], "renamed");
    m.producer_name = "someone else";
    CHECK(ir::serialize_model(copy) == before);
  }
}
