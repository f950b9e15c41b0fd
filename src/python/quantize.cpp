// calibrate, calibration states and quantize: static INT8 QDQ as `inferopt quantize` does it
// (-O2 first, attention projections packed, the finish for onnxruntime), and calibration
// alone, whose states from shards calibrated apart merge into one (inferopt.distributed).

#include <algorithm>
#include <memory>
#include <span>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "conversions.hpp"
#include "inferopt/core/cpu_features.hpp"
#include "inferopt/quant/calibrate.hpp"
#include "inferopt/quant/dynamic_quantize.hpp"
#include "inferopt/quant/smooth_quant.hpp"
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

/// The float model as static quantize prepares it (without op_types): -O`level` (at most 2)
/// and, for attention models, Q, K and V packed into one product.
model_ptr prepare_for_quantization(const ir::model& m, int level) {
  py::gil_scoped_release release;
  auto copy = std::make_shared<ir::model>(m.clone());
  tooling::prepare_float_model(*copy, level);
  if (quant::has_attention(*copy)) tooling::pack_projections(*copy);
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

/// What quantize takes besides the scheme and the batches.
struct quantize_settings {
  std::string mode = "static";
  std::optional<int> weight_bits;  // none: what this CPU's int8 kernels need
  std::optional<int> level;        // none: the mode's default (static 2, dynamic 0)
  std::vector<std::string> exclude;
  std::vector<std::string> op_types;
  std::optional<double> smooth_quant;
  fallback_settings fallback;
  int threads = 0;
  std::uint64_t seed = 0;
};

int weight_bits_of(const quantize_settings& q) {
  return q.weight_bits.value_or(quant::weight_bits_for(cpu_features_of_this_machine()));
}

/// Static QDQ as `inferopt quantize` does it; `m` is the float model, quantized in place.
nlohmann::json quantize_static(ir::model& m, const scheme& s, const quantize_settings& q, std::span<const runtime::tensor_map> data,
                               std::span<const quant::calibration_state> shards, std::span<const runtime::tensor_map> validation,
                               progress_callback& progress, std::string& state_bytes) {
  tooling::prepare_float_model(m, q.level.value_or(2));
  const bool attention = q.op_types.empty() && quant::has_attention(m);
  if (attention) tooling::pack_projections(m);
  nlohmann::json smoothed = nlohmann::json::array();
  if (q.smooth_quant) {
    if (data.empty()) throw error(errc::invalid_argument, "smooth_quant needs calibration batches");
    smoothed = tooling::to_json(quant::smooth_quant(m, data, quant::smooth_quant_options{.alpha = *q.smooth_quant}));
  }
  quant::quantize_options o;
  o.calibration.calibrator = s.calibrator();
  o.calibration.threads = q.threads;
  o.calibration.on_progress = progress.hook();
  o.calibration_batches = data;
  o.merge_states = shards;
  o.validation_batches = validation;
  o.qdq = s.qdq();
  o.qdq.weight_bits = weight_bits_of(q);
  o.qdq.op_types = attention ? quant::transformer_op_types() : q.op_types;
  tooling::split_exclusions(q.exclude, o.qdq.exclude_op_types, o.qdq.exclude_nodes);
  o.fallback.metric = quant::default_fallback_metric(m);
  o.fallback.min_top1_agreement = q.fallback.enabled ? q.fallback.min_agreement : 0.0;
  o.fallback.min_output_cosine = q.fallback.enabled ? q.fallback.min_cosine : -1.0;
  o.seed = q.seed;
  const quant::quantize_result r = quant::quantize_model(m, o);
  tooling::finish_for_onnxruntime(m);
  nlohmann::json report = tooling::to_json(r);
  report["mode"] = "static";
  report["method"] = s.method;
  report["batches"] = data.size();
  report["fallback_metric"] = std::string(quant::to_string(o.fallback.metric));
  report["budget_met"] = r.budget_met;
  report["ranges"] = tooling::to_json(r.ranges);
  report["smooth_quant"] = smoothed;
  if (!r.opset_conversion.empty()) report["opset_conversion"] = r.opset_conversion;
  state_bytes = r.state.serialize();
  return report;
}

/// Dynamic INT8 as `inferopt quantize --mode dynamic`: int8 weights, activations quantized
/// at run time; the batches only measure the error.
nlohmann::json quantize_dynamic(ir::model& m, const scheme& s, const quantize_settings& q, std::vector<runtime::tensor_map> data,
                                std::vector<runtime::tensor_map> validation) {
  tooling::prepare_float_model(m, q.level.value_or(0));
  const runtime::session probe(m, runtime::session_options{.threads = 1});
  const std::vector<runtime::tensor_map> measure = tooling::measuring_batches(probe, std::move(validation), std::move(data), q.seed);
  const ir::model float_model = m.clone();
  quant::dynamic_options d;
  d.weights = s.per_tensor ? quant::weight_granularity::per_tensor : quant::weight_granularity::per_channel;
  d.weight_bits = weight_bits_of(q);
  tooling::split_exclusions(q.exclude, d.exclude_op_types, d.exclude_nodes);
  for (const char* op : {"MatMul", "Gemm"}) {  // op_types narrows the two it knows
    if (!q.op_types.empty() && std::find(q.op_types.begin(), q.op_types.end(), op) == q.op_types.end()) d.exclude_op_types.push_back(op);
  }
  const quant::dynamic_report r = quant::quantize_dynamic(m, d);
  std::optional<quant::quantization_error> err;
  if (!measure.empty()) err = quant::measure_quantization_error(float_model, m, measure);
  tooling::finish_for_onnxruntime(m);
  return tooling::to_json(r, err ? &*err : nullptr);
}

py::tuple quantize(const ir::model& original, const py::object& batches, const std::vector<py::bytes>& states, const scheme& s,
                   const quantize_settings& q, const py::object& validation, py::object progress) {
  if (q.mode != "static" && q.mode != "dynamic") throw error(errc::invalid_argument, "mode must be static or dynamic, got '" + q.mode + "'");
  if (q.mode == "dynamic" && (!states.empty() || q.smooth_quant)) {
    throw error(errc::invalid_argument, "states and smooth_quant need a calibration: they go with mode='static'");
  }
  std::vector<py::array> keep;
  std::vector<runtime::tensor_map> data = batches_of(batches, keep);
  std::vector<runtime::tensor_map> checks = batches_of(validation, keep);
  const std::vector<quant::calibration_state> shards = states_of(states);
  progress_callback callback(std::move(progress), "calibrate");
  auto m = std::make_shared<ir::model>(original.clone());
  nlohmann::json report;
  std::string state_bytes;
  {
    py::gil_scoped_release release;
    report = q.mode == "static" ? quantize_static(*m, s, q, data, shards, checks, callback, state_bytes)
                                : quantize_dynamic(*m, s, q, std::move(data), std::move(checks));
  }
  callback.rethrow();
  py::object out = python_of(report);
  if (q.mode == "static") out["state"] = py::bytes(state_bytes);
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
  py::class_<quantize_settings>(m, "_QuantizeSettings")
      .def(py::init([](std::string mode, std::optional<int> weight_bits, std::optional<int> level, std::vector<std::string> exclude,
                       std::vector<std::string> op_types, std::optional<double> smooth_quant, const fallback_settings& fallback,
                       int threads, std::uint64_t seed) {
             return quantize_settings{std::move(mode), weight_bits, level, std::move(exclude), std::move(op_types),
                                      smooth_quant, fallback, threads, seed};
           }),
           py::arg("mode") = "static", py::arg("weight_bits") = py::none(), py::arg("level") = py::none(),
           py::arg("exclude") = std::vector<std::string>{}, py::arg("op_types") = std::vector<std::string>{},
           py::arg("smooth_quant") = py::none(), py::arg("fallback") = fallback_settings{}, py::arg("threads") = 0,
           py::arg("seed") = 0);

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
  m.def("quantize", &quantize, py::arg("model"), py::arg("batches"), py::arg("states"), py::arg("scheme"), py::arg("settings"),
        py::arg("validation") = py::none(), py::arg("progress") = py::none(),
        "INT8 as `inferopt quantize`, static QDQ or dynamic: (model, report; static: ranges and the state bytes).");
}

}  // namespace inferopt::python
