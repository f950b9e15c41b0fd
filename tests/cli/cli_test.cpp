// The `inferopt` command line, run as a child process: help and version, `passes`,
// `inspect` (text and JSON), `optimize` with its levels, pipelines and options, `plan`, and the
// errors a user can provoke through arguments (unknown passes, unwritable outputs,
// overwriting the input).

#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"

namespace {

using namespace inferopt::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using json = nlohmann::json;

/// `-O<level>`'s pipeline text as `inferopt passes` lists it ("" for no passes).
std::string level_pipeline_text(int level) {
  process_result r = run_cli({"passes"});
  REQUIRE(r.exit_code == 0);
  std::istringstream lines(r.out);
  std::string line;
  const std::string key = "  -O" + std::to_string(level) + " ";
  while (std::getline(lines, line)) {
    if (line.rfind(key, 0) != 0) continue;
    REQUIRE(std::getline(lines, line));
    line.erase(0, line.find_first_not_of(' '));
    return line == "(no passes)" ? "" : line;
  }
  FAIL("`inferopt passes` does not list -O" << level);
  return {};
}

std::int64_t initializer_elements(const onnx::ModelProto& m) {
  std::int64_t total = 0;
  for (const auto& t : m.graph().initializer()) {
    std::int64_t n = 1;
    for (auto d : t.dims()) n *= d;
    total += n;
  }
  return total;
}

/// Checks the report's per-pass entries against the pipeline it ran: one entry per pass,
/// in order of first mention, each with the documented fields.
void check_report_passes(const json& report, const std::vector<std::string>& expected_names) {
  REQUIRE(report.contains("passes"));
  const json& passes = report["passes"];
  REQUIRE(passes.is_array());
  std::vector<std::string> names;
  for (const json& p : passes) {
    CAPTURE(p.dump());
    REQUIRE(p.contains("name"));
    REQUIRE(p["name"].is_string());
    REQUIRE(p.contains("ms"));
    CHECK(p["ms"].is_number());
    CHECK(p["ms"].get<double>() >= 0.0);
    REQUIRE(p.contains("nodes_before"));
    REQUIRE(p.contains("nodes_after"));
    REQUIRE(p.contains("rewrites"));
    CHECK(p["nodes_before"].is_number_integer());
    CHECK(p["nodes_after"].is_number_integer());
    CHECK(p["rewrites"].is_number_integer());
    CHECK(p["rewrites"].get<std::int64_t>() >= 0);
    names.push_back(p["name"].get<std::string>());
  }
  CHECK(names == expected_names);
}

}  // namespace

TEST_CASE("inferopt --version prints the version and exits 0", "[cli]") {
  process_result r = run_cli({"--version"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == std::string("inferopt ") + INFEROPT_VERSION + "\n");
  CHECK(r.err.empty());
}

TEST_CASE("--help exits 0 with usage for the program and every subcommand", "[cli]") {
  auto args = GENERATE(std::vector<std::string>{"--help"}, std::vector<std::string>{"-h"},
                       std::vector<std::string>{"inspect", "--help"}, std::vector<std::string>{"optimize", "--help"},
                       std::vector<std::string>{"passes", "--help"}, std::vector<std::string>{"plan", "--help"},
                       std::vector<std::string>{"sparsify", "--help"});
  CAPTURE(args);
  process_result r = run_cli(args);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("Usage"));
  CHECK(r.err.empty());
  if (args.size() == 2 && args[0] == "optimize") {
    for (const char* option : {"--passes", "--disable-pass", "--report", "--print-after-change", "--verify-each",
                               "--in-place", "--external-data-threshold"}) {
      CHECK_THAT(r.out, Contains(option));
    }
  }
  if (args.size() == 2 && args[0] == "sparsify") {
    for (const char* option : {"--output", "--block", "--sparsity", "--min-size", "--norm", "--dry-run", "--report"}) {
      CHECK_THAT(r.out, Contains(option));
    }
  }
  if (args.size() == 2 && args[0] == "plan") {
    for (const char* option : {"--json", "--include-io", "--no-in-place", "--alignment"}) {
      CHECK_THAT(r.out, Contains(option));
    }
  }
}

TEST_CASE("a missing or unknown subcommand is an error", "[cli]") {
  auto args = GENERATE(std::vector<std::string>{}, std::vector<std::string>{"frobnicate"},
                       std::vector<std::string>{"inspect"}, std::vector<std::string>{"optimize", "m.onnx"},
                       std::vector<std::string>{"--no-such-flag"});
  CAPTURE(args);
  process_result r = run_cli(args);
  CHECK(r.exit_code == 2);
  CHECK(is_one_error_line(r.err));
  CHECK(r.out.empty());
}

TEST_CASE("passes lists the registered passes and the -O levels", "[cli]") {
  process_result r = run_cli({"passes"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  for (const char* name : {"dce", "eliminate-identity", "eliminate-dropout", "remove-unused"}) {
    CHECK_THAT(r.out, Contains(std::string("  ") + name + " "));
  }
  for (int level = 0; level <= 3; ++level) CHECK_THAT(r.out, Contains("-O" + std::to_string(level)));
  CHECK(level_pipeline_text(0).empty());
  CHECK_THAT(level_pipeline_text(1), Contains("eliminate-identity") && Contains("dce"));
}

TEST_CASE("inspect describes the default model in text", "[cli][inspect]") {
  scratch dir("inspect_text");
  const auto model = save_default_model(dir / "default.onnx");
  const onnx::ModelProto proto = read_model_proto(model);

  process_result r = run_cli({"inspect", model.string()});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, StartsWith("graph      " + proto.graph().name() + "\n"));
  CHECK_THAT(r.out, Contains("nodes      " + std::to_string(proto.graph().node_size()) + "\n"));
  CHECK_THAT(r.out, Contains("\nparams     ") && Contains("\nMACs       ") && Contains("\nops:\n"));
  CHECK_THAT(r.out, Contains("  image  float[1x3x64x64]") && Contains("  logits  float[1x10]"));
  CHECK_THAT(r.out, Contains("  Conv "));
  CHECK(folder_entries(dir.path()) == std::vector<std::string>{"default.onnx"});
}

TEST_CASE("inspect --json reports ops, params, param_bytes and MACs of the default model", "[cli][inspect]") {
  scratch dir("inspect_json");
  const auto model = save_default_model(dir / "default.onnx");
  const onnx::ModelProto proto = read_model_proto(model);

  process_result r = run_cli({"inspect", model.string(), "--json"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  const json j = json::parse(r.out);
  for (const char* key : {"ops", "params", "param_bytes", "macs", "nodes", "inputs", "outputs", "opsets"}) {
    CAPTURE(key);
    CHECK(j.contains(key));
  }
  // Every initializer of the default model is float and used or not, all of them count.
  CHECK(j["params"].get<std::int64_t>() == initializer_elements(proto));
  CHECK(j["param_bytes"].get<std::int64_t>() == 4 * initializer_elements(proto));
  CHECK(j["nodes"].get<std::int64_t>() == proto.graph().node_size());
  std::int64_t op_total = 0;
  for (const auto& [op, count] : j["ops"].items()) {
    CAPTURE(op);
    CHECK(count.get<int>() == count_ops(proto, op));
    op_total += count.get<std::int64_t>();
  }
  CHECK(op_total == proto.graph().node_size());
  CHECK(j["macs"].get<std::int64_t>() > 0);
  CHECK(j["macs_unknown_nodes"].get<std::int64_t>() == 0);
  REQUIRE(j["inputs"].size() == 1);
  CHECK(j["inputs"][0]["name"] == "image");
  CHECK(j["inputs"][0]["shape"] == "1x3x64x64");
}

TEST_CASE("optimize -O0..-O3 writes a loadable model and a report with one entry per pass", "[cli][optimize]") {
  const int level = GENERATE(0, 1, 2, 3);
  CAPTURE(level);
  scratch dir("optimize_level");
  const auto model = save_default_model(dir / "default.onnx");
  const std::string input_bytes = read_bytes(model);
  const auto out = dir / "out.onnx";
  const auto report_path = dir / "report.json";

  process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "-O" + std::to_string(level),
                              "--report", report_path.string()});
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Contains("wrote " + out.string()));
  CHECK(read_bytes(model) == input_bytes);
  CHECK(folder_entries(dir.path()) == std::vector<std::string>{"default.onnx", "out.onnx", "report.json"});

  const onnx::ModelProto before = read_model_proto(model);
  const onnx::ModelProto after = read_model_proto(out);
  CHECK(output_names(after) == output_names(before));

  const json report = json::parse(read_bytes(report_path));
  const std::string pipeline = level_pipeline_text(level);
  CHECK(report["pipeline"] == pipeline);
  check_report_passes(report, pass_names_in(pipeline));
  CHECK(report["before"]["nodes"].get<int>() == before.graph().node_size());
  CHECK(report["after"]["nodes"].get<int>() == after.graph().node_size());
  CHECK(report["output"] == out.string());

  if (level == 0) {
    CHECK(after.graph().node_size() == before.graph().node_size());
  } else {
    // The default model carries exporter debris that every level from -O1 removes.
    CHECK(after.graph().node_size() < before.graph().node_size());
    CHECK(count_ops(after, "Identity") == 0);
    CHECK(count_ops(after, "Dropout") == 0);
    CHECK(after.graph().initializer_size() < before.graph().initializer_size());
  }
}

TEST_CASE("optimize --passes runs exactly the given pipeline", "[cli][optimize]") {
  scratch dir("optimize_passes");
  const auto model = save_default_model(dir / "default.onnx");
  const auto out = dir / "out.onnx";
  const auto report_path = dir / "report.json";

  SECTION("a flat list runs each pass once, in order") {
    process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "--passes", "dce,eliminate-identity",
                                "--report", report_path.string()});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, StartsWith("pipeline: dce,eliminate-identity\n"));
    const json report = json::parse(read_bytes(report_path));
    check_report_passes(report, {"dce", "eliminate-identity"});
    for (const json& p : report["passes"]) CHECK(p["runs"] == 1);
    const onnx::ModelProto after = read_model_proto(out);
    CHECK(count_ops(after, "Identity") == 0);
    CHECK(count_ops(after, "Dropout") == 1);  // not in the pipeline
  }
  SECTION("a fixpoint group reports each pass once however often it ran") {
    process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "--passes",
                                "fixpoint(eliminate-dropout,dce)", "--report", report_path.string()});
    REQUIRE(r.exit_code == 0);
    const json report = json::parse(read_bytes(report_path));
    check_report_passes(report, {"eliminate-dropout", "dce"});
    REQUIRE(report["fixpoints"].size() == 1);
    CHECK(report["fixpoints"][0]["converged"] == true);
    // A rollback copy before the first pass and after each pass that changed the graph, not
    // one per run: the last iteration changes nothing.
    int runs = 0;
    for (const json& p : report["passes"]) runs += p["runs"].get<int>();
    CHECK(report["rollback_snapshots"].get<int>() >= 1);
    CHECK(report["rollback_snapshots"].get<int>() < runs);
  }
  SECTION("--disable-pass leaves a pass out of a level's pipeline") {
    process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "-O1", "--disable-pass",
                                "eliminate-dropout", "--report", report_path.string()});
    REQUIRE(r.exit_code == 0);
    const json report = json::parse(read_bytes(report_path));
    for (const json& p : report["passes"]) CHECK(p["name"] != "eliminate-dropout");
    CHECK(count_ops(read_model_proto(out), "Dropout") == 1);
  }
  SECTION("-O and --passes together are refused") {
    process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "-O1", "--passes", "dce"});
    CHECK(r.exit_code == 2);
    CHECK(is_one_error_line(r.err));
    CHECK(!fs::exists(out));
  }
  SECTION("-O out of range is refused") {
    process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "-O7"});
    CHECK(r.exit_code == 2);
    CHECK(is_one_error_line(r.err));
    CHECK(!fs::exists(out));
  }
}

TEST_CASE("optimize --print-after-change prints the graph after each changing pass", "[cli][optimize]") {
  scratch dir("print_after_change");
  const auto model = save_default_model(dir / "default.onnx");
  const auto out = dir / "out.onnx";

  process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "--passes",
                              "eliminate-identity,eliminate-identity", "--print-after-change"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("----- after eliminate-identity") && Contains("graph inferopt_default_cnn (%image"));
  // The second run changes nothing, so the graph is printed once.
  const auto first = r.out.find("----- after");
  REQUIRE(first != std::string::npos);
  CHECK(r.out.find("----- after", first + 1) == std::string::npos);

  process_result quiet = run_cli({"optimize", model.string(), "-o", out.string(), "--passes", "eliminate-identity"});
  REQUIRE(quiet.exit_code == 0);
  CHECK(quiet.out.find("----- after") == std::string::npos);
}

TEST_CASE("optimize --verify-each gives the same model as a run without it", "[cli][optimize]") {
  scratch dir("verify_each");
  const auto model = save_default_model(dir / "default.onnx");
  process_result checked = run_cli({"optimize", model.string(), "-o", (dir / "a.onnx").string(), "-O3", "--verify-each"});
  CAPTURE(checked.err);
  REQUIRE(checked.exit_code == 0);
  process_result plain = run_cli({"optimize", model.string(), "-o", (dir / "b.onnx").string(), "-O3"});
  REQUIRE(plain.exit_code == 0);
  CHECK(read_bytes(dir / "a.onnx") == read_bytes(dir / "b.onnx"));
}

TEST_CASE("optimize --external-data-threshold writes weights beside the model", "[cli][optimize]") {
  scratch dir("external_data");
  const auto model = save_default_model(dir / "default.onnx");
  const auto out = dir / "out.onnx";
  process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "--external-data-threshold", "1024"});
  REQUIRE(r.exit_code == 0);
  REQUIRE(fs::exists(dir / "out.onnx.data"));
  CHECK(fs::file_size(dir / "out.onnx.data") > 0);
  CHECK(folder_entries(dir.path()) == std::vector<std::string>{"default.onnx", "out.onnx", "out.onnx.data"});

  process_result back = run_cli({"inspect", out.string(), "--json"});
  REQUIRE(back.exit_code == 0);
  const json j = json::parse(back.out);
  CHECK(j["params"].get<std::int64_t>() > 0);
}

TEST_CASE("optimize lists every inferred type in value_info, or with --value-info as-loaded what the input listed", "[cli][optimize]") {
  scratch dir("value_info");
  onnx::ModelProto bare = read_model_proto(save_default_model(dir / "default.onnx"));
  REQUIRE(bare.graph().value_info_size() > 0);
  const int listed_by_builder = bare.graph().value_info_size();
  bare.mutable_graph()->clear_value_info();
  write_bytes(dir / "bare.onnx", bare.SerializeAsString());

  auto value_info_after = [&](const fs::path& input, std::vector<std::string> extra) {
    std::vector<std::string> args{"optimize", input.string(), "-o", (dir / "out.onnx").string(), "-O1"};
    args.insert(args.end(), extra.begin(), extra.end());
    const process_result r = run_cli(args);
    REQUIRE(r.exit_code == 0);
    return read_model_proto(dir / "out.onnx").graph().value_info_size();
  };
  const int complete = value_info_after(dir / "bare.onnx", {});
  CHECK(complete > 0);
  CHECK(value_info_after(dir / "bare.onnx", {"--value-info", "all"}) == complete);
  CHECK(value_info_after(dir / "bare.onnx", {"--value-info", "as-loaded"}) == 0);
  const int kept = value_info_after(dir / "default.onnx", {"--value-info", "as-loaded"});
  CHECK(kept > 0);
  CHECK(kept <= listed_by_builder);

  const process_result bad = run_cli({"optimize", (dir / "bare.onnx").string(), "-o", (dir / "x.onnx").string(),
                                      "--value-info", "some"});
  CHECK(bad.exit_code == 2);
  CHECK_FALSE(fs::exists(dir / "x.onnx"));
}

TEST_CASE("an unknown pass name is an error that suggests the nearest names", "[cli][optimize]") {
  scratch dir("unknown_pass");
  const auto model = save_default_model(dir / "default.onnx");
  const auto out = dir / "out.onnx";

  SECTION("in --passes") {
    process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "--passes", "dec"});
    CHECK(r.exit_code == 2);
    CHECK(is_one_error_line(r.err));
    CHECK_THAT(r.err, Contains("unknown pass 'dec'") && Contains("'dce'"));
  }
  SECTION("inside a fixpoint group") {
    process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "--passes", "fixpoint(dce,eliminate-identiy)"});
    CHECK(r.exit_code == 2);
    CHECK(is_one_error_line(r.err));
    CHECK_THAT(r.err, Contains("unknown pass 'eliminate-identiy'") && Contains("'eliminate-identity'"));
  }
  SECTION("with several close names, all of them") {
    process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "--passes", "eliminate"});
    CHECK(r.exit_code == 2);
    CHECK(is_one_error_line(r.err));
    CHECK_THAT(r.err, Contains("'eliminate-identity'") && Contains("'eliminate-dropout'"));
  }
  SECTION("in --disable-pass") {
    process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "--disable-pass", "dec"});
    CHECK(r.exit_code == 2);
    CHECK(is_one_error_line(r.err));
    CHECK_THAT(r.err, Contains("unknown pass 'dec'") && Contains("'dce'"));
  }
  SECTION("a malformed pipeline text") {
    process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "--passes", "fixpoint(dce"});
    CHECK(r.exit_code == 2);
    CHECK(is_one_error_line(r.err));
  }
  CHECK(folder_entries(dir.path()) == std::vector<std::string>{"default.onnx"});
}

TEST_CASE("an unwritable output path is one error line and exit code 2", "[cli][optimize]") {
  scratch dir("unwritable");
  const auto model = save_default_model(dir / "default.onnx");
  const std::string input_bytes = read_bytes(model);
  const std::string out = GENERATE(std::string("/proc/forbidden/out.onnx"), std::string("/nonexistent-dir/x/out.onnx"),
                                   std::string("no-such-subdir/out.onnx"));
  const std::string target = out.front() == '/' ? out : (dir.path() / out).string();
  CAPTURE(target);

  process_result r = run_cli({"optimize", model.string(), "-o", target, "--report", (dir / "r.json").string()});
  CHECK(r.exit_code == 2);
  CHECK(is_one_error_line(r.err));
  CHECK_THAT(r.err, Contains(target));
  CHECK(r.out.empty());
  CHECK(read_bytes(model) == input_bytes);
  CHECK(folder_entries(dir.path()) == std::vector<std::string>{"default.onnx"});
}

TEST_CASE("an unwritable report path fails before the model is written", "[cli][optimize]") {
  scratch dir("unwritable_report");
  const auto model = save_default_model(dir / "default.onnx");
  const auto report_path = dir / "missing" / "r.json";
  process_result r =
      run_cli({"optimize", model.string(), "-o", (dir / "out.onnx").string(), "--report", report_path.string()});
  CHECK(r.exit_code == 2);
  CHECK(is_one_error_line(r.err));
  CHECK_THAT(r.err, Contains(report_path.string()));
  CHECK(r.out.empty());
  CHECK(folder_entries(dir.path()) == std::vector<std::string>{"default.onnx"});
}

TEST_CASE("optimize refuses to overwrite its input unless --in-place is given", "[cli][optimize]") {
  scratch dir("in_place");
  const auto model = save_default_model(dir / "model.onnx");
  const std::string input_bytes = read_bytes(model);

  SECTION("the same path is refused and the input is untouched") {
    const std::string out = GENERATE(as<std::string>{}, "model.onnx", "./model.onnx", "sub/../model.onnx");
    fs::create_directories(dir / "sub");
    CAPTURE(out);
    process_result r = run_cli({"optimize", model.string(), "-o", (dir.path() / out).string()});
    CHECK(r.exit_code == 2);
    CHECK(is_one_error_line(r.err));
    CHECK_THAT(r.err, Contains("--in-place"));
    CHECK(read_bytes(model) == input_bytes);
    CHECK(folder_entries(dir.path()) == std::vector<std::string>{"model.onnx", "sub"});
  }
  SECTION("a hard link to the input is the same file") {
    fs::create_hard_link(model, dir / "alias.onnx");
    process_result r = run_cli({"optimize", model.string(), "-o", (dir / "alias.onnx").string()});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("--in-place"));
    CHECK(read_bytes(model) == input_bytes);
  }
  SECTION("with --in-place the input is replaced by the optimized model") {
    process_result r = run_cli({"optimize", model.string(), "-o", model.string(), "--in-place", "-O1"});
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    const std::string now = read_bytes(model);
    CHECK(now != input_bytes);
    onnx::ModelProto before;
    REQUIRE(before.ParseFromString(input_bytes));
    const onnx::ModelProto after = read_model_proto(model);
    CHECK(after.graph().node_size() < before.graph().node_size());
    CHECK(folder_entries(dir.path()) == std::vector<std::string>{"model.onnx"});
  }
}

TEST_CASE("optimize -O1 on every light model succeeds with one report entry per pass", "[cli][optimize][light]") {
  auto models = light_models_dir();
  if (!models) {
    WARN("../shared/models/onnx-light is absent; skipped");
    return;
  }
  const std::string pipeline = level_pipeline_text(1);
  scratch dir("light");
  int count = 0;
  for (const auto& e : fs::directory_iterator(*models)) {
    if (e.path().extension() != ".onnx") continue;
    ++count;
    CAPTURE(e.path().filename().string());
    const auto out = dir / e.path().filename().string();
    const auto report_path = dir / (e.path().stem().string() + ".json");
    process_result r =
        run_cli({"optimize", e.path().string(), "-o", out.string(), "-O1", "--report", report_path.string()});
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    check_report_passes(json::parse(read_bytes(report_path)), pass_names_in(pipeline));
    CHECK(output_names(read_model_proto(out)) == output_names(read_model_proto(e.path())));
  }
  CHECK(count == 9);
}

TEST_CASE("optimize keeps an IR 3 model valid: initializers it creates are graph inputs too", "[cli][optimize]") {
  // IR versions up to 3 require every initializer to be listed among the graph inputs;
  // folding `c = Constant()` creates an initializer the original file never listed.
  onnx::ModelProto m;
  m.set_ir_version(3);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(9);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("g");
  for (auto [list, name] : {std::pair{g.add_input(), "x"}, std::pair{g.add_output(), "y"}}) {
    list->set_name(name);
    auto* tt = list->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(4);
  }
  onnx::NodeProto& c = *g.add_node();
  c.set_op_type("Constant");
  c.set_name("c");
  c.add_output("c");
  onnx::AttributeProto& value = *c.add_attribute();
  value.set_name("value");
  value.set_type(onnx::AttributeProto::TENSOR);
  value.mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value.mutable_t()->add_dims(4);
  for (float f : {1.0f, 2.0f, 3.0f, 4.0f}) value.mutable_t()->add_float_data(f);
  onnx::NodeProto& add = *g.add_node();
  add.set_op_type("Add");
  add.set_name("add");
  add.add_input("x");
  add.add_input("c");
  add.add_output("y");

  scratch dir("ir3");
  write_bytes(dir / "ir3.onnx", m.SerializeAsString());
  process_result r = run_cli({"optimize", (dir / "ir3.onnx").string(), "-o", (dir / "out.onnx").string(), "-O1"});
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  const onnx::ModelProto out = read_model_proto(dir / "out.onnx");
  CHECK(out.ir_version() == 3);
  if (out.graph().initializer_size() == 0) WARN("-O1 folded no constant; the check below is vacuous");
  std::vector<std::string> inputs;
  for (const auto& i : out.graph().input()) inputs.push_back(i.name());
  for (const auto& t : out.graph().initializer()) {
    CAPTURE(t.name());
    CHECK(std::find(inputs.begin(), inputs.end(), t.name()) != inputs.end());
  }
  CHECK(inputs.front() == "x");
}

TEST_CASE("optimize --verify prints the error per output and records it in the report", "[cli][optimize][verify]") {
  scratch dir("verify");
  const auto model = save_default_model(dir / "default.onnx");
  const auto out = dir / "out.onnx", report_path = dir / "report.json";
  process_result r = run_cli({"optimize", model.string(), "-o", out.string(), "-O3", "--verify", "--random-inputs", "5",
                              "--threads", "1", "--report", report_path.string()});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("verify: original vs optimized on random inputs (seed 5)"));
  CHECK_THAT(r.out, Contains("logits"));
  CHECK_THAT(r.out, Contains("outputs match"));
  const json report = json::parse(read_bytes(report_path));
  REQUIRE(report.contains("verify"));
  CHECK(report["verify"]["match"] == true);
  REQUIRE(report["verify"]["outputs"].size() == 1);
  CHECK(report["verify"]["outputs"][0]["max_abs"].get<double>() <= 1e-4);
  CHECK(std::filesystem::exists(out));
}

TEST_CASE("optimize --bisect checks every changing pass run and reports no divergence for -O3", "[cli][optimize][verify]") {
  scratch dir("bisect");
  const auto model = save_default_model(dir / "default.onnx");
  const auto report_path = dir / "report.json";
  process_result r = run_cli({"optimize", model.string(), "-o", (dir / "out.onnx").string(), "-O3", "--bisect",
                              "--threads", "1", "--report", report_path.string()});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("bisect: no pass moved an output beyond tolerance"));
  const json report = json::parse(read_bytes(report_path));
  CHECK(report["bisect"]["first_pass"].is_null());
  CHECK(report["bisect"]["checks"].get<int>() >= 1);
}

TEST_CASE("quantize needs calibration data and says so in one line", "[cli][quantize]") {
  scratch dir("quantize_args");
  const auto model = save_default_model(dir / "default.onnx");
  process_result r = run_cli({"quantize", model.string(), "-o", (dir / "q.onnx").string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--calib-dir"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(dir / "q.onnx"));
  process_result missing = run_cli({"quantize", model.string(), "-o", (dir / "q.onnx").string(), "--calib-dir",
                                    (dir / "nowhere").string()});
  CHECK(missing.exit_code == 2);
  CHECK_FALSE(std::filesystem::exists(dir / "q.onnx"));
}

TEST_CASE("quantize refuses random calibration of token ids with one line naming the input", "[cli][quantize]") {
  scratch dir("quantize_tokens");
  const fs::path model = fs::path(INFEROPT_SOURCE_DIR) / "tests/models/corpus/minilm_ts.onnx";
  process_result r = run_cli({"quantize", model.string(), "-o", (dir / "q.onnx").string(), "--calib-random", "4"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("integer input 'input_ids'") && Contains("--calib-dir"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_FALSE(fs::exists(dir / "q.onnx"));
}

TEST_CASE("quantize calibrates a text encoder on sentences and judges it by output cosine", "[cli][quantize]") {
  scratch dir("quantize_text");
  const fs::path source(INFEROPT_SOURCE_DIR);
  const fs::path sentences = dir / "sentences.txt", q = dir / "q.onnx", report = dir / "report.json";
  std::ofstream(sentences) << "The quick brown fox jumps over the lazy dog.\nCafé naïve résumé!\n\n東京 model runs faster\n";
  process_result r = run_cli({"quantize", (source / "tests/models/corpus/minilm_ts.onnx").string(), "-o", q.string(), "--calib-text",
                              sentences.string(), "--tokenizer", (source / "tests/data/tokenizer/wordpiece_tokenizer.json").string(),
                              "--report", report.string(), "--no-fallback"});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("calibrating on 3 batch(es)"));  // the empty line is skipped
  const json j = json::parse(read_bytes(report));
  CHECK(j["fallback_metric"] == "cosine");  // last_hidden_state [batch, sequence, hidden]
  CHECK(j["nodes_quantized"].get<int>() > 0);
  process_result alone = run_cli({"quantize", (source / "tests/models/corpus/minilm_ts.onnx").string(), "-o", q.string(), "--calib-text",
                                  sentences.string()});
  CHECK(alone.exit_code == 2);
  CHECK_THAT(alone.err, Contains("--calib-text and --tokenizer go together"));
}

TEST_CASE("quantize runs sentences at their own lengths, and names --seq-len when one is longer than the model takes", "[cli][quantize]") {
  scratch dir("quantize_text_length");
  const fs::path source(INFEROPT_SOURCE_DIR);
  const std::string model = (source / "tests/models/corpus/bert_dynamic_ts.onnx").string();  // 64 positions
  const std::string tokenizer = (source / "tests/data/tokenizer/wordpiece_tokenizer.json").string();
  const fs::path sentences = dir / "sentences.txt", q = dir / "q.onnx";
  std::string long_line;
  for (int k = 0; k < 80; ++k) long_line += "fox ";
  std::ofstream(sentences) << "The quick brown fox jumps over the lazy dog.\n" << long_line << "\n";
  process_result too_long = run_cli({"quantize", model, "-o", q.string(), "--calib-text", sentences.string(), "--tokenizer", tokenizer});
  CAPTURE(too_long.out, too_long.err);
  CHECK(too_long.exit_code == 2);
  CHECK_THAT(too_long.err, Contains("up to 82 tokens here") && Contains("--seq-len N truncates"));
  CHECK_FALSE(fs::exists(q));
  process_result bounded = run_cli({"quantize", model, "-o", q.string(), "--calib-text", sentences.string(), "--tokenizer", tokenizer,
                                    "--seq-len", "48", "--no-fallback"});
  CAPTURE(bounded.out, bounded.err);
  CHECK(bounded.exit_code == 0);
  CHECK(fs::exists(q));
}

TEST_CASE("quantize --mode dynamic needs no calibration and measures on sentences when given", "[cli][quantize]") {
  scratch dir("quantize_dynamic");
  const fs::path source(INFEROPT_SOURCE_DIR);
  const fs::path model = source / "tests/models/corpus/minilm_ts.onnx", q = dir / "q.onnx", report = dir / "report.json";
  process_result bare = run_cli({"quantize", model.string(), "-o", q.string(), "--mode", "dynamic"});
  CAPTURE(bare.out, bare.err);
  REQUIRE(bare.exit_code == 0);
  CHECK_THAT(bare.out, Contains("linear layers dynamically") && Contains("error not measured"));
  const fs::path sentences = dir / "sentences.txt";
  std::ofstream(sentences) << "The quick brown fox jumps over the lazy dog.\nCafé naïve résumé!\n";
  process_result measured = run_cli({"quantize", model.string(), "-o", q.string(), "--mode", "dynamic", "--calib-text",
                                     sentences.string(), "--tokenizer", (source / "tests/data/tokenizer/wordpiece_tokenizer.json").string(),
                                     "--report", report.string()});
  CAPTURE(measured.out, measured.err);
  REQUIRE(measured.exit_code == 0);
  const json j = json::parse(read_bytes(report));
  CHECK(j["mode"] == "dynamic");
  CHECK(j["nodes_quantized"].get<int>() > 0);
  CHECK(j["output_cosine"].get<double>() > 0.99);
  const onnx::ModelProto written = read_model_proto(q);
  CHECK(std::any_of(written.graph().node().begin(), written.graph().node().end(),
                    [](const onnx::NodeProto& n) { return n.op_type() == "MatMulInteger"; }));
}

TEST_CASE("quantize --smooth-quant reports the smoothed activations, and --op-types narrows what is quantized", "[cli][quantize]") {
  scratch dir("quantize_smooth");
  const fs::path model = fs::path(INFEROPT_SOURCE_DIR) / "tests/models/corpus/vit_ts.onnx", report = dir / "report.json";
  process_result r = run_cli({"quantize", model.string(), "-o", (dir / "q.onnx").string(), "--calib-random", "4", "--smooth-quant",
                              "0.5", "--report", report.string(), "--no-fallback"});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("SmoothQuant (alpha 0.5)") && Contains("attention model: quantizing MatMul and Gemm only"));
  const json j = json::parse(read_bytes(report));
  REQUIRE(j["smooth_quant"].size() > 0);
  CHECK(j["smooth_quant"][0]["outlier_ratio_after"].get<double>() <= j["smooth_quant"][0]["outlier_ratio_before"].get<double>());
  process_result only_gemm = run_cli({"quantize", model.string(), "-o", (dir / "g.onnx").string(), "--calib-random", "2",
                                      "--op-types", "Gemm", "--report", report.string(), "--no-fallback"});
  REQUIRE(only_gemm.exit_code == 0);
  CHECK_THAT(only_gemm.out, !Contains("attention model"));
  const json g = json::parse(read_bytes(report));
  CHECK(g["nodes_quantized"].get<int>() < j["nodes_quantized"].get<int>());
  process_result bad = run_cli({"quantize", model.string(), "-o", (dir / "b.onnx").string(), "--calib-random", "2", "--smooth-quant", "2"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains("alpha must be in [0, 1]"));
}

TEST_CASE("quantize refuses calibration outputs in dynamic mode and an unknown mode", "[cli][quantize]") {
  scratch dir("quantize_dynamic_refusals");
  const fs::path model = fs::path(INFEROPT_SOURCE_DIR) / "tests/models/corpus/minilm_ts.onnx";
  process_result cache = run_cli({"quantize", model.string(), "-o", (dir / "q.onnx").string(), "--mode", "dynamic", "--trt-cache",
                                  (dir / "c.cache").string()});
  CHECK(cache.exit_code == 2);
  CHECK_THAT(cache.err, Contains("--trt-cache needs a calibration"));
  process_result mode = run_cli({"quantize", model.string(), "-o", (dir / "q.onnx").string(), "--mode", "later"});
  CHECK(mode.exit_code == 2);
  CHECK_THAT(mode.err, Contains("--mode must be static or dynamic"));
  CHECK_FALSE(fs::exists(dir / "q.onnx"));
}

TEST_CASE("quantize and fp16 write models with QDQ nodes and float16 weights", "[cli][quantize]") {
  scratch dir("quantize");
  const auto model = save_default_model(dir / "default.onnx");
  const auto q = dir / "q.onnx", h = dir / "h.onnx", report = dir / "report.json";
  process_result r = run_cli({"quantize", model.string(), "-o", q.string(), "--calib-random", "4", "--method",
                              "percentile", "--report", report.string()});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("top-1 agreement with float"));
  const json j = json::parse(read_bytes(report));
  CHECK(j["nodes_quantized"].get<int>() > 0);
  CHECK(j["sqnr"].size() > 0);
  CHECK(j["fallback_metric"] == "top1");  // the default model's logits
  CHECK(j["output_cosine"].get<double>() > 0.9);
  const onnx::ModelProto qm = read_model_proto(q);
  CHECK(std::any_of(qm.graph().node().begin(), qm.graph().node().end(),
                    [](const onnx::NodeProto& n) { return n.op_type() == "QuantizeLinear"; }));
  process_result f = run_cli({"fp16", model.string(), "-o", h.string()});
  CAPTURE(f.out, f.err);
  REQUIRE(f.exit_code == 0);
  const onnx::ModelProto hm = read_model_proto(h);
  CHECK(std::any_of(hm.graph().initializer().begin(), hm.graph().initializer().end(),
                    [](const onnx::TensorProto& t) { return t.data_type() == onnx::TensorProto::FLOAT16; }));
}

namespace {

/// `inferopt plan MODEL --json EXTRA...`, which must succeed quietly.
json plan_json(const fs::path& model, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"plan", model.string(), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  process_result r = run_cli(args);
  CAPTURE(args, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("plan --json reports arena, naive and lower-bound bytes that agree with every tensor", "[cli][plan]") {
  scratch dir("plan_json");
  const auto model = save_default_model(dir / "default.onnx");
  const onnx::ModelProto proto = read_model_proto(model);
  const json j = plan_json(model);
  for (const char* key : {"arena_bytes", "naive_bytes", "lower_bound_bytes", "tensors", "steps", "in_place",
                          "unknown_size", "arena_over_lower_bound", "arena_over_naive", "tensors_detail"}) {
    CAPTURE(key);
    CHECK(j.contains(key));
  }
  const auto arena = j["arena_bytes"].get<std::uint64_t>();
  const auto naive = j["naive_bytes"].get<std::uint64_t>();
  const auto bound = j["lower_bound_bytes"].get<std::uint64_t>();
  const auto steps = j["steps"].get<std::uint64_t>();
  CHECK(arena > 0);
  CHECK(arena <= naive);
  CHECK((arena >= bound || j["in_place"].get<int>() > 0));
  CHECK(j["arena_over_lower_bound"].get<double>() == Approx(static_cast<double>(arena) / static_cast<double>(bound)));
  CHECK(j["arena_over_naive"].get<double>() == Approx(static_cast<double>(arena) / static_cast<double>(naive)));
  CHECK(steps == static_cast<std::uint64_t>(proto.graph().node_size()));
  CHECK(j["unknown_size"] == 0);

  // Each entry: in the arena, aligned, within the steps; sizes add up to the naive figure;
  // tensors live at one step share no byte unless one of them reuses the other in place.
  const json& detail = j["tensors_detail"];
  REQUIRE(detail.size() == j["tensors"].get<std::size_t>());
  std::uint64_t aligned_total = 0;
  int in_place = 0;
  for (const json& t : detail) {
    CAPTURE(t.dump());
    const auto offset = t["offset"].get<std::uint64_t>();
    const auto size = t["size"].get<std::uint64_t>();
    CHECK(offset % 64 == 0);
    CHECK(offset + size <= arena);
    CHECK(t["first_use"].get<std::uint64_t>() <= t["last_use"].get<std::uint64_t>());
    CHECK(t["last_use"].get<std::uint64_t>() < steps);
    aligned_total += (size + 63) / 64 * 64;
    in_place += t["in_place"].get<bool>() ? 1 : 0;
  }
  CHECK(aligned_total == naive);
  CHECK(in_place == j["in_place"].get<int>());
  for (std::size_t a = 0; a < detail.size(); ++a) {
    for (std::size_t b = a + 1; b < detail.size(); ++b) {
      const json& x = detail[a];
      const json& y = detail[b];
      auto at = [](const json& t, const char* key) { return t[key].get<std::uint64_t>(); };
      const bool live_together = at(x, "first_use") <= at(y, "last_use") && at(y, "first_use") <= at(x, "last_use");
      const bool share_bytes =
          at(x, "offset") < at(y, "offset") + at(y, "size") && at(y, "offset") < at(x, "offset") + at(x, "size");
      CAPTURE(x.dump(), y.dump());
      if (live_together && share_bytes) CHECK((x["in_place"].get<bool>() || y["in_place"].get<bool>()));
    }
  }

  SECTION("--no-in-place: no reuse, and the arena is at least the lower bound") {
    const json k = plan_json(model, {"--no-in-place"});
    CHECK(k["in_place"] == 0);
    CHECK(k["naive_bytes"] == naive);
    CHECK(k["lower_bound_bytes"] == bound);
    CHECK(k["arena_bytes"].get<std::uint64_t>() >= bound);
    CHECK(k["arena_bytes"].get<std::uint64_t>() <= naive);
  }
  SECTION("--include-io adds the graph inputs and outputs") {
    const json k = plan_json(model, {"--include-io"});
    const int io = proto.graph().input_size() + proto.graph().output_size();
    CHECK(k["tensors"].get<int>() == j["tensors"].get<int>() + io);
    std::vector<std::string> names;
    for (const json& t : k["tensors_detail"]) names.push_back(t["name"].get<std::string>());
    for (const auto& v : proto.graph().input()) CHECK(std::count(names.begin(), names.end(), v.name()) == 1);
    for (const auto& v : proto.graph().output()) CHECK(std::count(names.begin(), names.end(), v.name()) == 1);
  }
  SECTION("--alignment 256 aligns every offset to 256 bytes") {
    const json k = plan_json(model, {"--alignment", "256"});
    for (const json& t : k["tensors_detail"]) CHECK(t["offset"].get<std::uint64_t>() % 256 == 0);
    CHECK(k["naive_bytes"].get<std::uint64_t>() >= naive);
  }
}

TEST_CASE("plan prints a short report in text", "[cli][plan]") {
  scratch dir("plan_text");
  const auto model = save_default_model(dir / "default.onnx");
  const json j = plan_json(model);
  process_result r = run_cli({"plan", model.string()});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, StartsWith("tensors              " + j["tensors"].dump() + " planned over " + j["steps"].dump() +
                               " steps\n"));
  CHECK_THAT(r.out, Contains("\narena                ") && Contains("(" + j["arena_bytes"].dump() + " bytes)"));
  CHECK_THAT(r.out, Contains("\nnaive                ") && Contains("(" + j["naive_bytes"].dump() + " bytes)"));
  CHECK_THAT(r.out, Contains("\nlower bound          ") && Contains("(" + j["lower_bound_bytes"].dump() + " bytes)"));
  CHECK_THAT(r.out, Contains("\narena / lower bound  ") && Contains("\narena / naive        "));
  CHECK_THAT(r.out, Contains("\nin place             " + j["in_place"].dump() + "\n"));
  CHECK_THAT(r.out, Contains("\nunknown size         0\n"));
  CHECK(folder_entries(dir.path()) == std::vector<std::string>{"default.onnx"});
}

TEST_CASE("plan refuses an alignment that is not a power of two in one line", "[cli][plan]") {
  scratch dir("plan_alignment");
  const auto model = save_default_model(dir / "default.onnx");
  for (const char* alignment : {"0", "48"}) {
    CAPTURE(alignment);
    process_result r = run_cli({"plan", model.string(), "--alignment", alignment});
    CHECK(r.exit_code == 2);
    CHECK(is_one_error_line(r.err));
    CHECK_THAT(r.err, Contains("--alignment"));
    CHECK(r.out.empty());
  }
}

TEST_CASE("bench reports the weights the session holds, and --no-winograd holds no more of them", "[cli][bench]") {
  scratch dir("bench_weights");
  const auto model = save_default_model(dir / "default.onnx");
  const auto weights_of = [&](bool winograd) {
    std::vector<std::string> args{"bench", model.string(), "--warmup", "0", "--iters", "2", "--threads", "1", "--json"};
    if (!winograd) args.push_back("--no-winograd");
    const process_result r = run_cli(args);
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(r.out);
    REQUIRE(j.contains("weights"));
    return std::pair{j["weights"]["initializer_bytes"].get<std::size_t>(), j["weights"]["kernel_bytes"].get<std::size_t>()};
  };
  const auto [initializers, kernels] = weights_of(true);
  const auto [initializers_direct, kernels_direct] = weights_of(false);
  CHECK(initializers + kernels > 0);
  CHECK(initializers == initializers_direct);
  CHECK(kernels_direct <= kernels);
  const process_result text = run_cli({"bench", model.string(), "--warmup", "0", "--iters", "2", "--no-winograd"});
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("weights held: "));
}

TEST_CASE("bench --profile --slowest-nodes reports time per op type and the slowest nodes", "[cli][bench]") {
  scratch dir("bench_profile");
  const auto model = save_default_model(dir / "default.onnx");
  process_result r = run_cli({"bench", model.string(), "--warmup", "0", "--iters", "2", "--threads", "1", "--json",
                              "--profile", "--slowest-nodes", "3"});
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  REQUIRE(j.contains("profile_ms"));
  REQUIRE(j.contains("node_profile_ms"));
  CHECK(j["node_profile_ms"].size() > 3);  // the JSON has every node the session ran; the text the slowest
  double per_op = 0, per_node = 0;
  for (const auto& [op, ms] : j["profile_ms"].items()) per_op += ms.get<double>();
  for (const auto& [node, ms] : j["node_profile_ms"].items()) per_node += ms.get<double>();
  CHECK(per_node == Approx(per_op).epsilon(1e-6));

  r = run_cli({"bench", model.string(), "--warmup", "0", "--iters", "2", "--slowest-nodes", "3"});
  REQUIRE(r.exit_code == 0);
  const std::string listed = r.out.substr(r.out.find("slowest nodes"));
  CHECK(std::count(listed.begin(), listed.end(), '\n') == 4);  // the title and three nodes

  r = run_cli({"bench", model.string(), "--slowest-nodes", "-1"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--slowest-nodes"));
}
