#pragma once
// A pass pipeline on a copy of a model, with the report the CLI writes: what optimize, fp16
// and sparsify share.

#include <memory>
#include <utility>

#include <nlohmann/json.hpp>

#include "conversions.hpp"
#include "inferopt/pass.hpp"

namespace inferopt::python {

using model_ptr = std::shared_ptr<ir::model>;

struct verify_request {
  bool enabled = false;
  numeric_tolerance tolerance;
  int threads = 0;
};

/// Runs `p` on a copy of `original`: the new model and the report (pipeline, passes,
/// fixpoints, before, after). With verification, the copy is compared with the original on
/// `feeds` (random, seed 0, when there are none) and a difference beyond tolerance throws
/// error(errc::verification). Call without the GIL; `progress` takes it.
std::pair<model_ptr, nlohmann::json> run_pipeline(const ir::model& original, pipeline& p, const verify_request& verify,
                                                  runtime::tensor_map feeds, progress_callback& progress);

}  // namespace inferopt::python
