// Malformed model files given to `inspect`, `optimize`, `plan`, `sparsify`, `prune` and `convert`. For every one of
// them the CLI must exit with code 2, print exactly one `inferopt: error:` line naming the file
// and the problem, print nothing on stdout, never touch the input, and leave no output, report
// or temporary file behind.

#include <catch2/catch.hpp>

#include "cli/bad_models.hpp"
#include "cli/cli_support.hpp"
#include "cli/every_command.hpp"

namespace {

using namespace inferopt::test;
using Catch::Matchers::Contains;

/// One malformed model: how to make its bytes and what the error must say.
struct bad_input {
  std::string name;     // file name, also expected in the message
  std::string problem;  // a phrase the message must contain
  std::string (*make)(const fs::path& scratch_root);
};

std::string empty_file(const fs::path&) { return {}; }

std::string random_file(const fs::path&) { return random_bytes(4096); }

/// The first half of a real saved model (the default one).
std::string truncated_file(const fs::path& root) {
  const auto full = save_default_model(root / "full.onnx");
  std::string bytes = read_bytes(full);
  fs::remove(full);
  bytes.resize(bytes.size() / 2);
  return bytes;
}

std::string cycle_file(const fs::path&) { return cycle_model_bytes(); }

std::string missing_input_file(const fs::path&) { return missing_input_model_bytes(); }

std::string escaping_external_data_file(const fs::path&) { return external_data_model_bytes("../../etc/passwd"); }

std::string absolute_external_data_file(const fs::path&) { return external_data_model_bytes("/etc/passwd"); }

}  // namespace

TEST_CASE("inspect, optimize, plan, sparsify, prune and convert reject malformed models with one error line and no side effects",
          "[cli][bad-input]") {
  const bad_input input = GENERATE(values<bad_input>({
      {"empty.onnx", "empty file", empty_file},
      {"random.onnx", "cannot parse", random_file},
      {"truncated.onnx", "truncated", truncated_file},
      {"cycle.onnx", "cycle", cycle_file},
      {"missing_input.onnx", "input 'missing' is not defined", missing_input_file},
      {"escape.onnx", "'../../etc/passwd' escapes the model's folder", escaping_external_data_file},
      {"absolute.onnx", "'/etc/passwd' is absolute", absolute_external_data_file},
  }));
  CAPTURE(input.name);

  // The model sits two folders deep, so `../../etc/passwd` stays inside the scratch folder
  // and a loader that followed it would find a planted file, not the system's.
  scratch root("bad_input");
  const fs::path in_dir = root.path() / "a" / "in";
  const fs::path out_dir = root.path() / "out";
  fs::create_directories(in_dir);
  fs::create_directories(out_dir);
  fs::create_directories(root.path() / "etc");
  write_bytes(root.path() / "etc" / "passwd", std::string(16, '\x01'));
  const fs::path model = in_dir / input.name;
  const std::string bytes = input.make(root.path());
  write_bytes(model, bytes);
  const auto in_entries = folder_entries(in_dir);

  std::vector<std::string> args;
  SECTION("inspect") { args = {"inspect", model.string()}; }
  SECTION("inspect --json") { args = {"inspect", model.string(), "--json"}; }
  SECTION("plan") { args = {"plan", model.string()}; }
  SECTION("plan --json --include-io") { args = {"plan", model.string(), "--json", "--include-io"}; }
  SECTION("optimize") {
    args = {"optimize", model.string(), "-o", (out_dir / "out.onnx").string(), "--report",
            (out_dir / "report.json").string()};
  }
  SECTION("sparsify") {
    args = {"sparsify", model.string(), "-o", (out_dir / "out.onnx").string(), "--report",
            (out_dir / "report.json").string()};
  }
  SECTION("sparsify --dry-run") { args = {"sparsify", model.string(), "--dry-run", "--min-size", "0"}; }
  SECTION("prune --explain") {
    args = {"prune", model.string(), "-o", (out_dir / "out.onnx").string(), "--explain", "--report",
            (out_dir / "report.json").string()};
  }
  SECTION("convert") {
    args = {"convert", model.string(), "-o", (out_dir / "out.onnx").string(), "--opset", "13", "--report",
            (out_dir / "report.json").string()};
  }
  SECTION("optimize -O3 --verify-each --print-after-change") {
    args = {"optimize", model.string(), "-o", (out_dir / "out.onnx").string(), "-O3", "--verify-each",
            "--print-after-change", "--external-data-threshold", "0"};
  }
  CAPTURE(args);

  process_result r = run_cli(args);
  CAPTURE(r.err);
  REQUIRE(r.exited());  // no crash, no hang
  CHECK(r.exit_code == 2);
  CHECK(is_one_error_line(r.err));
  CHECK_THAT(r.err, Contains(input.name) && Contains(input.problem));
  CHECK(r.out.empty());
  CHECK(read_bytes(model) == bytes);
  CHECK(folder_entries(in_dir) == in_entries);
  CHECK(folder_entries(out_dir).empty());
}

TEST_CASE("a model whose shapes contradict its nodes is one error line naming the node, for every command",
          "[cli][bad-input]") {
  struct shape_case {
    const char* name;
    std::string bytes;
    const char* node;
    const char* problem;
  };
  const shape_case input = GENERATE(values<shape_case>({
      {"contradiction.onnx", contradicting_shape_model_bytes(), "'relu_a'", "declared 1x5 but computes 1x4"},
      {"zero_stride.onnx", zero_stride_model_bytes(), "'pool'", "strides [0,0] has an entry below 1"},
  }));
  CAPTURE(input.name);
  scratch root("bad_shapes");
  const fs::path model = root.path() / input.name;
  const fs::path out = root.path() / "out";
  fs::create_directories(out);
  write_bytes(model, input.bytes);

  for (const auto& args : every_command(model, out)) {
    CAPTURE(args);
    const process_result r = run_cli(args);
    CAPTURE(r.err);
    check_refused(r, model, input.bytes, out, {input.node, input.problem});
  }
}

TEST_CASE("a model file that does not exist or is a folder is one error line", "[cli][bad-input]") {
  scratch root("missing_file");
  const std::string path = GENERATE(std::string("nope.onnx"), std::string("."));
  const fs::path model = root.path() / path;
  CAPTURE(model);
  for (const auto& args : {std::vector<std::string>{"inspect", model.string()},
                           std::vector<std::string>{"plan", model.string(), "--json"},
                           std::vector<std::string>{"optimize", model.string(), "-o", (root / "out.onnx").string()}}) {
    process_result r = run_cli(args);
    CHECK(r.exit_code == 2);
    CHECK(is_one_error_line(r.err));
    CHECK(r.out.empty());
  }
  CHECK(folder_entries(root.path()).empty());
}
