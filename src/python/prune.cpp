// prune: structured channel pruning as `inferopt prune` does it, with its report; and the
// per-group sensitivity sweep alone, over any share of the groups (inferopt.distributed
// runs shares as Ray tasks).

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "conversions.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/prune/bn_recalibration.hpp"
#include "inferopt/prune/channel_multiple.hpp"
#include "inferopt/prune/prune.hpp"
#include "tooling/prune_request.hpp"
#include "tooling/result_json.hpp"

namespace inferopt::python {
namespace {

using model_ptr = std::shared_ptr<ir::model>;

/// The CLI's pruning knobs, and for the sensitivity sweep the groups to measure.
struct prune_settings : tooling::prune_request {
  std::vector<std::size_t> groups;

  [[nodiscard]] prune::prune_options options() const {
    prune::prune_options o = tooling::prune_options_of(*this);
    if (!groups.empty()) o.sensitivity.emplace().groups = groups;
    return o;
  }
};

py::tuple prune_model(const ir::model& original, const prune_settings& s, const py::object& batches) {
  std::vector<py::array> keep;
  const std::vector<runtime::tensor_map> data = batches_of(batches, keep);
  const prune::prune_options options = s.options();
  auto m = std::make_shared<ir::model>(original.clone());
  nlohmann::json report;
  {
    py::gil_scoped_release release;
    report = tooling::to_json(prune::prune_model(*m, options, data));
    // As the CLI does with calibration data: BatchNormalization statistics of the pruned model.
    const auto nodes = m->graph().nodes();
    const bool batch_norm = std::any_of(nodes.begin(), nodes.end(), [](const ir::node* n) { return n->is("BatchNormalization"); });
    if (!data.empty() && batch_norm) {
      const prune::bn_recalibration_result r = prune::recalibrate_batch_norm(*m, data);
      report["bn_recalibration"] = {{"layers", r.layers}, {"batches", r.batches}};
    }
  }
  report["ratio"] = s.ratio;
  report["criterion"] = s.criterion;
  report["reduction"] = s.reduction;
  report["global"] = s.global;
  report["round_to"] = s.round_to;
  report["budget"] = s.budget;
  return py::make_tuple(m, python_of(report));
}

std::vector<std::size_t> prunable_groups(const ir::model& m, const prune_settings& s) {
  const prune::prune_options options = s.options();
  py::gil_scoped_release release;
  return prune::prunable_group_indices(m, options);
}

py::object sensitivity(const ir::model& m, const prune_settings& s, const py::object& batches) {
  std::vector<py::array> keep;
  const std::vector<runtime::tensor_map> data = batches_of(batches, keep);
  const prune::prune_options options = s.options();
  nlohmann::json rows;
  {
    py::gil_scoped_release release;
    rows = tooling::to_json(prune::measure_sensitivity(m, options, data));
  }
  return python_of(rows);
}

}  // namespace

void bind_prune(py::module_& m) {
  py::class_<prune_settings>(m, "_PruneSettings")
      .def(py::init([](double ratio, std::string criterion, std::string reduction, bool global, double max_layer_ratio,
                       std::int64_t round_to, std::vector<std::string> ignore, std::uint64_t seed, bool refit, bool sensitivity,
                       std::vector<std::size_t> groups, bool sequential, bool residual_target, double refit_ridge,
                       std::string budget) {
             prune_settings s;
             s.ratio = ratio;
             s.criterion = std::move(criterion);
             s.reduction = std::move(reduction);
             s.global = global;
             s.max_layer_ratio = max_layer_ratio;
             s.round_to = round_to;
             s.ignore = std::move(ignore);
             s.seed = seed;
             s.refit = refit;
             s.sensitivity = sensitivity;
             s.groups = std::move(groups);
             s.sequential = sequential;
             s.residual_target = residual_target;
             s.refit_ridge = refit_ridge;
             s.budget = std::move(budget);
             return s;
           }),
           py::arg("ratio") = 0.3, py::arg("criterion") = "l1", py::arg("reduction") = "mean", py::arg("global_") = false,
           py::arg("max_layer_ratio") = 0.9, py::arg("round_to") = prune::preferred_channel_multiple(), py::arg("ignore") = std::vector<std::string>{},
           py::arg("seed") = 0, py::arg("refit") = true, py::arg("sensitivity") = false,
           py::arg("groups") = std::vector<std::size_t>{}, py::arg("sequential") = false, py::arg("residual_target") = false,
           py::arg("refit_ridge") = 1e-4, py::arg("budget") = "weights");
  m.def("prune", &prune_model, py::arg("model"), py::arg("settings"), py::arg("batches") = py::none(),
        "Structured channel pruning: (model, report), the report `inferopt prune --report` writes.");
  m.def("preferred_channel_multiple", &prune::preferred_channel_multiple,
        "What prune keeps channel counts multiples of by default on this machine: 16 where the executor runs "
        "AVX-512, else 8 (the CPU runtimes' channel block).");
  m.def("prunable_groups", &prunable_groups, py::arg("model"), py::arg("settings"),
        "Indices of the prunable channel groups, as prune sees them.");
  m.def("prune_sensitivity", &sensitivity, py::arg("model"), py::arg("settings"), py::arg("batches"),
        "The sensitivity sweep of prune(sensitivity=True) alone: one row per measured group "
        "({'group', 'levels', 'cosine_drop'}); settings.groups limits it to those groups.");
}

}  // namespace inferopt::python
