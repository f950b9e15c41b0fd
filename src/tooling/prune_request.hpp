#pragma once
// The channel-pruning knobs that the CLI's flags and the Python package's arguments share,
// with the same defaults, and the library's options they make.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/prune/channel_multiple.hpp"
#include "inferopt/prune/prune.hpp"

namespace inferopt::tooling {

struct prune_request {
  double ratio = 0.3;
  std::string criterion = "l1";
  std::string reduction = "mean";
  bool global = false;
  double max_layer_ratio = 0.9;
  std::int64_t round_to = prune::preferred_channel_multiple();
  std::vector<std::string> ignore;
  bool no_default_ignores = false;
  std::uint64_t seed = 0;
  bool refit = true;
  bool sequential = false;       ///< refit layer after layer on what the earlier cuts left
  bool residual_target = false;  ///< sequential, towards the original output (implies sequential)
  double refit_ridge = 1e-4;     ///< relative to the mean input energy
  bool sensitivity = false;
  std::string budget = "weights";  ///< what a weighed --ratio is a share of: weights or macs
};

/// The library's options. Errors name the option as `<option_prefix>criterion` (the CLI
/// passes "--"). @throws error(errc::invalid_argument) for an unknown criterion or reduction.
prune::prune_options prune_options_of(const prune_request& r, std::string_view option_prefix = "");

}  // namespace inferopt::tooling
