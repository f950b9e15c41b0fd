// Differential test: seeded random graphs (CNN-style chains, and transformer encoders) through
// -O2 and -O3 must keep every output within
// rtol 1e-4 of the original, run by the executor on the same random inputs. The number of
// graphs is INFEROPT_RANDOM_GRAPHS (default 1000; the soak label runs many more).

#include <cstdlib>
#include <iostream>
#include <map>

#include <catch2/catch.hpp>

#include "inferopt/builtin.hpp"
#include "inferopt/ir/validate.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass/numeric_bisect.hpp"
#include "inferopt/pass/pass_manager.hpp"
#include "inferopt/pass/pipeline.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "support/random_graph.hpp"
#include "support/random_transformer.hpp"

namespace {

using namespace inferopt;

std::uint64_t graph_count(std::uint64_t fallback) {
  const char* env = std::getenv("INFEROPT_RANDOM_GRAPHS");
  return env && *env ? std::strtoull(env, nullptr, 10) : fallback;
}

struct level_totals {
  std::uint64_t graphs = 0;
  std::uint64_t nodes_before = 0;
  std::uint64_t nodes_after = 0;
  std::map<std::string, std::int64_t> rewrites;
  std::map<std::string, std::int64_t> declines;  ///< "pass: reason"
};

/// Optimizes a copy of `original` at `level` and compares it with the original; returns the
/// mismatch description, empty when every output matches.
std::string check_level(const ir::model& original, const std::string& bytes, int level, const pass_registry& registry,
                        level_totals& totals) {
  ir::model optimized = ir::parse_model(bytes);
  pass_manager manager;
  manager.add_instrumentation(std::make_unique<verify_each>());
  pipeline steps = level_pipeline(level, registry);
  const run_report report = manager.run(steps, optimized);
  totals.graphs += 1;
  totals.nodes_before += original.graph().node_count();
  totals.nodes_after += optimized.graph().node_count();
  for (const pass_record& p : report.passes) {
    totals.rewrites[p.name] += p.rewrites;
    for (const auto& [counter, n] : p.counters) {
      if (counter.starts_with("declined-")) totals.declines[p.name + ": " + counter] += n;
    }
  }

  runtime::session probe(original, runtime::session_options{.threads = 1});
  const runtime::tensor_map inputs = runtime::random_inputs(probe, 11);
  const numeric_comparison c = compare_models(original, optimized, inputs, {1e-4, 1e-5}, 1);
  std::string problems;
  for (const auto& d : c.outputs) {
    if (!d.within) {
      problems += " " + d.name + " (max abs " + std::to_string(d.max_abs) + ", max rel " + std::to_string(d.max_rel) +
                  (d.problem.empty() ? "" : ", " + d.problem) + ")";
    }
  }
  return problems;
}

void print_totals(int level, const level_totals& t) {
  std::cout << "-O" << level << ": " << t.graphs << " graphs, nodes " << t.nodes_before << " -> " << t.nodes_after
            << "; rewrites:";
  for (const auto& [name, n] : t.rewrites) {
    if (n > 0) std::cout << " " << name << "=" << n;
  }
  std::cout << "\n  declines:";
  for (const auto& [name, n] : t.declines) std::cout << " " << name << "=" << n;
  std::cout << "\n";
}

/// Optimizes `count` models from `Generator` (seeded 0..count-1) at -O2 and -O3; prints the
/// totals and returns how many (model, level) pairs did not keep their outputs.
template <class Generator>
std::uint64_t differential_mismatches(std::uint64_t count) {
  const pass_registry registry = builtin_registry();
  level_totals totals[4];
  std::uint64_t mismatches = 0;
  for (std::uint64_t seed = 0; seed < count; ++seed) {
    Generator generator(seed);
    ir::model original = generator.make();
    const std::string bytes = ir::serialize_model(original);
    for (int level : {2, 3}) {
      std::string problem;
      try {
        problem = check_level(original, bytes, level, registry, totals[level]);
      } catch (const inferopt::error& e) {
        problem = std::string(" error: ") + e.what();
      }
      if (!problem.empty()) {
        ++mismatches;
        UNSCOPED_INFO("seed " << seed << " (opset " << generator.opset() << ") at -O" << level << ":" << problem);
      }
    }
  }
  print_totals(2, totals[2]);
  print_totals(3, totals[3]);
  std::cout << count << " random graphs, " << mismatches << " mismatches\n";
  return mismatches;
}

}  // namespace

TEST_CASE("random graphs keep their outputs through -O2 and -O3", "[fusion][differential]") {
  CHECK(differential_mismatches<test::random_graph_generator>(graph_count(1000)) == 0);
}

TEST_CASE("random transformer encoders keep their outputs through -O2 and -O3", "[fusion][differential]") {
  CHECK(differential_mismatches<test::random_transformer_generator>(graph_count(400)) == 0);
}

TEST_CASE("the random graph generator is deterministic and makes valid models", "[fusion][differential]") {
  for (std::uint64_t seed : {0u, 1u, 17u, 123u}) {
    const std::string a = ir::serialize_model(test::random_graph_generator(seed).make());
    const std::string b = ir::serialize_model(test::random_graph_generator(seed).make());
    CHECK(a == b);
    ir::model m = ir::parse_model(a);
    CHECK_NOTHROW(ir::check_with_onnx(m));
  }
}

TEST_CASE("the random transformer generator is deterministic and makes valid models", "[fusion][differential]") {
  for (std::uint64_t seed : {0u, 1u, 17u, 123u}) {
    const std::string a = ir::serialize_model(test::random_transformer_generator(seed).make());
    const std::string b = ir::serialize_model(test::random_transformer_generator(seed).make());
    CHECK(a == b);
    ir::model m = ir::parse_model(a);
    CHECK_NOTHROW(ir::validate(m));  // libonnx's checker stops at opset 17; ours reads 18 to 24
  }
}
