#pragma once
/// Numeric bisection: which pass of a pipeline first changed the model's outputs.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "inferopt/pass/instrumentation.hpp"
#include "inferopt/runtime/compare.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt {

/// Tolerances and executor settings for numeric checks (the differential test's rtol).
struct numeric_tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
};

/// The outcome of running two models on the same inputs.
struct numeric_comparison {
  std::vector<runtime::output_difference> outputs;
  [[nodiscard]] bool within() const noexcept {
    for (const auto& d : outputs) {
      if (!d.within) return false;
    }
    return true;
  }
};

/// Runs `reference` and `candidate` on `inputs` and compares every output.
[[nodiscard]] numeric_comparison compare_models(const ir::model& reference, const ir::model& candidate,
                                                const runtime::tensor_map& inputs, numeric_tolerance tolerance,
                                                int threads = 0);

/// After every pass run that changed the model, runs it on fixed inputs and compares with the
/// outputs of the model as it was before the pipeline. Checking after each run is the same
/// as re-running the pipeline one pass longer each time, at the cost of one pipeline run.
/// Records the first run that leaves tolerance and stops checking; it never fails a pass.
class numeric_bisect final : public pass_instrumentation {
 public:
  struct divergence {
    std::string pass;   ///< the pass whose run first moved an output beyond tolerance
    int run = 0;        ///< 1-based count of that pass's runs (fixpoint groups repeat passes)
    int checks = 0;     ///< pass runs checked up to and including this one
    numeric_comparison comparison;
  };

  /// Runs `original` once on `inputs` for the reference outputs.
  numeric_bisect(const ir::model& original, runtime::tensor_map inputs, numeric_tolerance tolerance, int threads = 0);
  ~numeric_bisect() override;

  void after_pass(const pass& p, const ir::model& m, const pass_outcome& outcome) override;

  [[nodiscard]] const std::optional<divergence>& first_divergence() const noexcept { return first_; }
  /// Pass runs checked so far.
  [[nodiscard]] int checks() const noexcept { return checks_; }

 private:
  std::unique_ptr<runtime::session> reference_;
  runtime::tensor_map inputs_;
  runtime::tensor_map expected_;
  numeric_tolerance tolerance_;
  int threads_;
  int checks_ = 0;
  std::map<std::string, int, std::less<>> runs_;
  std::optional<divergence> first_;
};

}  // namespace inferopt
