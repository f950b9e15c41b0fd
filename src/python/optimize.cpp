// optimize and fp16: a pass pipeline on a copy of the model, with the report the CLI writes
// (the same keys) and, on request, a numeric check against the original.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "conversions.hpp"
#include "pipeline_run.hpp"
#include "inferopt/builtin.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "tooling/checked_model.hpp"
#include "tooling/model_steps.hpp"
#include "tooling/result_json.hpp"

namespace inferopt::python {
namespace {

/// Calls the progress callback after every pass with the passes run so far (total 0: a
/// fixpoint decides how many run).
class pass_progress final : public pass_instrumentation {
 public:
  explicit pass_progress(progress_callback& callback) : callback_(callback) {}
  void after_pass(const pass&, const ir::model&, const pass_outcome&) override { callback_(++runs_, 0); }

 private:
  progress_callback& callback_;
  std::size_t runs_ = 0;
};

}  // namespace

std::pair<model_ptr, nlohmann::json> run_pipeline(const ir::model& original, pipeline& p, const verify_request& verify,
                                                  runtime::tensor_map feeds, progress_callback& progress) {
  auto m = std::make_shared<ir::model>(original.clone());
  const ir::model_statistics before = tooling::statistics_of(*m);
  if (verify.enabled) {
    const runtime::session probe(original, runtime::session_options{.threads = verify.threads});
    if (feeds.empty()) feeds = runtime::random_inputs(probe, 0);
    probe.check_inputs(feeds);
  }
  pass_manager manager;
  if (progress.active()) manager.add_instrumentation(std::make_unique<pass_progress>(progress));
  const run_report r = manager.run(p, *m);
  ir::verify(m->graph());
  nlohmann::json report{{"pipeline", p.to_string()}};
  report.update(tooling::to_json(r));
  report["before"] = tooling::to_json(before);
  report["after"] = tooling::to_json(tooling::statistics_of(*m));
  if (verify.enabled) {
    const numeric_comparison c = compare_models(original, *m, feeds, verify.tolerance, verify.threads);
    report["verify"] = {{"rtol", verify.tolerance.rtol}, {"atol", verify.tolerance.atol},
                        {"outputs", tooling::to_json(c.outputs)}, {"match", c.within()}};
    if (!c.within()) throw error(errc::verification, "optimized outputs differ from the original beyond tolerance");
  }
  return {m, std::move(report)};
}

namespace {

/// The pipeline of a level or a text, with passes left out.
pipeline pipeline_of(std::optional<int> level, const std::optional<std::string>& text, const std::vector<std::string>& disabled) {
  if (level && text) throw error(errc::invalid_argument, "give either level or pipeline, not both");
  if (level && (*level < 0 || *level > 3)) throw error(errc::invalid_argument, "level must be 0..3, got " + std::to_string(*level));
  const pass_registry registry = builtin_registry();
  pipeline_parse_options parse_options;
  for (const std::string& d : disabled) {
    (void)registry.create(d);  // unknown names fail with suggestions
    parse_options.disabled.insert(d);
  }
  return text ? parse_pipeline(*text, registry, parse_options) : level_pipeline(level.value_or(1), registry, parse_options);
}

py::tuple optimize(const ir::model& m, std::optional<int> level, std::optional<std::string> pipeline_text,
                   std::vector<std::string> disabled, bool verify, py::object feeds, double rtol, double atol, int threads,
                   py::object progress) {
  pipeline p = pipeline_of(level, pipeline_text, disabled);
  std::vector<py::array> keep;
  runtime::tensor_map feed_map = feeds.is_none() ? runtime::tensor_map{} : feeds_of(feeds, keep);
  progress_callback callback(std::move(progress), "optimize");
  std::pair<model_ptr, nlohmann::json> out;
  {
    py::gil_scoped_release release;
    out = run_pipeline(m, p, {verify, {rtol, atol}, threads}, std::move(feed_map), callback);
  }
  callback.rethrow();
  return py::make_tuple(out.first, python_of(out.second));
}

py::tuple fp16(const ir::model& m, bool keep_io_types, std::vector<std::string> block_ops, std::vector<std::string> block_nodes) {
  pipeline p = parse_pipeline(tooling::fp16_pipeline_text(keep_io_types, block_ops, block_nodes), builtin_registry());
  progress_callback none(py::none(), "fp16");
  std::pair<model_ptr, nlohmann::json> out;
  {
    py::gil_scoped_release release;
    out = run_pipeline(m, p, {}, {}, none);
  }
  return py::make_tuple(out.first, python_of(out.second));
}

}  // namespace

void bind_optimize(py::module_& m) {
  m.def("optimize", &optimize, py::arg("model"), py::arg("level") = py::none(), py::arg("pipeline") = py::none(),
        py::arg("disable") = std::vector<std::string>{}, py::arg("verify") = false, py::arg("feeds") = py::none(),
        py::arg("rtol") = 1e-4, py::arg("atol") = 1e-5, py::arg("threads") = 0, py::arg("progress") = py::none(),
        "Runs an -O level (default 1) or a pipeline text on a copy: (model, report). With verify, the result "
        "is compared with the original on `feeds` (default: random, seed 0) and VerificationError is raised "
        "beyond rtol/atol. progress(stage, done, total) is called after every pass.");
  m.def("fp16", &fp16, py::arg("model"), py::arg("keep_io_types") = true, py::arg("block_ops") = std::vector<std::string>{},
        py::arg("block_nodes") = std::vector<std::string>{},
        "The float32 computation in float16 (pass to-fp16), Casts at the boundaries: (model, report).");
}

}  // namespace inferopt::python
