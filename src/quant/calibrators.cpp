#include "inferopt/quant/calibrators.hpp"

#include <exception>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "inferopt/core/error.hpp"

namespace inferopt::quant {

namespace {

std::uint64_t total_of(std::span<const std::uint64_t> h) { return std::accumulate(h.begin(), h.end(), std::uint64_t{0}); }

/// [-t, t], with a side the data never reaches pinned to 0.
tensor_range symmetric_range(const tensor_statistics& stats, double t) {
  return {stats.min() >= 0.0 ? 0.0 : -t, stats.max() <= 0.0 ? 0.0 : t};
}

/// Cuts (100 - percentile) / 2 % of the values from each end of the x histogram.
tensor_range asymmetric_percentile_range(const tensor_statistics& stats, double percentile) {
  const std::span<const std::uint64_t> h = stats.histogram();
  const double tail = static_cast<double>(stats.count()) * (100.0 - percentile) / 200.0;
  const double width = stats.signed_bin_width();
  const double lowest = -stats.range();
  std::size_t low = 0;
  for (double below = 0.0; low + 1 < h.size(); ++low) {
    below += static_cast<double>(h[low]);
    if (below > tail) break;
  }
  std::size_t high = h.size() - 1;
  for (double above = 0.0; high > 0; --high) {
    above += static_cast<double>(h[high]);
    if (above > tail) break;
  }
  const double lo = std::max(stats.min(), lowest + static_cast<double>(low) * width);
  const double hi = std::min(stats.max(), lowest + static_cast<double>(high + 1) * width);
  return {std::min(lo, hi), std::max(lo, hi)};
}

/// KL(P || Q) for the first `kept` bins (see entropy_best_bin_count).
double entropy_divergence(std::span<const std::uint64_t> h, std::size_t kept, std::size_t levels,
                          double outliers, std::vector<double>& q) {
  q.assign(kept, 0.0);
  // Group boundaries: bin k belongs to group floor(k * levels / kept).
  std::size_t start = 0;
  for (std::size_t g = 0; g < levels; ++g) {
    std::size_t stop = start;
    while (stop < kept && (stop * levels) / kept == g) ++stop;
    double sum = 0.0;
    std::size_t nonzero = 0;
    for (std::size_t k = start; k < stop; ++k) {
      sum += static_cast<double>(h[k]);
      nonzero += h[k] != 0 ? 1 : 0;
    }
    for (std::size_t k = start; k < stop; ++k) {
      if (h[k] != 0) q[k] = sum / static_cast<double>(nonzero);
    }
    start = stop;
  }
  double p_total = outliers;
  double q_total = 0.0;
  for (std::size_t k = 0; k < kept; ++k) {
    p_total += static_cast<double>(h[k]);
    q_total += q[k];
  }
  constexpr double q_floor = 1e-12;
  double divergence = 0.0;
  for (std::size_t k = 0; k < kept; ++k) {
    const double p = (static_cast<double>(h[k]) + (k + 1 == kept ? outliers : 0.0)) / p_total;
    if (p <= 0.0) continue;
    const double qk = q_total > 0.0 ? std::max(q[k] / q_total, q_floor) : q_floor;
    divergence += p * std::log(p / qk);
  }
  return divergence;
}

}  // namespace

calibration_method parse_calibration_method(std::string_view text) {
  if (text == "minmax") return calibration_method::min_max;
  if (text == "percentile") return calibration_method::percentile;
  if (text == "entropy") return calibration_method::entropy;
  if (text == "mse") return calibration_method::mse;
  throw error(errc::invalid_argument,
              "unknown calibration method '" + std::string(text) + "' (expected minmax, percentile, entropy or mse)");
}

double percentile_threshold(std::span<const std::uint64_t> abs_histogram, double bin_width, double percentile) {
  const double wanted = static_cast<double>(total_of(abs_histogram)) * percentile / 100.0;
  if (wanted <= 0.0) return 0.0;
  double cumulative = 0.0;
  for (std::size_t k = 0; k < abs_histogram.size(); ++k) {
    cumulative += static_cast<double>(abs_histogram[k]);
    if (cumulative >= wanted) return static_cast<double>(k + 1) * bin_width;
  }
  return static_cast<double>(abs_histogram.size()) * bin_width;
}

std::size_t entropy_best_bin_count(std::span<const std::uint64_t> abs_histogram, std::size_t levels) {
  expects(levels > 0, "entropy calibration needs at least one quantized level");
  const std::size_t bins = abs_histogram.size();
  if (bins <= levels) return bins;
  // outliers[i] = counts in bins >= i, built from the top.
  std::vector<double> outliers(bins + 1, 0.0);
  for (std::size_t k = bins; k-- > 0;) outliers[k] = outliers[k + 1] + static_cast<double>(abs_histogram[k]);
  std::vector<double> q;
  std::size_t best = bins;
  double best_divergence = std::numeric_limits<double>::infinity();
  for (std::size_t kept = levels; kept <= bins; ++kept) {
    const double d = entropy_divergence(abs_histogram, kept, levels, outliers[kept], q);
    if (d < best_divergence) {
      best_divergence = d;
      best = kept;
    }
  }
  return best;
}

double entropy_threshold(std::span<const std::uint64_t> abs_histogram, double bin_width, std::size_t levels) {
  if (total_of(abs_histogram) == 0) return 0.0;
  // The exact zeros of a post-ReLU (or zero-padded) tensor pile up in bin 0; that spike says
  // nothing about where to clip but dominates the divergence and pulls the threshold far in.
  // Like NVIDIA's own histogram calibrator, count bin 0 as its neighbour.
  std::vector<std::uint64_t> h(abs_histogram.begin(), abs_histogram.end());
  if (h.size() > 1) h[0] = h[1];
  if (total_of(h) == 0) return 0.0;
  return (static_cast<double>(entropy_best_bin_count(h, levels)) + 0.5) * bin_width;
}

double mse_at_threshold(std::span<const std::uint64_t> abs_histogram, double bin_width, std::size_t levels,
                        double threshold) {
  const double step = threshold / static_cast<double>(levels);
  const double rounding = step * step / 12.0;
  double error = 0.0;
  for (std::size_t k = 0; k < abs_histogram.size(); ++k) {
    const double centre = (static_cast<double>(k) + 0.5) * bin_width;
    const double clipped = centre - threshold;
    error += static_cast<double>(abs_histogram[k]) * (clipped > 0.0 ? clipped * clipped : rounding);
  }
  return error;
}

double mse_threshold(std::span<const std::uint64_t> abs_histogram, double bin_width, std::size_t levels) {
  expects(levels > 0, "mse calibration needs at least one quantized level");
  const std::size_t bins = abs_histogram.size();
  if (total_of(abs_histogram) == 0) return 0.0;
  // Suffix sums of n, n*c and n*c^2 over the clipped bins make each candidate O(1): at
  // t = k * width the bins j >= k are clipped (their centres lie above t).
  std::vector<double> n(bins + 1, 0.0), nc(bins + 1, 0.0), ncc(bins + 1, 0.0);
  for (std::size_t j = bins; j-- > 0;) {
    const double count = static_cast<double>(abs_histogram[j]);
    const double centre = (static_cast<double>(j) + 0.5) * bin_width;
    n[j] = n[j + 1] + count;
    nc[j] = nc[j + 1] + count * centre;
    ncc[j] = ncc[j + 1] + count * centre * centre;
  }
  double best_t = static_cast<double>(bins) * bin_width;
  double best_error = std::numeric_limits<double>::infinity();
  for (std::size_t k = 1; k <= bins; ++k) {
    const double t = static_cast<double>(k) * bin_width;
    const double step = t / static_cast<double>(levels);
    const double kept = n[0] - n[k];
    const double error = kept * step * step / 12.0 + ncc[k] - 2.0 * t * nc[k] + t * t * n[k];
    if (error < best_error) {
      best_error = error;
      best_t = t;
    }
  }
  return best_t;
}

tensor_range compute_range(const tensor_statistics& stats, const calibrator_options& options) {
  expects(options.percentile > 0.0 && options.percentile <= 100.0, "percentile must be in (0, 100]");
  expects(options.quantized_levels > 0, "quantized levels must be positive");
  if (stats.count() == 0) return {};
  const double width = stats.abs_bin_width();
  // A threshold past every observed |x| only spreads the levels thinner.
  const auto clamp = [&](double t) { return std::min(t, stats.abs_max()); };
  switch (options.method) {
    case calibration_method::min_max:
      if (options.moving_average) return {stats.moving_min(), stats.moving_max()};
      return {stats.min(), stats.max()};
    case calibration_method::percentile:
      if (!options.symmetric) return asymmetric_percentile_range(stats, options.percentile);
      return symmetric_range(stats, clamp(percentile_threshold(stats.abs_histogram(), width, options.percentile)));
    case calibration_method::entropy:
      return symmetric_range(stats, clamp(entropy_threshold(stats.abs_histogram(), width, options.quantized_levels)));
    case calibration_method::mse:
      return symmetric_range(stats, clamp(mse_threshold(stats.abs_histogram(), width, options.quantized_levels)));
  }
  throw error(errc::internal, "unhandled calibration method");
}

range_table compute_ranges(const calibration_state& state, const calibrator_options& options) {
  // Entropy and MSE search every candidate threshold per tensor: tensors in parallel.
  std::vector<std::pair<const std::string*, const tensor_statistics*>> work;
  for (const auto& [name, stats] : state.tensors()) work.emplace_back(&name, &stats);
  std::vector<tensor_range> ranges(work.size());
  std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic)
  for (std::ptrdiff_t k = 0; k < static_cast<std::ptrdiff_t>(work.size()); ++k) {
    try {
      ranges[static_cast<std::size_t>(k)] = compute_range(*work[static_cast<std::size_t>(k)].second, options);
    } catch (...) {
#pragma omp critical
      failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  range_table table;
  for (std::size_t k = 0; k < work.size(); ++k) table.emplace(*work[k].first, ranges[k]);
  return table;
}

}  // namespace inferopt::quant
