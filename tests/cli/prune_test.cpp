// `inferopt prune`, run as a child process on the trained digits CNN: a real run writes a
// model the executor runs and a report with per-layer costs and the agreement with and
// without BatchNormalization recalibration; --explain lists the groups; bad options are one
// error line with nothing written. Malformed models are in bad_input_test.cpp.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"

namespace {

using namespace inferopt::test;
using Catch::Matchers::Contains;
using json = nlohmann::json;

fs::path digits_dir() { return fs::path(INFEROPT_SOURCE_DIR) / "tests" / "data" / "digits"; }

}  // namespace

TEST_CASE("prune writes a smaller model that runs, and a report with recalibration results", "[cli][prune]") {
  scratch dir("prune_run");
  const fs::path model = digits_dir() / "digits_cnn.onnx";
  const std::string bytes = read_bytes(model);
  const fs::path out = dir / "pruned.onnx", report = dir / "report.json";
  process_result r = run_cli({"prune", model.string(), "-o", out.string(), "--ratio", "0.3", "--round-to", "1",
                              "--calib-dir", (digits_dir() / "calib").string(), "--report", report.string()});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Contains("down_conv") && Contains("32 -> 23") && Contains("groups: 2 prunable of 4"));
  CHECK_THAT(r.out, Contains("BatchNormalization recalibration: 4 layer(s) from 4 batch(es)") &&
                        Contains("without recalibration") && Contains("wrote " + out.string()));
  CHECK(read_bytes(model) == bytes);
  CHECK(folder_entries(dir.path()) == std::vector<std::string>{"pruned.onnx", "report.json"});

  const json j = json::parse(read_bytes(report));
  CHECK(j["removed_channels"] == 13);
  CHECK(j["macs"]["after"].get<std::int64_t>() < j["macs"]["before"].get<std::int64_t>());
  CHECK(j["params"]["after"].get<std::int64_t>() < j["params"]["before"].get<std::int64_t>());
  CHECK(j["layers"].size() == 9);
  CHECK(j["bn_recalibration"]["layers"] == 4);
  CHECK(j["bn_recalibration"]["with"]["top1_agreement"].get<double>() > 0.9);

  process_result run = run_cli({"run", out.string()});
  CAPTURE(run.out, run.err);
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Contains("logits"));
}

TEST_CASE("prune --explain prints every group with its sources and why it is pinned", "[cli][prune]") {
  scratch dir("prune_explain");
  process_result r = run_cli({"prune", (digits_dir() / "digits_cnn.onnx").string(), "-o", (dir / "p.onnx").string(),
                              "--explain", "--round-to", "1"});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("source 'stem_conv' (Conv)") && Contains("ignored layer") &&
                        Contains("graph output 'logits'") && Contains("2 prunable group(s) of 4"));
}

TEST_CASE("prune rejects bad options with one error line and writes nothing", "[cli][prune]") {
  scratch dir("prune_bad");
  const fs::path model = digits_dir() / "digits_cnn.onnx";
  const fs::path out = dir / "out.onnx";
  const auto [flag, value, message] = GENERATE(table<std::string, std::string, std::string>({
      {"--ratio", "1.5", "outside [0, 1)"},
      {"--criterion", "magic", "--criterion must be l1, l2, bn, fpgm or random"},
      {"--reduction", "median", "--reduction must be mean, sum or max"},
      {"--round-to", "0", "round-to must be at least 1"},
      {"--calib-dir", "no-such-folder", "not a folder"},
  }));
  process_result r = run_cli({"prune", model.string(), "-o", out.string(), flag, value});
  CAPTURE(flag, r.err);
  CHECK(r.exit_code == 2);
  CHECK(is_one_error_line(r.err));
  CHECK_THAT(r.err, Contains(message));
  CHECK(folder_entries(dir.path()).empty());
}
