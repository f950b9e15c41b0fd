// The contract the pass manager's rollback relies on: a built-in pass whose `run` reports no
// change leaves the model byte for byte as it was, so the copy taken before it still holds.
// Checked pass by pass through every -O level, on the default model, the digits CNN and, when
// ../shared is present, two light models.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "inferopt/builtin.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "inferopt/ir/serialize.hpp"
#include "pass/pass_test_util.hpp"
#include "support/paths.hpp"

using namespace inferopt;

namespace {

/// Serializes the model before each pass and compares after every pass that reports no change.
class unchanged_means_unchanged final : public pass_instrumentation {
 public:
  void before_pass(const pass&, const ir::model& m) override { before_ = ir::serialize_model(m); }
  void after_pass(const pass& p, const ir::model& m, const pass_outcome& outcome) override {
    ++runs_;
    last_changed_ = outcome.changed;
    if (outcome.changed) return;
    ++unchanged_runs_;
    if (ir::serialize_model(m) != before_) broken_.push_back(std::string(p.name()));
  }
  [[nodiscard]] const std::vector<std::string>& broken() const noexcept { return broken_; }
  [[nodiscard]] int unchanged_runs() const noexcept { return unchanged_runs_; }
  [[nodiscard]] int runs() const noexcept { return runs_; }
  [[nodiscard]] bool last_changed() const noexcept { return last_changed_; }

 private:
  std::string before_;
  std::vector<std::string> broken_;
  int runs_ = 0;
  int unchanged_runs_ = 0;
  bool last_changed_ = false;
};

std::vector<std::pair<std::string, ir::model>> contract_models() {
  std::vector<std::pair<std::string, ir::model>> out;
  out.emplace_back("default", ir::make_default_model());
  out.emplace_back("digits", ir::load_model(test::source_dir() / "tests/data/digits/digits_cnn.onnx"));
  if (const auto dir = test::light_models_dir()) {
    for (const char* name : {"squeezenet", "shufflenet"}) {
      out.emplace_back(name, ir::load_model(*dir / ("light_" + std::string(name) + ".onnx")));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("a built-in pass that reports no change leaves the model byte for byte as it was", "[builtin][contract]") {
  const pass_registry registry = builtin_registry();
  for (auto& [name, model] : contract_models()) {
    for (int level = 1; level <= 3; ++level) {
      CAPTURE(name, level);
      ir::model m = model.clone();
      auto check = std::make_unique<unchanged_means_unchanged>();
      const unchanged_means_unchanged* seen = check.get();
      pass_manager manager;
      manager.add_instrumentation(std::move(check));
      pipeline p = level_pipeline(level, registry);
      const run_report report = manager.run(p, m);
      CHECK(seen->broken().empty());
      CHECK(seen->unchanged_runs() > 0);
      // One copy before the first pass, and one after each pass that changed the graph and was
      // followed by another.
      const int changed_runs = seen->runs() - seen->unchanged_runs();
      CHECK(report.snapshots == static_cast<std::size_t>(1 + changed_runs - (seen->last_changed() ? 1 : 0)));
    }
  }
}
