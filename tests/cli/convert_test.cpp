// `inferopt convert`, run as a child process: a conversion up and back down prints the opsets
// and the adapters and writes a model and a report; a target opset out of range and a node the
// target opset cannot express are one error line (exit 2) with nothing written. Malformed
// models are in bad_input_test.cpp.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "inferopt/ir/graph_builder.hpp"

namespace {

using namespace inferopt::test;
using Catch::Matchers::Contains;
using json = nlohmann::json;
namespace ir = inferopt::ir;

/// x [2, 4] -> Unsqueeze(axes [0]) -> LayerNormalization named `ln` (opset 17) -> y, at `opset`.
fs::path save_model_with(const fs::path& path, std::int64_t opset, bool layer_norm) {
  ir::model m = ir::make_model("convert", opset);
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", ir::value_type{true, ir::data_type::float32, ir::shape{2, 4}});
  // Unsqueeze's axes moved from an attribute to an input at opset 13.
  std::vector<ir::attribute> axes;
  std::vector<ir::value*> inputs{x};
  if (opset < 13) axes.push_back(ir::attribute::make_ints("axes", {0}));
  else inputs.push_back(g.add_initializer("axes", ir::tensor::from_values<std::int64_t>("axes", {1}, {0})));
  ir::value* y = g.add_node(ir::node_spec{"Unsqueeze", inputs, {"u"}, std::move(axes), "unsqueeze", {}})->output(0);
  if (layer_norm) {
    ir::value* gamma = g.add_initializer("gamma", ir::tensor::from_values<float>("gamma", {4}, std::vector<float>(4, 1.0f)));
    y = g.add_node(ir::node_spec{"LayerNormalization", {y, gamma}, {"y"}, {}, "ln", {}})->output(0);
  }
  y->set_type(ir::value_type{true, ir::data_type::float32, ir::shape{1, 2, 4}});
  g.add_output(y);
  ir::save_model(m, path);
  return path;
}

}  // namespace

TEST_CASE("convert raises the opset, prints the adapters and writes the model and a report", "[cli][convert]") {
  scratch dir("convert");
  const fs::path model = save_model_with(dir / "m.onnx", 11, false);
  const fs::path up = dir / "up.onnx", down = dir / "down.onnx", report = dir / "report.json";
  process_result r = run_cli({"convert", model.string(), "-o", up.string(), "--opset", "13", "--report", report.string()});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Contains("converted opset 11 -> 13: 1 nodes, 1 changed") && Contains("axes-attribute-to-input") &&
                        Contains("wrote " + up.string()));
  const onnx::ModelProto m = read_model_proto(up);
  CHECK(m.opset_import(0).version() == 13);
  CHECK(m.graph().node(0).input_size() == 2);
  const json j = json::parse(read_bytes(report));
  CHECK(j["from_opset"] == 11);
  CHECK(j["to_opset"] == 13);
  CHECK(j["changed_nodes"]["axes-attribute-to-input"] == 1);

  process_result back = run_cli({"convert", up.string(), "-o", down.string(), "--opset", "11"});
  CAPTURE(back.err);
  REQUIRE(back.exit_code == 0);
  CHECK(read_model_proto(down).graph().node(0).input_size() == 1);
}

TEST_CASE("convert refuses a target it cannot write with one error line and no output", "[cli][convert][bad-input]") {
  scratch dir("convert_bad");
  const fs::path in_dir = dir / "in";
  const fs::path out_dir = dir / "out";
  fs::create_directories(in_dir);
  fs::create_directories(out_dir);
  struct bad_target {
    std::string opset;
    bool layer_norm;
    std::string problem;
  };
  const bad_target t = GENERATE(values<bad_target>({
      {"6", false, "opset 6 is out of range: the converter writes opsets 7 to 24"},
      {"25", false, "opset 25 is out of range"},
      {"16", true, "converting opset 17 to 16: node 'ln' (LayerNormalization): LayerNormalization has no definition before opset 17"},
  }));
  CAPTURE(t.opset, t.problem);
  const fs::path model = save_model_with(in_dir / "m.onnx", 17, t.layer_norm);
  const std::string bytes = read_bytes(model);
  process_result r = run_cli({"convert", model.string(), "-o", (out_dir / "out.onnx").string(), "--opset", t.opset,
                              "--report", (out_dir / "report.json").string()});
  CAPTURE(r.err);
  REQUIRE(r.exited());
  CHECK(r.exit_code == 2);
  CHECK(is_one_error_line(r.err));
  CHECK_THAT(r.err, Contains(t.problem));
  CHECK(r.out.empty());
  CHECK(read_bytes(model) == bytes);
  CHECK(folder_entries(out_dir).empty());
}

TEST_CASE("convert needs --opset and says so in one line", "[cli][convert][bad-input]") {
  scratch dir("convert_args");
  const fs::path model = save_model_with(dir / "m.onnx", 13, false);
  process_result r = run_cli({"convert", model.string(), "-o", (dir / "out.onnx").string()});
  CHECK(r.exit_code == 2);
  CHECK(is_one_error_line(r.err));
  CHECK_THAT(r.err, Contains("--opset"));
  CHECK_FALSE(fs::exists(dir / "out.onnx"));
}
