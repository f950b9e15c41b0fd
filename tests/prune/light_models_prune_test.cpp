// The nine light CNN topologies after -O1, pruned 30% with the defaults: each stays a valid
// model that runs and keeps its output shape. DenseNet's Concat chains, Inception's branches
// and ShuffleNet's channel shuffle and grouped convs are either handled or left unpruned.
// Prints, per model, the prunable groups and MACs before -> after (the table issue notes quote).

#include <cmath>
#include <iostream>

#include <catch2/catch.hpp>

#include "inferopt/builtin.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass/pass_manager.hpp"
#include "inferopt/pass/pipeline.hpp"
#include "inferopt/prune/prune.hpp"
#include "inferopt/runtime/session.hpp"
#include "support/light_models.hpp"
#include "support/paths.hpp"

using namespace inferopt;

TEST_CASE("every light model pruned 30% after -O1 is valid, runs and keeps its output shape", "[prune][light-models]") {
  auto dir = test::light_models_dir();
  if (!dir) {
    WARN("../shared/models/onnx-light is absent; skipped");
    return;
  }
  for (const char* name : test::light_model_names) {
    CAPTURE(name);
    ir::model m = ir::load_model(*dir / ("light_" + std::string(name) + ".onnx"));
    pass_manager manager;
    pipeline o1 = level_pipeline(1, builtin_registry());
    (void)manager.run(o1, m);
    runtime::session original(m, {.threads = 1});
    const runtime::tensor_map feeds = test::readme_feeds(original);
    const runtime::tensor_map before = original.run(feeds);

    prune::prune_options o;
    o.selection.ratio = 0.3;
    const prune::prune_summary s = prune::prune_model(m, o);
    REQUIRE(ir::find_problems(m.graph()).empty());
    std::cout << "light_" << name << ": prunable groups " << s.prunable_groups << " of " << s.groups << ", channels removed "
              << s.removed_units << " of " << s.prunable_units << ", MACs " << s.macs_before << " -> " << s.macs_after
              << " (" << static_cast<double>(s.macs_after) / static_cast<double>(s.macs_before) << "), params "
              << s.params_before << " -> " << s.params_after << "\n";
    CHECK(s.macs_after <= s.macs_before);

    // Saved and read back, the pruned model must still load, check and run.
    const ir::model reloaded = ir::parse_model(ir::serialize_model(m));
    runtime::session pruned(reloaded, {.threads = 1});
    const runtime::tensor_map after = pruned.run(feeds);
    for (const auto& [output, t] : before) {
      CAPTURE(output);
      REQUIRE(after.count(output) == 1);
      CHECK(after.at(output).shape() == t.shape());
      bool finite = true;
      for (float x : after.at(output).to_float()) finite = finite && std::isfinite(x);
      CHECK(finite);
    }
  }
}
