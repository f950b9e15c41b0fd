// The built-in registry and the -O levels on whole models: the generated default model and,
// when ../shared is present, the nine ONNX "light" models.

#include "inferopt/builtin.hpp"

#include <algorithm>
#include <filesystem>

#include <catch2/catch.hpp>

#include "inferopt/ir/sample_models.hpp"
#include "pass/pass_test_util.hpp"
#include "support/light_models.hpp"
#include "support/paths.hpp"

using namespace inferopt;

namespace {

run_report run_level(ir::model& m, int level) {
  const pass_registry registry = builtin_registry();
  pipeline p = level_pipeline(level, registry);
  pass_manager manager;
  manager.add_instrumentation(std::make_unique<verify_each>());
  return manager.run(p, m);
}

}  // namespace

TEST_CASE("builtin_registry lists every module's passes once, sorted, each under its own name", "[builtin]") {
  const pass_registry r = builtin_registry();
  std::vector<std::string> names;
  for (const pass_registry::entry* e : r.passes()) {
    CAPTURE(e->name);
    names.push_back(e->name);
    CHECK_FALSE(e->description.empty());
    const std::unique_ptr<pass> p = e->make();
    REQUIRE(p != nullptr);
    CHECK(p->name() == e->name);
  }
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  for (const char* name : {"fuse-conv-bn", "fuse-matmul-add", "to-fp16", "sparsify-blocks", "infer-shapes"}) {
    CAPTURE(name);
    CHECK(r.contains(name));
  }
}

TEST_CASE("builtin_registry holds the cleanup passes and the -O pipelines", "[builtin]") {
  const pass_registry r = builtin_registry();
  for (const char* name : {"dce", "remove-unused", "eliminate-identity", "eliminate-dropout"}) {
    CAPTURE(name);
    CHECK(r.contains(name));
  }
  std::vector<std::string> levels;
  for (const auto* p : r.pipelines()) levels.push_back(p->name);
  CHECK(levels == std::vector<std::string>{"O0", "O1", "O2", "O3"});
  CHECK(r.find_pipeline("O0")->text.empty());
  for (const char* level : {"O1", "O2", "O3"}) {
    CAPTURE(level);
    CHECK_FALSE(r.find_pipeline(level)->description.empty());
    CHECK_NOTHROW(parse_pipeline(r.find_pipeline(level)->text, r));
  }
}

TEST_CASE("level O0 leaves the default model byte for byte as it was", "[builtin]") {
  ir::model m = ir::make_default_model();
  const std::string before = test::bytes_of(m);
  run_report r = run_level(m, 0);
  CHECK(r.passes.empty());
  CHECK(test::bytes_of(m) == before);
}

TEST_CASE("level O1 cleans the debris out of the default model", "[builtin]") {
  ir::model m = ir::make_default_model();
  REQUIRE(test::count_ops(m.graph(), "Identity") == 2);
  REQUIRE(test::count_ops(m.graph(), "Dropout") == 1);
  REQUIRE(test::count_ops(m.graph(), "Sigmoid") == 1);
  REQUIRE(m.graph().find_value("unused_weights") != nullptr);
  const std::size_t nodes_before = m.graph().node_count();

  run_report r = run_level(m, 1);
  CHECK(test::count_ops(m.graph(), "Identity") == 0);
  CHECK(test::count_ops(m.graph(), "Dropout") == 0);
  CHECK(test::count_ops(m.graph(), "Sigmoid") == 0);  // the dead branch
  CHECK(m.graph().find_value("unused_weights") == nullptr);
  CHECK(test::output_names(m.graph()) == std::vector<std::string>{"logits"});
  CHECK(ir::find_problems(m.graph()).empty());
  CHECK_NOTHROW(ir::verify(m.graph()));
  CHECK(r.nodes_before == nodes_before);
  CHECK(r.nodes_after == m.graph().node_count());
  CHECK(r.nodes_after <= nodes_before - 5);  // 2 Identity, 1 Dropout, the dead Conv and Sigmoid
  REQUIRE(r.fixpoints.size() == 1);
  CHECK(r.fixpoints[0].converged);
  // The dropout ratio constant and the dead Conv's weights went with their readers.
  for (ir::value* v : m.graph().initializers()) {
    CAPTURE(v->name());
    CHECK(v->has_uses());
  }
}

TEST_CASE("level O1 run twice gives the same model as run once", "[builtin]") {
  ir::model m = ir::make_default_model();
  run_level(m, 1);
  const std::string once = test::bytes_of(m);
  run_report second = run_level(m, 1);
  CHECK(test::bytes_of(m) == once);
  REQUIRE(second.fixpoints.size() == 1);
  CHECK(second.fixpoints[0].iterations == 1);
  for (const pass_record& p : second.passes) CHECK_FALSE(p.changed);
}

TEST_CASE("level O1 keeps every light model valid with its output names", "[builtin][models]") {
  auto dir = test::light_models_dir();
  if (!dir) {
    WARN("../shared/models/onnx-light is absent; skipped");
    return;
  }
  const std::string name = GENERATE(from_range(test::light_model_names));
  CAPTURE(name);
  ir::model m = ir::load_model(*dir / ("light_" + name + ".onnx"));
  const std::vector<std::string> outputs = test::output_names(m.graph());
  const std::size_t nodes_before = m.graph().node_count_recursive();

  run_report r = run_level(m, 1);  // verify_each checks every pass on the way
  CHECK(test::output_names(m.graph()) == outputs);
  CHECK(ir::find_problems(m.graph()).empty());
  CHECK(r.nodes_after <= nodes_before);
  CHECK(test::count_ops_recursive(m.graph(), "Identity") == 0);
  REQUIRE(r.fixpoints.size() == 1);
  CHECK(r.fixpoints[0].converged);
  // What -O1 wrote loads back as the same model.
  ir::model reloaded = ir::parse_model(test::bytes_of(m));
  CHECK(test::bytes_of(reloaded) == test::bytes_of(m));
}
