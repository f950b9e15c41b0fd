// Shape inference: our own rules type every value (symbolic dims, shape vectors computed in
// the graph, newer opsets), agree with libonnx's where it knows the opset, and refuse a model
// whose declared shapes contradict its nodes.

#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/shape_inference.hpp"
#include "inferopt/ir/verify.hpp"
#include "support/paths.hpp"
#include "test_graphs.hpp"

namespace fs = std::filesystem;
using namespace inferopt;
using Catch::Matchers::Contains;

namespace {

/// A graph using every op the builder types, so each has its shape checked against ONNX's.
ir::model all_ops_model() {
  ir::model m = ir::make_model("all_ops");
  ir::graph_builder b(m.graph(), 4);
  ir::value* x = b.input("x", ir::data_type::float32, {2, 4, 17, 17});
  ir::value* y = b.relu(b.batch_norm(b.conv(x, 8, {.kernel = 3, .stride = 2})));
  y = b.concat({b.max_pool(y, {.kernel = 3, .stride = 2, .pad = 1}), b.average_pool(y, {.kernel = 3, .stride = 2, .pad = 1})}, 1);
  y = b.conv(y, 6, {.kernel = 3, .dilation = 2, .bias = false});
  y = b.leaky_relu(b.mul(y, b.sigmoid(y)));
  y = b.clip(b.dropout(b.tanh(y)), -1.0f, 1.0f);
  ir::value* flat = b.flatten(y, -1);
  ir::value* pooled = b.flatten(b.global_average_pool(b.identity(y)));
  b.output(flat);
  b.output(b.reshape(b.dense(b.gemm(pooled, 12), 6), {3, 4}));
  return m;
}

/// Forgets the type of every node output that is not a graph output; returns what they were.
std::map<std::string, ir::value_type> clear_intermediate_types(ir::graph& g) {
  std::map<std::string, ir::value_type> cleared;
  for (ir::node* n : g.nodes()) {
    for (ir::value* v : n->outputs()) {
      if (!v || v->is_graph_output()) continue;
      REQUIRE(v->type());
      cleared.emplace(v->name(), *v->type());
      g.clear_value_info(v);
      REQUIRE_FALSE(v->type());
    }
  }
  return cleared;
}

}  // namespace

TEST_CASE("infer_shapes types the intermediate values of a graph whose types were cleared", "[ir][shape-inference]") {
  const std::string which = GENERATE(as<std::string>{}, "all ops", "default", "narrow resnet50");
  CAPTURE(which);
  ir::model m = which == "all ops" ? all_ops_model() : which == "default" ? ir::make_default_model() : ir::make_resnet50(1, 8);
  ir::graph& g = m.graph();
  const std::map<std::string, ir::value_type> builder_types = clear_intermediate_types(g);
  REQUIRE(builder_types.size() > 10);

  const ir::shape_inference_report report = ir::infer_shapes(m);
  CHECK(report.ran);
  CHECK(report.note.empty());
  CHECK(report.values_typed >= builder_types.size());
  // ONNX's inferred types equal the ones the builder tracked.
  for (const auto& [name, type] : builder_types) {
    const ir::value* v = g.find_value(name);
    REQUIRE(v);
    CAPTURE(name);
    REQUIRE(v->type());
    CHECK(v->type()->elem_type == ir::data_type::float32);
    CHECK(ir::to_string(v->type()->dims) == ir::to_string(type.dims));
  }

  SECTION("the inferred types are saved as value_info and survive a reload") {
    ir::model again = ir::parse_model(ir::serialize_model(m));
    for (const auto& [name, type] : builder_types) {
      const ir::value* v = again.graph().find_value(name);
      REQUIRE(v);
      CAPTURE(name);
      REQUIRE(v->type());
      CHECK(ir::to_string(v->type()->dims) == ir::to_string(type.dims));
    }
  }

  SECTION("running it again finds nothing new") {
    CHECK(ir::infer_shapes(m).values_typed == 0);
  }
}

TEST_CASE("saving as loaded lists only the values the file listed, with their types as they are now", "[ir][shape-inference][save]") {
  ir::model built = ir::make_default_model();
  std::map<std::string, ir::value_type> cleared = clear_intermediate_types(built.graph());
  REQUIRE(cleared.size() > 3);
  // The file lists one intermediate value, with a stale dim that inference refreshes.
  const std::string listed = cleared.begin()->first;
  ir::value_type stale = cleared.begin()->second;
  stale.dims = std::nullopt;
  built.graph().find_value(listed)->set_type(stale);
  ir::model m = ir::parse_model(ir::serialize_model(built));
  (void)ir::infer_shapes(m);

  const test::scratch_folder dir("value_info_policy");
  auto saved_value_info = [&](ir::value_info_policy policy) {
    ir::save_options options;
    options.value_info = policy;
    ir::save_model(m, dir / "model.onnx", options);
    std::map<std::string, std::string> listed_dims;
    const ir::model again = ir::load_model(dir / "model.onnx");
    for (ir::node* n : again.graph().nodes()) {
      for (ir::value* v : n->outputs()) {
        if (v && !v->is_graph_output() && v->type()) listed_dims[v->name()] = ir::to_string(v->type()->dims);
      }
    }
    return listed_dims;
  };

  const std::map<std::string, std::string> as_loaded = saved_value_info(ir::value_info_policy::as_loaded);
  CHECK(as_loaded == std::map<std::string, std::string>{{listed, ir::to_string(cleared.begin()->second.dims)}});
  const std::map<std::string, std::string> every = saved_value_info(ir::value_info_policy::every_known_type);
  CHECK(every.size() == cleared.size());
}

TEST_CASE("libonnx's inference skips a model importing an opset newer than it knows; ours types it", "[ir][shape-inference]") {
  ir::model m = ir::make_model("future", 21);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {1, 8});
  ir::value* y = b.relu(b.sigmoid(x));
  b.output(y);
  ir::value* hidden = y->producer()->input(0);
  m.graph().clear_value_info(hidden);
  REQUIRE_FALSE(hidden->type());

  ir::shape_inference_report report;
  REQUIRE_NOTHROW(report = ir::infer_shapes_with_onnx(m));
  CHECK_FALSE(report.ran);
  CHECK(report.values_typed == 0);
  CHECK_THAT(report.note, Contains("opset 21") && Contains("skipped"));
  CHECK(report.note.find('\n') == std::string::npos);
  CHECK_FALSE(hidden->type());

  SECTION("the same model at opset 17 is typed by libonnx") {
    m.opsets = {{"", 17}};
    report = ir::infer_shapes_with_onnx(m);
    CHECK(report.ran);
    REQUIRE(hidden->type());
    CHECK(ir::to_string(hidden->type()->dims) == "1x8");
  }

  SECTION("our inference types it at opset 21") {
    report = ir::infer_shapes(m);
    CHECK(report.ran);
    CHECK(report.unknown_shapes == 0);
    REQUIRE(hidden->type());
    CHECK(ir::to_string(hidden->type()->dims) == "1x8");
  }
}

TEST_CASE("infer_shapes types every used value of the light models, outputs included", "[ir][shape-inference]") {
  auto dir = test::light_models_dir();
  if (!dir) {
    WARN("../shared/models/onnx-light is absent; skipped");
    return;
  }
  const std::string name = GENERATE(as<std::string>{}, "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2",
                                    "resnet50", "shufflenet", "squeezenet", "vgg19", "zfnet512");
  const fs::path path = *dir / ("light_" + name + ".onnx");
  CAPTURE(path);
  REQUIRE(fs::exists(path));
  ir::model m = ir::load_model(path);
  ir::graph& g = m.graph();
  for (ir::node* n : g.nodes()) {
    for (ir::value* v : n->outputs()) {
      if (v) v->set_type(std::nullopt);
    }
  }

  const ir::shape_inference_report report = ir::infer_shapes(m);
  CHECK(report.ran);
  CHECK(report.note.empty());
  REQUIRE(g.outputs().size() == 1);
  const ir::value* out = g.outputs()[0];
  REQUIRE(out->type());
  CHECK(out->elem_type() == ir::data_type::float32);
  CHECK(out->type()->has_static_shape());
  CHECK_THAT(ir::to_string(out->type()->dims), Contains("1000"));
  // Everything something reads is typed (only unused Dropout masks may stay unknown).
  std::size_t untyped = 0;
  for (ir::node* n : g.nodes()) {
    for (ir::value* v : n->outputs()) {
      if (v && v->has_uses() && !(v->type() && v->type()->has_static_shape())) ++untyped;
    }
  }
  CHECK(untyped == 0);
  CHECK(report.values_typed > g.node_count() / 2);
  CHECK(ir::find_problems(g).empty());

  SECTION("libonnx computes the same shape for every value it types") {
    ir::model theirs = ir::load_model(path);
    for (ir::node* n : theirs.graph().nodes()) {
      for (ir::value* v : n->outputs()) {
        if (v) v->set_type(std::nullopt);
      }
    }
    REQUIRE(ir::infer_shapes_with_onnx(theirs).ran);
    std::size_t compared = 0;
    for (const ir::value* v : theirs.graph().values()) {
      if (!v->type() || !v->type()->has_static_shape()) continue;
      const ir::value* ours = g.find_value(v->name());
      REQUIRE(ours);
      CAPTURE(v->name());
      REQUIRE(ours->type());
      CHECK(ir::to_string(ours->type()->dims) == ir::to_string(v->type()->dims));
      CHECK(ours->type()->elem_type == v->type()->elem_type);
      ++compared;
    }
    CHECK(compared > g.node_count() / 2);
  }
}

TEST_CASE("our inference agrees with libonnx's on every torch export it can read, and types more", "[ir][shape-inference]") {
  const fs::path corpus = test::source_dir() / "tests" / "models" / "corpus";
  REQUIRE(fs::is_directory(corpus));
  std::size_t models = 0;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    if (entry.path().extension() != ".onnx") continue;
    ir::model ours = ir::load_model(entry.path());
    if (ours.opset("").value_or(0) > 17) continue;  // Debian's libonnx stops at 17
    CAPTURE(entry.path().filename().string());
    ++models;
    ir::model theirs = ir::load_model(entry.path());
    REQUIRE(ir::infer_shapes(ours).ran);
    REQUIRE(ir::infer_shapes_with_onnx(theirs).ran);
    CHECK(ir::count_unknown_shapes(ours.graph()) == 0);
    CHECK(ir::count_unknown_shapes(ours.graph()) <= ir::count_unknown_shapes(theirs.graph()));
    for (const ir::value* v : theirs.graph().values()) {
      if (!v->type() || !v->type()->dims) continue;
      const ir::value* mine = ours.graph().find_value(v->name());
      REQUIRE(mine);
      REQUIRE(mine->type());
      CAPTURE(v->name());
      CHECK(mine->type()->elem_type == v->type()->elem_type);
      if (!v->type()->has_static_shape()) continue;
      CHECK(ir::to_string(mine->type()->dims) == ir::to_string(v->type()->dims));
    }
  }
  CHECK(models >= 14);
}

TEST_CASE("an If's outputs take what both branches agree on", "[ir][shape-inference]") {
  ir::model m;
  m.opsets = {{"", 17}};
  ir::graph& g = m.graph();
  ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
  ir::value* x = g.add_input("x", test::float_type({1, 4}));
  ir::value* z = g.add_input("z", test::float_type({2, 4}));
  ir::node* same = test::add_if(g, cond, x, "same");  // Identity(x) or Neg(x)
  std::vector<ir::attribute> branches;
  branches.push_back(test::graph_attribute("then_branch", test::branch("t", "Relu", x)));
  branches.push_back(test::graph_attribute("else_branch", test::branch("e", "Relu", z)));
  ir::node* mixed = g.add_node(ir::node_spec{"If", {cond}, {"mixed_out"}, std::move(branches), "mixed", {}});
  g.add_output(same->output(0));
  g.add_output(mixed->output(0));
  (void)ir::infer_shapes(m);
  REQUIRE(same->output(0)->type());
  CHECK(same->output(0)->type()->elem_type == ir::data_type::float32);
  CHECK(ir::to_string(same->output(0)->type()->dims) == "1x4");
  REQUIRE(mixed->output(0)->type());
  REQUIRE(mixed->output(0)->type()->dims);
  const ir::shape& dims = *mixed->output(0)->type()->dims;
  REQUIRE(dims.size() == 2);
  CHECK_FALSE(dims[0].is_static());  // 1 or 2
  CHECK(dims[1].value() == 4);
}
