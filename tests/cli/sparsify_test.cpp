// `inferopt sparsify`, run as a child process: the dry run prints its table and writes
// nothing, a real run writes a model the executor runs and a report, and bad options are one
// error line with nothing written. Malformed models are in bad_input_test.cpp.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "inferopt/ir/graph_builder.hpp"

namespace {

using namespace inferopt::test;
using Catch::Matchers::Contains;
using json = nlohmann::json;

/// x [4, 256] -> Gemm (256 x 256 weight, exactly the default min-size) named `fc1` -> Relu ->
/// MatMul with a 256 x 64 weight (too small by default) -> y.
fs::path save_mlp(const fs::path& path) {
  inferopt::ir::model m = inferopt::ir::make_model("mlp");
  inferopt::ir::graph_builder gb(m.graph(), 3);
  inferopt::ir::value* x = gb.input("x", inferopt::ir::data_type::float32, {4, 256});
  inferopt::ir::value* h = gb.relu(gb.gemm(x, 256, "fc1"));
  gb.output(gb.matmul(h, gb.random_constant("w2", {256, 64}, 0.1f)));
  inferopt::ir::save_model(m, path);
  return path;
}

}  // namespace

TEST_CASE("sparsify --dry-run prints what it would rewrite and writes nothing", "[cli][sparsify]") {
  scratch dir("sparsify_dry");
  const fs::path model = save_mlp(dir / "mlp.onnx");
  const std::string bytes = read_bytes(model);
  const auto entries = folder_entries(dir.path());
  process_result r = run_cli({"sparsify", model.string(), "--dry-run", "--block", "16x16", "--sparsity", "0.75"});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Contains("fc1") && Contains("Gemm") && Contains("256 x 256") && Contains("64 / 256") &&
                        Contains("75.0%") && Contains("yes"));
  CHECK_THAT(r.out, Contains("1 of 2 MatMul/Gemm node(s) would be rewritten") && Contains("declined-small 1"));
  CHECK_THAT(r.out, Contains("predicted speedup") && Contains("dry run: no model written"));
  CHECK(folder_entries(dir.path()) == entries);
  CHECK(read_bytes(model) == bytes);
}

TEST_CASE("sparsify writes a model the executor runs, and a report", "[cli][sparsify]") {
  scratch dir("sparsify_run");
  const fs::path model = save_mlp(dir / "mlp.onnx");
  const std::string bytes = read_bytes(model);
  const fs::path out = dir / "sparse.onnx", report = dir / "report.json";
  process_result r = run_cli({"sparsify", model.string(), "-o", out.string(), "--block", "8x8", "--sparsity", "0.5",
                              "--min-size", "1000", "--report", report.string()});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Contains("2 of 2 MatMul/Gemm node(s) rewritten") && Contains("wrote " + out.string()));
  CHECK(read_bytes(model) == bytes);
  CHECK(folder_entries(dir.path()) == std::vector<std::string>{"mlp.onnx", "report.json", "sparse.onnx"});

  const onnx::ModelProto proto = read_model_proto(out);
  CHECK(count_ops(proto, "BlockSparseMatMul") == 2);
  CHECK(count_ops(proto, "Gemm") + count_ops(proto, "MatMul") + count_ops(proto, "Relu") == 0);
  bool imports_inferopt = false;
  for (const auto& o : proto.opset_import()) imports_inferopt = imports_inferopt || (o.domain() == "inferopt" && o.version() == 1);
  CHECK(imports_inferopt);
  CHECK(output_names(proto) == output_names(read_model_proto(model)));

  process_result run = run_cli({"run", out.string()});
  CAPTURE(run.err);
  CHECK(run.exit_code == 0);

  const json j = json::parse(read_bytes(report));
  CHECK(j["dry_run"] == false);
  CHECK(j["block"] == json::array({8, 8}));
  REQUIRE(j["nodes"].size() == 2);
  for (const json& n : j["nodes"]) {
    CAPTURE(n.dump());
    CHECK(n["rewritten"] == true);
    CHECK(n["blocks_kept"].get<std::int64_t>() * 2 == n["blocks_total"].get<std::int64_t>());
    CHECK(n["predicted_speedup"].get<double>() > 0.0);
  }
  CHECK(j["nodes"][0]["relu_fused"] == true);
  CHECK(j["after"]["params"].get<std::int64_t>() < j["before"]["params"].get<std::int64_t>());
}

TEST_CASE("sparsify refuses bad options in one line and writes nothing", "[cli][sparsify]") {
  scratch dir("sparsify_bad");
  const fs::path model = save_mlp(dir / "mlp.onnx");
  const auto entries = folder_entries(dir.path());
  const fs::path out = dir / "out.onnx";
  auto [args, expected] = GENERATE_REF(table<std::vector<std::string>, std::string>({
      {{"--sparsity", "2"}, "sparsity must be a number in [0, 1], got '2'"},
      {{"--block", "0x4"}, "block must be an integer in 1..64"},
      {{"--norm", "max"}, "norm must be l1 or l2"},
      {{"--min-size", "-5"}, "min-size must be a non-negative integer"},
      {{"--criterion", "obs"}, "--criterion obs chooses blocks on calibration data"},
      {{"--criterion", "obs-greedy"}, "--criterion obs-greedy chooses blocks on calibration data"},
      {{"--criterion", "hessian"}, "--criterion must be magnitude, obs or obs-greedy"},
      {{"--calib-text", "s.txt"}, "--calib-text and --tokenizer go together"},
      {{"--calib-dir", "d", "--calib-text", "s.txt"}, "give --calib-dir or --calib-text, not both"},
      {{"--chunk-rows", "0"}, "--chunk-rows must be at least 1"},
      {{"--damping", "0"}, "--damping must be positive"},
      {{"--max-layer-sparsity", "1.5"}, "--max-layer-sparsity must be in (0, 1]"},
      {{"--target-speedup", "0.5"}, "--target-speedup must be above 1"},
      {{"--max-cosine-drop", "2"}, "--max-cosine-drop must be in (0, 1)"},
      {{"--target-speedup", "1.5", "--max-cosine-drop", "0.1"}, "give --target-speedup or --max-cosine-drop, not both"},
      {{"--max-cosine-drop", "0.05"}, "--target-speedup and --max-cosine-drop measure the sparsified model"},
      {{"--latency-rounds", "0"}, "--latency-rounds must be in [1, 1000]"},
      {{"--sequential"}, "--sequential and --residual-target refit on calibration data"},
      {{"--sensitivity"}, "--sensitivity measures each layer on calibration data"},
      {{"--permute"}, "--permute orders units by their output energy on calibration data"},
      {{"--sensitivity", "--calib-dir", "d", "--uniform"}, "--sensitivity measures each layer on calibration data"},
      {{"--residual-target", "--calib-dir", "d", "--criterion", "magnitude"}, "--sequential and --residual-target refit on calibration data"},
  }));
  std::vector<std::string> argv{"sparsify", model.string(), "-o", out.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  CAPTURE(argv);
  process_result r = run_cli(argv);
  CAPTURE(r.err);
  CHECK(r.exit_code == 2);
  CHECK(is_one_error_line(r.err));
  CHECK_THAT(r.err, Contains(expected));
  CHECK(r.out.empty());
  CHECK(folder_entries(dir.path()) == entries);
}

TEST_CASE("sparsify needs -o unless it is a dry run, and never overwrites its input", "[cli][sparsify]") {
  scratch dir("sparsify_output");
  const fs::path model = save_mlp(dir / "mlp.onnx");
  const std::string bytes = read_bytes(model);
  SECTION("no output") {
    process_result r = run_cli({"sparsify", model.string()});
    CHECK(r.exit_code == 2);
    CHECK(is_one_error_line(r.err));
    CHECK_THAT(r.err, Contains("give -o OUT, or --dry-run"));
  }
  SECTION("the input as output") {
    process_result r = run_cli({"sparsify", model.string(), "-o", model.string()});
    CHECK(r.exit_code == 2);
    CHECK(is_one_error_line(r.err));
    CHECK_THAT(r.err, Contains("output would overwrite the input"));
  }
  CHECK(read_bytes(model) == bytes);
  CHECK(folder_entries(dir.path()) == std::vector<std::string>{"mlp.onnx"});
}

TEST_CASE("sparsify with calibration sentences loses less of a text encoder's output than by magnitude", "[cli][sparsify]") {
  scratch dir("sparsify_text");
  const text_encoder_case text = text_encoder(dir.path(), "The quick brown fox jumps over the lazy dog.\nCafé naïve résumé!\n"
                                                          "A smaller model runs faster.\nSparsity removes whole blocks of weights.\n");
  const auto sparsify = [&](const std::string& criterion) {
    const fs::path out = dir / (criterion + ".onnx"), report = dir / (criterion + ".json");
    process_result r = run_cli(joined({"sparsify", text.model.string(), "-o", out.string(), "--sparsity", "0.5", "--min-size", "0",
                                       "--criterion", criterion, "--report", report.string()},
                                      text.calibration));
    CAPTURE(r.out, r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("mean output cosine"));
    CHECK(run_cli({"run", out.string()}).exit_code == 0);
    return json::parse(read_bytes(report));
  };
  const json calibrated = sparsify("obs"), magnitude = sparsify("magnitude");
  CHECK(calibrated["criterion"] == "obs");
  CHECK_FALSE(magnitude.contains("calibrated"));
  REQUIRE_FALSE(calibrated["calibrated"]["layers"].empty());
  double error = 0.0, by_magnitude = 0.0;
  std::int64_t removed = 0, total = 0;
  for (const json& l : calibrated["calibrated"]["layers"]) {
    error += l["relative_error"].get<double>();
    by_magnitude += l["relative_error_magnitude"].get<double>();
    removed += l["blocks_removed"].get<std::int64_t>();
    total += l["blocks_total"].get<std::int64_t>();
  }
  CHECK(error < by_magnitude);
  // Allocated per layer, 50% of the blocks overall (all blocks are 16x16) within a step.
  CHECK(static_cast<double>(removed) / static_cast<double>(total) == Approx(0.5).margin(0.07));
  CHECK(calibrated["agreement"]["output_cosine"].get<double>() > magnitude["agreement"]["output_cosine"].get<double>());
  CHECK_FALSE(calibrated["calibrated"]["sensitivity"].get<bool>());
}

/// `sparsify --min-size 0 FLAGS` of a small text encoder calibrated on three sentences; the
/// report (the model written and run checked).
json sparsify_three_sentences(const scratch& dir, const std::vector<std::string>& flags) {
  const text_encoder_case text = text_encoder(dir.path(), "The quick brown fox jumps over the lazy dog.\nA smaller model runs faster.\n"
                                                          "Sparsity removes whole blocks of weights.\n");
  const fs::path out = dir / "s.onnx", report = dir / "s.json";
  std::vector<std::string> argv{"sparsify", text.model.string(), "-o", out.string(), "--min-size", "0", "--report", report.string()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  process_result r = run_cli(joined(argv, text.calibration));
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(run_cli({"run", out.string()}).exit_code == 0);
  return json::parse(read_bytes(report));
}

TEST_CASE("sparsify --sensitivity allocates by each layer's measured output drop, the same share overall", "[cli][sparsify]") {
  scratch dir("sparsify_sensitivity");
  const json j = sparsify_three_sentences(dir, {"--sparsity", "0.5", "--sensitivity"});
  CHECK(j["calibrated"]["sensitivity"].get<bool>());
  std::int64_t removed = 0, total = 0;
  for (const json& l : j["calibrated"]["layers"]) {
    removed += l["blocks_removed"].get<std::int64_t>();
    total += l["blocks_total"].get<std::int64_t>();
    // A layer that loses blocks was predicted to lower the output's cosine (a cosine drop, at most 2).
    const double drop = l["sensitivity"].get<double>();
    CHECK(drop >= 0.0);
    CHECK(drop <= 2.0);
    if (l["blocks_removed"].get<std::int64_t>() == 0) CHECK(drop == 0.0);
  }
  REQUIRE(total > 0);
  CHECK(static_cast<double>(removed) / static_cast<double>(total) == Approx(0.5).margin(0.07));
}

TEST_CASE("sparsify --permute reorders the encoder's FFN neurons and heads before choosing blocks", "[cli][sparsify]") {
  scratch dir("sparsify_permute");
  const json j = sparsify_three_sentences(dir, {"--sparsity", "0.5", "--permute"});
  // bert_dynamic_ts: two layers, each with a group of heads and one of FFN neurons.
  CHECK(j["calibrated"]["permuted_groups"].get<int>() == 4);
  CHECK(j["agreement"]["output_cosine"].get<double>() > 0.5);
}

TEST_CASE("sparsify --max-cosine-drop keeps the largest probed sparsity within the drop on the calibration text", "[cli][sparsify]") {
  scratch dir("sparsify_cosine");
  const json j = sparsify_three_sentences(dir, {"--max-cosine-drop", "0.02"});
  const json& budget = j["cosine_budget"];
  REQUIRE(budget["probes"].size() == 6);
  const double chosen = budget["sparsity"].get<double>();
  for (const json& p : budget["probes"]) {
    const double s = p["sparsity"].get<double>(), cosine = p["calibration_cosine"].get<double>();
    CAPTURE(s, cosine);
    // Every probe within the drop is at most the sparsity kept; every one beyond it is above.
    if (1.0 - cosine <= 0.02) CHECK(s <= chosen + 1e-12);
    else CHECK(s > chosen);
  }
  CHECK(1.0 - j["agreement"]["output_cosine"].get<double>() <= 0.02 + 1e-6);  // agreement is measured on the calibration text here
}
