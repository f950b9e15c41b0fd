// ir::validate on models built as raw protobuf: what it refuses names the node and the
// problem, and what onnxruntime loads it accepts.

#include <catch2/catch.hpp>

#include <string>

#include <onnx/onnx_pb.h>

#include "inferopt/core/printable.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/validate.hpp"
#include "support/onnx_protos.hpp"
#include "test_util.hpp"

using namespace inferopt;
using Catch::Matchers::Contains;

namespace {

/// A model of one node `op` from x to y ([1,4] floats) at `opset`.
onnx::ModelProto one_node(const std::string& op, std::int64_t opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  auto& g = *m.mutable_graph();
  g.set_name("g");
  test::set_float_info(*g.add_input(), "x", {1, 4});
  test::set_float_info(*g.add_output(), "y", {1, 4});
  test::add_node(g, op, {"x"}, {"y"}, "n");
  return m;
}

void add_int_attribute(onnx::NodeProto& n, const std::string& name, std::int64_t value) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

/// The message `validate` refuses `m` with; empty when it accepts it.
std::string refusal(const onnx::ModelProto& m) {
  const ir::model parsed = ir::parse_model(m.SerializeAsString());
  auto e = test::error_from([&] { ir::validate(parsed); });
  if (!e) return {};
  CHECK(e->code() == errc::invalid_model);
  return e->what();
}

}  // namespace

TEST_CASE("nodes are checked against the generated definitions of their opset") {
  SECTION("Gelu at opset 20 takes 'approximate' and nothing else") {
    auto m = one_node("Gelu", 20);
    CHECK(refusal(m).empty());
    add_int_attribute(*m.mutable_graph()->mutable_node(0), "axis", 1);
    CHECK_THAT(refusal(m), Contains("node 'n' (Gelu)") && Contains("Unrecognized attribute: axis"));
  }
  SECTION("an op that no opset defines is refused") {
    CHECK_THAT(refusal(one_node("Relux", 20)), Contains("ai.onnx opset 20 has no operator 'Relux'"));
    CHECK_THAT(refusal(one_node("Relux", 13)), Contains("ai.onnx opset 13 has no operator 'Relux'"));
  }
  SECTION("an op unchanged since an older opset is checked by that definition") {
    auto m = one_node("Relu", 20);
    CHECK(refusal(m).empty());
    m.mutable_graph()->mutable_node(0)->add_output("extra");
    CHECK_THAT(refusal(m), Contains("output size 2 not in range [min=1, max=1]"));
  }
  SECTION("a required attribute must be there, an attribute of the wrong kind is refused") {
    auto m = one_node("Flatten", 13);
    CHECK(refusal(m).empty());
    auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(1.0F);
    CHECK_THAT(refusal(m), Contains("attribute 'axis' is FLOAT, but Flatten takes INT"));
  }
}

TEST_CASE("a definition onnxruntime refuses as deprecated is refused and one it loads is not") {
  auto upsample = one_node("Upsample", 10);
  CHECK_THAT(refusal(upsample), Contains("Upsample is deprecated since opset 10"));
  // onnx marks GroupNormalization-18 deprecated too, but onnxruntime loads it.
  auto m = one_node("GroupNormalization", 18);
  auto& g = *m.mutable_graph();
  test::set_float_info(*g.mutable_input(0), "x", {1, 4, 2});
  test::set_float_info(*g.mutable_output(0), "y", {1, 4, 2});
  for (const char* name : {"scale", "bias"}) {
    auto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(2);
    t->add_float_data(1.0F);
    t->add_float_data(0.0F);
    g.mutable_node(0)->add_input(name);
  }
  add_int_attribute(*g.mutable_node(0), "num_groups", 2);
  CHECK(refusal(m).empty());
}

TEST_CASE("an omitted input is refused where the op requires one") {
  auto m = one_node("Concat", 17);
  auto& n = *m.mutable_graph()->mutable_node(0);
  add_int_attribute(n, "axis", 0);
  n.clear_input();
  n.add_input("");
  n.add_input("x");
  test::set_float_info(*m.mutable_graph()->mutable_output(0), "y", {1, 4});
  CHECK_THAT(refusal(m), Contains("input 0 (inputs) is required but empty"));
}

TEST_CASE("an initializer's element type is checked against the op even when undeclared") {
  auto m = one_node("Add", 17);
  auto& g = *m.mutable_graph();
  g.mutable_node(0)->add_input("b");
  auto* b = g.add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::INT64);
  b->add_dims(4);
  for (int k = 0; k < 4; ++k) b->add_int64_data(k);
  CHECK_THAT(refusal(m), Contains("input 'b' is int64 but 'x' is float"));
}

TEST_CASE("a node of an unknown domain must call a model-local function") {
  auto m = one_node("MyRelu", 17);
  m.mutable_graph()->mutable_node(0)->set_domain("local.fns");
  auto* o = m.add_opset_import();
  o->set_domain("local.fns");
  o->set_version(1);
  CHECK_THAT(refusal(m), Contains("neither an operator onnxruntime or inferopt knows nor a function of the model"));
  auto* f = m.add_functions();
  f->set_domain("local.fns");
  f->set_name("MyRelu");
  f->add_input("a");
  f->add_output("b");
  auto* body = f->add_node();
  body->set_op_type("Relu");
  body->add_input("a");
  body->add_output("b");
  CHECK(refusal(m).empty());
}

TEST_CASE("a name that is not UTF-8 is refused, and quoted printably") {
  auto m = one_node("Relu", 17);
  m.mutable_graph()->mutable_node(0)->set_name("n\xf4");
  CHECK_THAT(refusal(m), Contains("node name 'n\\xf4' is not valid UTF-8"));
}

TEST_CASE("printable keeps UTF-8 and escapes the rest on one line") {
  CHECK(printable("conv\xc3\xa9") == "conv\xc3\xa9");
  CHECK(printable("a\nb\rc") == "a b c");
  CHECK(printable(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(printable("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");                    // overlong '/'
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");            // a surrogate
  CHECK(is_utf8("\xf0\x9f\x99\x82"));
  CHECK_FALSE(is_utf8("\xe2\x82"));  // truncated
}
