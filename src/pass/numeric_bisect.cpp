#include "inferopt/pass/numeric_bisect.hpp"

#include "inferopt/pass/pass.hpp"

namespace inferopt {

numeric_comparison compare_models(const ir::model& reference, const ir::model& candidate,
                                  const runtime::tensor_map& inputs, numeric_tolerance tolerance, int threads) {
  runtime::session a(reference, runtime::session_options{.threads = threads});
  runtime::session b(candidate, runtime::session_options{.threads = threads});
  const runtime::tensor_map out_a = a.run(inputs);
  const runtime::tensor_map out_b = b.run(inputs);
  return {runtime::compare_outputs(a, out_a, b, out_b, tolerance.rtol, tolerance.atol)};
}

numeric_bisect::numeric_bisect(const ir::model& original, runtime::tensor_map inputs, numeric_tolerance tolerance,
                               int threads)
    : reference_(std::make_unique<runtime::session>(original, runtime::session_options{.threads = threads})),
      inputs_(std::move(inputs)),
      tolerance_(tolerance),
      threads_(threads) {
  expected_ = reference_->run(inputs_);
}

numeric_bisect::~numeric_bisect() = default;

void numeric_bisect::after_pass(const pass& p, const ir::model& m, const pass_outcome& outcome) {
  const int run = ++runs_[std::string(p.name())];
  if (first_ || !outcome.changed) return;
  ++checks_;
  numeric_comparison c;
  try {
    runtime::session candidate(m, runtime::session_options{.threads = threads_});
    c.outputs = runtime::compare_outputs(*reference_, expected_, candidate, candidate.run(inputs_), tolerance_.rtol,
                                         tolerance_.atol);
  } catch (const error& e) {
    // A model the executor can no longer build or run is as wrong as one with other numbers.
    runtime::output_difference d;
    d.within = false;
    d.problem = e.what();
    c.outputs.push_back(std::move(d));
  }
  if (!c.within()) first_ = divergence{std::string(p.name()), run, checks_, std::move(c)};
}

}  // namespace inferopt
