// sparsify: block sparsity as `inferopt sparsify` makes it, by magnitude or on calibration
// batches, with its report; and the per-layer sensitivity that calibrated block sparsity allocates by, over any
// share of the layers (inferopt.distributed runs shares as Ray tasks).

#include <algorithm>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "conversions.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/prune/calibrated_block_sparsity.hpp"
#include "inferopt/prune/permute_units.hpp"
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

/// How calibrated block sparsity runs (with calibration batches).
struct calibrated_settings {
  bool allocate = true;
  bool sequential = false;
  std::int64_t chunk_rows = 128;
  bool residual_target = false;  ///< towards the original residual sums (with sequential)
  bool greedy = false;           ///< blocks one at a time per block column, every kept weight refit
  double damping = prune::block_sparsity_options{}.relative_damping;
  double max_layer_sparsity = prune::block_sparsity_options{}.max_layer_sparsity;
  bool sensitivity = false;  ///< allocate by each layer's measured output cosine drop
  bool permute = false;      ///< first sort transformer units by output energy (same function)
};

/// Chooses the blocks of every product the plan rewrites on `data` and updates the kept
/// weights (SparseGPT-style) in `m`; returns each layer's sparsity, for the pass to remove
/// exactly the zeroed blocks, and the report's "calibrated" section.
std::map<std::string, double> calibrate_blocks(ir::model& m, const sparse::sparsify_options& settings,
                                               std::span<const runtime::tensor_map> data, const calibrated_settings& c,
                                               nlohmann::json& section) {
  std::vector<const ir::node*> layers;
  for (const auto& candidate : plan_of(m, settings)) {
    if (candidate.declined.empty()) layers.push_back(candidate.at);
  }
  prune::block_sparsity_options options;
  options.block_rows = settings.block.rows;
  options.block_cols = settings.block.cols;
  options.sparsity = settings.sparsity;
  options.chunk_rows = c.chunk_rows;
  options.allocate = c.allocate;
  options.sequential = c.sequential || c.residual_target;
  options.residual_target = c.residual_target;
  options.greedy = c.greedy;
  options.relative_damping = c.damping;
  options.max_layer_sparsity = c.max_layer_sparsity;
  options.end_to_end = c.sensitivity;
  const std::vector<prune::block_sparsity_layer> done = prune::apply_calibrated_block_sparsity(m, layers, data, options);
  std::map<std::string, double> sparsity;
  for (const auto& l : done) {
    sparsity[l.node] = static_cast<double>(l.result.blocks_removed) / static_cast<double>(std::max<std::int64_t>(l.result.blocks_total, 1));
  }
  section = {{"batches", data.size()}, {"chunk_rows", c.chunk_rows}, {"damping", c.damping}, {"max_layer_sparsity", c.max_layer_sparsity}, {"allocated", c.allocate}, {"sensitivity", c.sensitivity}, {"sequential", options.sequential}, {"residual_target", c.residual_target},
             {"layers", tooling::to_json(done)}};
  return sparsity;
}

py::tuple sparsify(const ir::model& m, double sparsity, const std::string& block, std::int64_t min_size, const std::string& norm,
                   bool dry_run, const py::object& batches, const calibrated_settings& calibrated) {
  std::vector<py::array> keep;
  const std::vector<runtime::tensor_map> data = batches_of(batches, keep);
  auto pass = pass_of(sparsity, block, min_size, norm);
  const sparse::sparsify_options settings = pass->settings();
  progress_callback none(py::none(), "sparsify");
  std::pair<model_ptr, nlohmann::json> out;
  {
    py::gil_scoped_release release;
    ir::model start = m.clone();
    nlohmann::json section;
    std::size_t permuted = 0;
    // Reordering changes no output, so it goes first (as the CLI's --permute).
    if (!data.empty() && !dry_run && calibrated.permute) permuted = prune::sort_units_by_output_energy(start, data);
    if (!data.empty() && !dry_run) pass->set_node_sparsity(calibrate_blocks(start, settings, data, calibrated, section));
    if (!section.is_null()) section["permuted_groups"] = permuted;
    const auto plan = plan_of(start, pass->settings());
    pipeline p;
    if (!dry_run) p.steps.emplace_back().single = std::move(pass);
    out = run_pipeline(start, p, {}, {}, none);
    nlohmann::json& report = out.second;
    report["dry_run"] = dry_run;
    report["block"] = {settings.block.rows, settings.block.cols};
    report["sparsity"] = settings.sparsity;
    report["min_size"] = settings.min_size;
    report["norm"] = settings.norm == sparse::block_norm::l1 ? "l1" : "l2";
    report["criterion"] = section.is_null() ? "magnitude" : calibrated.greedy ? "obs-greedy" : "obs";
    report["dense_baseline_isa"] = runtime::dense_gemm_isa();
    report["nodes"] = tooling::to_json(plan);
    if (!section.is_null()) report["calibrated"] = section;
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
                             const std::string& block, std::int64_t min_size, double max_layer_sparsity, std::int64_t chunk_rows,
                             bool end_to_end) {
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
    options.end_to_end = end_to_end;
    for (const auto& row : prune::measure_block_sparsity_sensitivity(m, nodes_labelled(m, layers), data, options)) {
      rows.push_back({{"node", row.node}, {"levels", row.levels}, {"relative_error", row.relative_error}});
      if (end_to_end) rows.back()["cosine_drop"] = row.cosine_drop;
    }
  }
  return python_of(rows);
}

}  // namespace

void bind_sparsify(py::module_& m) {
  py::class_<calibrated_settings>(m, "_CalibratedBlocks")
      .def(py::init([](bool allocate, bool sequential, std::int64_t chunk_rows, bool residual_target, bool greedy, double damping,
                       double max_layer_sparsity, bool sensitivity, bool permute) {
             return calibrated_settings{allocate, sequential, chunk_rows, residual_target, greedy, damping, max_layer_sparsity, sensitivity,
                                        permute};
           }),
           py::arg("allocate") = true, py::arg("sequential") = false, py::arg("chunk_rows") = 128, py::arg("residual_target") = false,
           py::arg("greedy") = false, py::arg("damping") = prune::block_sparsity_options{}.relative_damping,
           py::arg("max_layer_sparsity") = prune::block_sparsity_options{}.max_layer_sparsity, py::arg("sensitivity") = false,
           py::arg("permute") = false);
  m.def("sparsify", &sparsify, py::arg("model"), py::arg("sparsity") = 0.75, py::arg("block") = "16x16",
        py::arg("min_size") = 65536, py::arg("norm") = "l2", py::arg("dry_run") = false, py::arg("batches") = py::none(),
        py::arg("calibrated") = calibrated_settings{},
        "Block sparsity on MatMul/Gemm weights, run as inferopt.BlockSparseMatMul: (model, report with each "
        "product's decision and predicted speedup). With calibration batches the blocks are chosen on them and "
        "the kept weights updated (calibrated: allocate per layer, sequential); otherwise by magnitude. "
        "Changes the model's numbers.");
  m.def("sparsifiable_layers", &sparsifiable_layers, py::arg("model"), py::arg("block") = "16x16", py::arg("min_size") = 65536,
        "The MatMul/Gemm layers block sparsity would rewrite, by label, in graph order.");
  m.def("block_sparsity_sensitivity", &block_sensitivity, py::arg("model"), py::arg("batches"),
        py::arg("layers") = std::vector<std::string>{}, py::arg("block") = "16x16", py::arg("min_size") = 65536,
        py::arg("max_layer_sparsity") = 0.9375, py::arg("chunk_rows") = 128, py::arg("end_to_end") = false,
        "Each layer's relative output error at every sixteenth of block sparsity (blocks chosen on the "
        "calibration batches, kept weights updated): the table calibrated block sparsity allocates by; "
        "with end_to_end also the model output's cosine drop with that layer alone sparsified. "
        "`layers` (labels; default: every sparsifiable layer) limits it.");
}

}  // namespace inferopt::python
