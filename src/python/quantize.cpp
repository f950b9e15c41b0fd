// calibrate, calibration states and quantize: static INT8 QDQ as `inferopt quantize` does it
// (-O2 first, attention projections packed, the finish for onnxruntime), and calibration
// alone, whose states from shards calibrated apart merge into one (inferopt.distributed).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "conversions.hpp"
#include "inferopt/core/cpu_features.hpp"
#include "inferopt/quant/calibrate.hpp"
#include "inferopt/quant/qdq.hpp"
#include "inferopt/quant/quantization_error.hpp"
#include "inferopt/quant/quantize_model.hpp"
#include "inferopt/quant/weight_bits.hpp"
#include "tooling/model_steps.hpp"
#include "tooling/result_json.hpp"

namespace inferopt::python {
namespace {

using model_ptr = std::shared_ptr<ir::model>;

/// The calibration and QDQ settings calibrate and quantize share.
struct scheme {
  std::string method = "entropy";
  double percentile = 99.99;
  std::string activation = "s8";
  bool per_tensor = false;

  [[nodiscard]] quant::calibrator_options calibrator() const {
    if (activation != "s8" && activation != "u8") {
      throw error(errc::invalid_argument, "activation must be s8 or u8, got '" + activation + "'");
    }
    quant::calibrator_options c;
    c.method = quant::parse_calibration_method(method);
    c.percentile = percentile;
    c.symmetric = activation == "s8";
    return c;
  }
  [[nodiscard]] quant::qdq_options qdq() const {
    quant::qdq_options q;
    q.weights = per_tensor ? quant::weight_granularity::per_tensor : quant::weight_granularity::per_channel;
    q.activations = activation == "s8" ? quant::activation_scheme::int8_symmetric : quant::activation_scheme::uint8_asymmetric;
    return q;
  }
};

std::vector<quant::calibration_state> states_of(const std::vector<py::bytes>& states) {
  std::vector<quant::calibration_state> out;
  for (const py::bytes& s : states) out.push_back(quant::calibration_state::parse(std::string_view(s)));
  return out;
}

/// The float model as quantize prepares it: -O`level` (at most 2) and, for attention models,
/// Q, K and V packed into one product. Returns whether it is an attention model.
bool prepare(ir::model& m, int level) {
  tooling::prepare_float_model(m, level);
  const bool attention = quant::has_attention(m);
  if (attention) tooling::pack_projections(m);
  return attention;
}

model_ptr prepare_for_quantization(const ir::model& m, int level) {
  py::gil_scoped_release release;
  auto copy = std::make_shared<ir::model>(m.clone());
  (void)prepare(*copy, level);
  return copy;
}

py::tuple calibrate(const ir::model& m, const py::object& batches, const scheme& s, int threads, py::object progress) {
  std::vector<py::array> keep;
  const std::vector<runtime::tensor_map> data = batches_of(batches, keep);
  progress_callback callback(std::move(progress), "calibrate");
  quant::calibration_result r;
  {
    py::gil_scoped_release release;
    quant::calibrate_options options;
    options.calibrator = s.calibrator();
    options.threads = threads;
    options.on_progress = callback.hook();
    r = quant::calibrate(quant::model_for_calibration(m, s.qdq()), data, options);
  }
  callback.rethrow();
  return py::make_tuple(py::bytes(r.state.serialize()), python_of(tooling::to_json(r.ranges)));
}

py::bytes merge_states(const std::vector<py::bytes>& states) {
  if (states.empty()) throw error(errc::invalid_argument, "merge_calibration_states: no states");
  std::vector<quant::calibration_state> parsed = states_of(states);
  for (std::size_t i = 1; i < parsed.size(); ++i) parsed.front().merge(parsed[i]);
  return py::bytes(parsed.front().serialize());
}

py::object ranges_from_state(const py::bytes& state, const scheme& s) {
  return python_of(tooling::to_json(quant::compute_ranges(quant::calibration_state::parse(std::string_view(state)), s.calibrator())));
}

struct fallback_settings {
  double min_agreement = 0.99;
  double min_cosine = 0.99;
  bool enabled = true;
};

py::tuple quantize(const ir::model& original, const py::object& batches, const std::vector<py::bytes>& states, const scheme& s,
                   std::optional<int> weight_bits, int level, const fallback_settings& fallback, int threads, std::uint64_t seed,
                   py::object progress) {
  std::vector<py::array> keep;
  const std::vector<runtime::tensor_map> data = batches_of(batches, keep);
  const std::vector<quant::calibration_state> shards = states_of(states);
  progress_callback callback(std::move(progress), "calibrate");
  auto m = std::make_shared<ir::model>(original.clone());
  nlohmann::json report;
  std::string state_bytes;
  {
    py::gil_scoped_release release;
    const bool attention = prepare(*m, level);
    quant::quantize_options q;
    q.calibration.calibrator = s.calibrator();
    q.calibration.threads = threads;
    q.calibration.on_progress = callback.hook();
    q.calibration_batches = data;
    q.merge_states = shards;
    q.qdq = s.qdq();
    q.qdq.weight_bits = weight_bits.value_or(quant::weight_bits_for(cpu_features_of_this_machine()));
    if (attention) q.qdq.op_types = quant::transformer_op_types();
    q.fallback.metric = quant::default_fallback_metric(*m);
    q.fallback.min_top1_agreement = fallback.enabled ? fallback.min_agreement : 0.0;
    q.fallback.min_output_cosine = fallback.enabled ? fallback.min_cosine : -1.0;
    q.seed = seed;
    const quant::quantize_result r = quant::quantize_model(*m, q);
    tooling::finish_for_onnxruntime(*m);
    report = tooling::to_json(r);
    report["method"] = s.method;
    report["batches"] = data.size();
    report["fallback_metric"] = std::string(quant::to_string(q.fallback.metric));
    report["budget_met"] = r.budget_met;
    report["ranges"] = tooling::to_json(r.ranges);
    if (!r.opset_conversion.empty()) report["opset_conversion"] = r.opset_conversion;
    state_bytes = r.state.serialize();
  }
  callback.rethrow();
  py::object out = python_of(report);
  out["state"] = py::bytes(state_bytes);
  return py::make_tuple(m, out);
}

}  // namespace

void bind_quantize(py::module_& m) {
  py::class_<scheme>(m, "_QuantScheme")
      .def(py::init([](std::string method, double percentile, std::string activation, bool per_tensor) {
             return scheme{std::move(method), percentile, std::move(activation), per_tensor};
           }),
           py::arg("method") = "entropy", py::arg("percentile") = 99.99, py::arg("activation") = "s8", py::arg("per_tensor") = false);
  py::class_<fallback_settings>(m, "_Fallback")
      .def(py::init([](double min_agreement, double min_cosine, bool enabled) {
             return fallback_settings{min_agreement, min_cosine, enabled};
           }),
           py::arg("min_agreement") = 0.99, py::arg("min_cosine") = 0.99, py::arg("enabled") = true);

  m.def("prepare_for_quantization", &prepare_for_quantization, py::arg("model"), py::arg("level") = 2,
        "The float model as quantize prepares it (-O<level>, at most 2; attention projections packed): "
        "calibrate shards on this model for quantize(states=...).");
  m.def("calibrate", &calibrate, py::arg("model"), py::arg("batches"), py::arg("scheme"), py::arg("threads") = 0,
        py::arg("progress") = py::none(),
        "Calibrates the model on a list of {input: array} batches: (state bytes, {tensor: {min, max}}).");
  m.def("merge_calibration_states", &merge_states, py::arg("states"),
        "Merges serialized calibration states in the order given: the state of one calibration over "
        "their batches in that order.");
  m.def("ranges_from_state", &ranges_from_state, py::arg("state"), py::arg("scheme"),
        "The activation ranges a calibrator computes from a state: {tensor: {min, max}}.");
  m.def("quantize", &quantize, py::arg("model"), py::arg("batches"), py::arg("states"), py::arg("scheme"),
        py::arg("weight_bits"), py::arg("level"), py::arg("fallback"), py::arg("threads"), py::arg("seed"),
        py::arg("progress"),
        "Static INT8 QDQ as `inferopt quantize`: (model, report with ranges and the state bytes).");
}

}  // namespace inferopt::python
