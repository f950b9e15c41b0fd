// The shared channel-pruning knobs (prune_request.hpp).

#include "prune_request.hpp"

#include "inferopt/core/error.hpp"

namespace inferopt::tooling {

prune::prune_options prune_options_of(const prune_request& r, std::string_view option_prefix) {
  const std::string prefix(option_prefix);
  const auto criterion = prune::parse_criterion(r.criterion);
  if (!criterion) {
    throw error(errc::invalid_argument, prefix + "criterion must be l1, l2, bn, fpgm, random, energy, obs or obs-greedy, not '" + r.criterion + "'");
  }
  const auto reduction = prune::parse_reduction(r.reduction);
  if (!reduction) throw error(errc::invalid_argument, prefix + "reduction must be mean, sum or max, not '" + r.reduction + "'");
  prune::prune_options options;
  options.importance = {*criterion, *reduction, r.seed};
  options.selection.ratio = r.ratio;
  options.selection.global = r.global;
  options.selection.max_group_ratio = r.max_layer_ratio;
  options.selection.round_to = r.round_to;
  options.analysis.ignored_nodes = r.ignore;
  options.analysis.ignore_defaults = !r.no_default_ignores;
  if (!(r.refit_ridge >= 0.0 && r.refit_ridge < 1e6)) throw error(errc::invalid_argument, prefix + "refit-ridge must be a number >= 0");
  options.refit = r.refit;
  options.refit_options.sequential = r.sequential || r.residual_target;
  options.refit_options.residual_target = r.residual_target;
  options.refit_options.solve.relative_ridge = r.refit_ridge;
  if (r.sensitivity) options.sensitivity.emplace();
  const auto budget = prune::parse_budget(r.budget);
  if (!budget) throw error(errc::invalid_argument, prefix + "budget must be weights or macs, not '" + r.budget + "'");
  options.budget = *budget;
  return options;
}

}  // namespace inferopt::tooling
