// `inferopt prune`, run as a child process on the trained digits CNN: a real run writes a
// model the executor runs and a report with per-layer costs and the agreement with and
// without BatchNormalization recalibration; --explain lists the groups; bad options are one
// error line with nothing written. Malformed models are in bad_input_test.cpp.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"

namespace {

using namespace inferopt::test;
using Catch::Matchers::Contains;
using json = nlohmann::json;

fs::path digits_dir() { return fs::path(INFEROPT_SOURCE_DIR) / "tests" / "data" / "digits"; }

/// The op types that produce the inputs the model's LayerNormalizations normalize.
std::multiset<std::string> ops_feeding_layer_norms(const onnx::ModelProto& m) {
  std::map<std::string, std::string> producer;
  for (const onnx::NodeProto& n : m.graph().node()) {
    for (const std::string& o : n.output()) producer[o] = n.op_type();
  }
  std::multiset<std::string> out;
  for (const onnx::NodeProto& n : m.graph().node()) {
    if (n.op_type() == "LayerNormalization" && producer.contains(n.input(0))) out.insert(producer[n.input(0)]);
  }
  return out;
}

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

namespace {
/// Sets an environment variable for the children this scope spawns.
struct scoped_env {
  std::string name;
  scoped_env(std::string n, const char* value) : name(std::move(n)) { ::setenv(name.c_str(), value, 1); }
  ~scoped_env() { ::unsetenv(name.c_str()); }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
};

nlohmann::json prune_report(const fs::path& dir) {
  process_result r = run_cli({"prune", (digits_dir() / "digits_cnn.onnx").string(), "-o", (dir / "p.onnx").string(),
                              "--ratio", "0.5", "--report", (dir / "p.json").string()});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream in(dir / "p.json");
  return nlohmann::json::parse(in);
}
}  // namespace

TEST_CASE("prune's default round-to is the channel block of the ISA the executor runs", "[cli][prune]") {
  scratch dir("prune_round_to");
  {
    const scoped_env cap("INFEROPT_NN_ISA", "avx2");  // AVX2 machines block channels by 8
    const nlohmann::json j = prune_report(dir.path());
    CHECK(j["round_to"] == 8);
    for (const auto& layer : j["layers"]) {
      const std::int64_t after = layer["after"]["output_channels"];
      if (after != layer["before"]["output_channels"].get<std::int64_t>()) CHECK(after % 8 == 0);
    }
  }
  const nlohmann::json j = prune_report(dir.path());
  const std::int64_t chosen = j["round_to"];
  CHECK((chosen == 8 || chosen == 16));
  process_result help = run_cli({"prune", "--help"});
  CHECK_THAT(help.out, Contains("(default " + std::to_string(chosen) + " here"));
}

TEST_CASE("prune rejects bad options with one error line and writes nothing", "[cli][prune]") {
  scratch dir("prune_bad");
  const fs::path model = digits_dir() / "digits_cnn.onnx";
  const fs::path out = dir / "out.onnx";
  const auto [flag, value, message] = GENERATE(table<std::string, std::string, std::string>({
      {"--ratio", "1.5", "outside [0, 1)"},
      {"--criterion", "magic", "--criterion must be l1, l2, bn, fpgm, random, energy, obs or obs-greedy"},
      {"--criterion", "energy", "--criterion energy measures channels on calibration data"},
      {"--criterion", "obs-greedy", "--criterion obs-greedy measures channels on calibration data"},
      {"--eval-text", "eval.txt", "--calib-text and --tokenizer go together"},
      {"--reduction", "median", "--reduction must be mean, sum or max"},
      {"--round-to", "0", "round-to must be at least 1"},
      {"--calib-dir", "no-such-folder", "not a folder"},
      {"--target-speedup", "0.8", "--target-speedup must be above 1"},
      {"--target-speedup", "1.5", "--target-speedup times the model on a calibration batch"},
      {"--latency-threads", "0", "--latency-threads must be in [1, 256]"},
      {"--latency-rounds", "0", "--latency-rounds must be in [1, 1000]"},
      {"--refit-ridge", "-1", "--refit-ridge must be a number >= 0"},
      {"--budget", "flops", "--budget must be weights or macs"},
      {"--budget", "macs", "a multiply-add budget weighs calibrated channel scores"},
      {"--latency-seq-len", "32", "--latency-seq-len pads calibration text"},
  }));
  process_result r = run_cli({"prune", model.string(), "-o", out.string(), flag, value});
  CAPTURE(flag, r.err);
  CHECK(r.exit_code == 2);
  CHECK(is_one_error_line(r.err));
  CHECK_THAT(r.err, Contains(message));
  CHECK(folder_entries(dir.path()).empty());
}

TEST_CASE("prune with a calibrated criterion on a text encoder refits the layers reading removed heads and neurons", "[cli][prune]") {
  const std::string criterion = GENERATE("energy", "obs-greedy");
  scratch dir("prune_text_" + criterion);
  const text_encoder_case text = text_encoder(dir.path(), "The quick brown fox jumps over the lazy dog.\nCafé naïve résumé!\n"
                                                          "A smaller model runs faster.\nPruning removes what matters least.\n");
  const fs::path out = dir / "p.onnx", report = dir / "report.json";
  process_result r = run_cli(joined({"prune", text.model.string(), "-o", out.string(), "--criterion", criterion, "--global", "--ratio",
                                     "0.3", "--report", report.string()},
                                    text.calibration));
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("criterion " + criterion) && Contains("least-squares refit") && Contains("mean output cosine"));
  const json j = json::parse(read_bytes(report));
  CHECK(j["macs"]["after"].get<double>() < 0.8 * j["macs"]["before"].get<double>());
  REQUIRE_FALSE(j["refits"].empty());
  for (const json& refit : j["refits"]) {
    CAPTURE(refit.dump());
    CHECK(refit["relative_error_refit"].get<double>() <= refit["relative_error_cut"].get<double>());
  }
  CHECK(j["agreement"]["output_cosine"].get<double>() > 0.5);
  CHECK_FALSE(j.contains("bn_recalibration"));

  // Residual sums reach the norms as Sum, which onnxruntime does not fuse into its slower
  // CPU SkipLayerNormalization.
  REQUIRE(ops_feeding_layer_norms(read_model_proto(text.model)).count("Add") > 0);
  const std::multiset<std::string> feeding = ops_feeding_layer_norms(read_model_proto(out));
  CHECK(feeding.count("Add") == 0);
  CHECK(feeding.count("Sum") > 0);
}

TEST_CASE("prune --target-speedup reports the latency table, its attempts and keeps the one measured closest", "[cli][prune]") {
  // The target leaves room: under a sanitizer on a loaded machine the measured table of this
  // small encoder has predicted at most 1.22x.
  scratch dir("prune_latency");
  const text_encoder_case text = text_encoder(dir.path(), "The quick brown fox jumps over the lazy dog.\nA smaller model runs faster.\n");
  const fs::path out = dir / "p.onnx", report = dir / "report.json";
  process_result r = run_cli(joined({"prune", text.model.string(), "-o", out.string(), "--criterion", "energy", "--target-speedup", "1.15",
                                     "--latency-rounds", "3", "--latency-seq-len", "32", "--report", report.string()},
                                    text.calibration));
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("target speedup 1.15") && Contains("measured") && Contains("predicted") && Contains("sensitivity"));
  CHECK(run_cli({"run", out.string()}).exit_code == 0);
  const json j = json::parse(read_bytes(report));
  const json& l = j["latency"];
  REQUIRE(l.is_object());
  REQUIRE_FALSE(l["attempts"].empty());
  CHECK(l["attempts"].size() <= 4);
  double closest = 1e9;
  for (const json& a : l["attempts"]) closest = std::min(closest, std::abs(a["measured_speedup"].get<double>() / 1.15 - 1.0));
  CHECK(std::abs(l["measured_speedup"].get<double>() / 1.15 - 1.0) == Approx(closest));
  // Both sides of the measured speedup come from the same alternating rounds.
  CHECK(l["measured_reference_ms"].get<double>() > 0.0);
  CHECK(l["measured_run_ms"].get<double>() > 0.0);
  CHECK_FALSE(l["nodes"].empty());
  for (const json& n : l["nodes"]) CHECK(n["predicted_ms"].get<double>() <= n["ms"].get<double>() + 1e-12);
  REQUIRE_FALSE(j["groups_changed"].empty());
  for (const json& g : j["groups_changed"]) {
    CHECK(g["importance_removed"].get<double>() >= 0.0);
    CHECK(g["importance_removed"].get<double>() <= 1.0);
    CHECK(g["units_removed"].get<int>() < g["units_before"].get<int>());
  }
}

TEST_CASE("prune --budget macs removes that share of the multiply-adds at the padded length, attention included", "[cli][prune]") {
  scratch dir("prune_mac_budget");
  const text_encoder_case text = text_encoder(dir.path(), "The quick brown fox jumps over the lazy dog.\nA smaller model runs faster.\n");
  const auto prune = [&](const std::string& name, const std::vector<std::string>& extra) {
    const fs::path out = dir / (name + ".onnx"), report = dir / (name + ".json");
    process_result r = run_cli(joined(joined({"prune", text.model.string(), "-o", out.string(), "--criterion", "energy", "--global",
                                              "--ratio", "0.3", "--round-to", "1", "--report", report.string()},
                                             text.calibration),
                                      extra));
    CAPTURE(r.out, r.err);
    REQUIRE(r.exit_code == 0);
    return std::pair{r.out, json::parse(read_bytes(report))};
  };
  const auto [out, j] = prune("macs", {"--budget", "macs", "--latency-seq-len", "64"});
  CHECK_THAT(out, Contains("MACs at the budget's batch"));
  CHECK(j["budget"] == "macs");
  const double kept = j["budget_macs"]["after"].get<double>() / j["budget_macs"]["before"].get<double>();
  CHECK(kept <= 0.72);
  CHECK(kept >= 0.65);
  // At 64 tokens the attention products are part of the count: more than the weights' per token.
  CHECK(j["budget_macs"]["before"].get<double>() > 64.0 * j["macs"]["before"].get<double>());
  CHECK(prune("weights", {}).second["budget_macs"].is_null());
}

TEST_CASE("prune --sequential refits each reader on the pruned model's activations", "[cli][prune]") {
  scratch dir("prune_sequential");
  const text_encoder_case text = text_encoder(dir.path(), "The quick brown fox jumps over the lazy dog.\nCafé naïve résumé!\n"
                                                          "A smaller model runs faster.\nPruning removes what matters least.\n");
  const auto prune = [&](const std::string& name, const std::vector<std::string>& extra) {
    const fs::path out = dir / (name + ".onnx"), report = dir / (name + ".json");
    process_result r = run_cli(joined(joined({"prune", text.model.string(), "-o", out.string(), "--criterion", "energy", "--global",
                                              "--ratio", "0.3", "--report", report.string()},
                                             text.calibration),
                                      extra));
    CAPTURE(r.out, r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(read_bytes(report));
  };
  const json one_shot = prune("one_shot", {}), sequential = prune("sequential", {"--sequential"});
  CHECK(sequential["removed_channels"] == one_shot["removed_channels"]);
  REQUIRE_FALSE(sequential["refits"].empty());
  for (const json& refit : sequential["refits"]) CHECK(refit["relative_error_refit"].get<double>() <= refit["relative_error_cut"].get<double>());
  SECTION("towards the residual sum, each refit still lowers its (larger) target's error") {
    const json residual = prune("residual", {"--residual-target"});
    REQUIRE(residual["refits"].size() == sequential["refits"].size());
    for (const json& refit : residual["refits"]) CHECK(refit["relative_error_refit"].get<double>() <= refit["relative_error_cut"].get<double>());
    CHECK(residual["agreement"]["output_cosine"].get<double>() > 0.5);
  }
  // On the calibration sentences themselves, fitting the pruned model's own activations agrees
  // at least as well with the original (held-out text is the benchmark's to measure).
  CHECK(sequential["agreement"]["output_cosine"].get<double>() >= one_shot["agreement"]["output_cosine"].get<double>() - 1e-4);
}
