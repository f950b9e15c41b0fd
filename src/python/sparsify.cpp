// sparsify: magnitude block sparsity as `inferopt sparsify` without calibration data, with its
// report; and the per-layer sensitivity that calibrated block sparsity allocates by, over any
// share of the layers (inferopt.distributed runs shares as Ray tasks).

#include <memory>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "conversions.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/prune/calibrated_block_sparsity.hpp"
#include "inferopt/sparse/sparsify_blocks.hpp"
#include "pipeline_run.hpp"
#include "tooling/result_json.hpp"

namespace inferopt::python {
namespace {

/// The pass with the options the CLI's flags set; its settings are what the plan reads.
std::unique_ptr<sparse::sparsify_blocks> pass_of(double sparsity, const std::string& block, std::int64_t min_size,
                                                 const std::string& norm) {
  auto pass = std::make_unique<sparse::sparsify_blocks>();
  pass->set_option("block", block);
  pass->set_option("sparsity", std::to_string(sparsity));
  pass->set_option("min-size", std::to_string(min_size));
  pass->set_option("norm", norm);
  return pass;
}

std::vector<sparse::sparsify_candidate> plan_of(const ir::model& m, const sparse::sparsify_options& settings) {
  return sparse::plan_sparsify(m, settings, sparse::dense_baseline_from(runtime::dense_gemm_isa()));
}

py::tuple sparsify(const ir::model& m, double sparsity, const std::string& block, std::int64_t min_size, const std::string& norm,
                   bool dry_run) {
  auto pass = pass_of(sparsity, block, min_size, norm);
  const sparse::sparsify_options settings = pass->settings();
  progress_callback none(py::none(), "sparsify");
  std::pair<model_ptr, nlohmann::json> out;
  {
    py::gil_scoped_release release;
    const auto plan = plan_of(m, settings);
    pipeline p;
    if (!dry_run) p.steps.emplace_back().single = std::move(pass);
    out = run_pipeline(m, p, {}, {}, none);
    nlohmann::json& report = out.second;
    report["dry_run"] = dry_run;
    report["block"] = {settings.block.rows, settings.block.cols};
    report["sparsity"] = settings.sparsity;
    report["min_size"] = settings.min_size;
    report["norm"] = settings.norm == sparse::block_norm::l1 ? "l1" : "l2";
    report["criterion"] = "magnitude";
    report["dense_baseline_isa"] = runtime::dense_gemm_isa();
    report["nodes"] = tooling::to_json(plan);
    if (!dry_run) report["counters"] = report["passes"][0]["counters"];
  }
  return py::make_tuple(out.first, python_of(out.second));
}

std::vector<std::string> sparsifiable_layers(const ir::model& m, const std::string& block, std::int64_t min_size) {
  const sparse::sparsify_options settings = pass_of(0.5, block, min_size, "l2")->settings();
  std::vector<std::string> out;
  for (const auto& c : plan_of(m, settings)) {
    if (c.declined.empty()) out.push_back(c.node);
  }
  return out;
}

/// The nodes of `m` with these labels. @throws error(errc::invalid_argument) for a label
/// that names no node.
std::vector<const ir::node*> nodes_labelled(const ir::model& m, const std::vector<std::string>& labels) {
  std::vector<const ir::node*> out;
  for (const std::string& label : labels) {
    const ir::node* found = nullptr;
    for (const ir::node* n : m.graph().nodes()) {
      if (n->label() == label) found = n;
    }
    if (!found) throw error(errc::invalid_argument, "block sparsity: no node '" + label + "'");
    out.push_back(found);
  }
  return out;
}

py::object block_sensitivity(const ir::model& m, const py::object& batches, std::vector<std::string> layers,
                             const std::string& block, std::int64_t min_size, double max_layer_sparsity, std::int64_t chunk_rows) {
  std::vector<py::array> keep;
  const std::vector<runtime::tensor_map> data = batches_of(batches, keep);
  const sparse::sparsify_options settings = pass_of(0.5, block, min_size, "l2")->settings();
  nlohmann::json rows = nlohmann::json::array();
  {
    py::gil_scoped_release release;
    if (layers.empty()) layers = sparsifiable_layers(m, block, min_size);
    prune::block_sparsity_options options;
    options.block_rows = settings.block.rows;
    options.block_cols = settings.block.cols;
    options.max_layer_sparsity = max_layer_sparsity;
    options.chunk_rows = chunk_rows;
    for (const auto& row : prune::measure_block_sparsity_sensitivity(m, nodes_labelled(m, layers), data, options)) {
      rows.push_back({{"node", row.node}, {"levels", row.levels}, {"relative_error", row.relative_error}});
    }
  }
  return python_of(rows);
}

}  // namespace

void bind_sparsify(py::module_& m) {
  m.def("sparsify", &sparsify, py::arg("model"), py::arg("sparsity") = 0.75, py::arg("block") = "16x16",
        py::arg("min_size") = 65536, py::arg("norm") = "l2", py::arg("dry_run") = false,
        "Magnitude block sparsity on MatMul/Gemm weights, run as inferopt.BlockSparseMatMul: (model, report "
        "with each product's decision and predicted speedup). Changes the model's numbers.");
  m.def("sparsifiable_layers", &sparsifiable_layers, py::arg("model"), py::arg("block") = "16x16", py::arg("min_size") = 65536,
        "The MatMul/Gemm layers block sparsity would rewrite, by label, in graph order.");
  m.def("block_sparsity_sensitivity", &block_sensitivity, py::arg("model"), py::arg("batches"),
        py::arg("layers") = std::vector<std::string>{}, py::arg("block") = "16x16", py::arg("min_size") = 65536,
        py::arg("max_layer_sparsity") = 0.9375, py::arg("chunk_rows") = 128,
        "Each layer's relative output error at every sixteenth of block sparsity (blocks chosen on the "
        "calibration batches, kept weights updated): the table calibrated block sparsity allocates by. "
        "`layers` (labels; default: every sparsifiable layer) limits it.");
}

}  // namespace inferopt::python
