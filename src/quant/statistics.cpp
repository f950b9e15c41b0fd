#include "inferopt/quant/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "byte_io.hpp"
#include "inferopt/core/error.hpp"

namespace inferopt::quant {

namespace {

// Past this many doublings every count sits in the lowest (or the two central) bins, so
// further merges change nothing; the cap keeps a huge exponent jump cheap.
constexpr int max_useful_doublings = 64;

void check_options(const statistics_options& o) {
  expects(o.bins >= 4 && o.bins % 4 == 0 && o.bins <= (std::size_t{1} << 24),
          "histogram bins must be a multiple of 4 in [4, 2^24]");
  expects(o.averaging_constant > 0.0 && o.averaging_constant <= 1.0, "averaging constant must be in (0, 1]");
}

/// |x| histogram: bin j at range 2R holds bins 2j and 2j+1 at range R.
void double_abs_range(std::vector<std::uint64_t>& h) {
  const std::size_t half = h.size() / 2;
  for (std::size_t j = 0; j < half; ++j) h[j] = h[2 * j] + h[2 * j + 1];
  std::fill(h.begin() + static_cast<std::ptrdiff_t>(half), h.end(), 0);
}

/// x histogram: bin i at range R moves to bin (i + bins/2) / 2 at range 2R.
void double_signed_range(std::vector<std::uint64_t>& h) {
  const std::size_t quarter = h.size() / 4;
  std::vector<std::uint64_t> merged(h.size(), 0);
  for (std::size_t i = 0; i < h.size(); ++i) merged[i / 2 + quarter] += h[i];
  h = std::move(merged);
}

void write_sparse(std::string& out, const std::vector<std::uint64_t>& h) {
  const auto nonzero = static_cast<std::uint64_t>(std::count_if(h.begin(), h.end(), [](auto c) { return c != 0; }));
  detail::put_u64(out, nonzero);
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (h[i] == 0) continue;
    detail::put_u32(out, static_cast<std::uint32_t>(i));
    detail::put_u64(out, h[i]);
  }
}

void read_sparse(std::string_view& in, std::vector<std::uint64_t>& h) {
  const std::uint64_t nonzero = detail::take_u64(in);
  if (nonzero > h.size()) throw error(errc::invalid_argument, "calibration data: more histogram entries than bins");
  std::int64_t previous = -1;
  for (std::uint64_t k = 0; k < nonzero; ++k) {
    const std::uint32_t index = detail::take_u32(in);
    if (index >= h.size() || static_cast<std::int64_t>(index) <= previous) {
      throw error(errc::invalid_argument, "calibration data: histogram bin index out of order or range");
    }
    previous = index;
    h[index] = detail::take_u64(in);
  }
}

}  // namespace

tensor_statistics::tensor_statistics(statistics_options options)
    : options_(options), abs_hist_(options.bins, 0), signed_hist_(options.bins, 0) {
  check_options(options_);
}

void tensor_statistics::add_batch(std::span<const float> values) { add_values(values); }
void tensor_statistics::add_batch(std::span<const double> values) { add_values(values); }

template <class T>
void tensor_statistics::add_values(std::span<const T> values) {
  double batch_min = std::numeric_limits<double>::infinity();
  double batch_max = -std::numeric_limits<double>::infinity();
  std::uint64_t finite = 0;
  for (const T v : values) {
    if (std::isnan(v)) {
      ++nan_count_;
    } else if (std::isinf(v)) {
      ++inf_count_;
    } else {
      ++finite;
      batch_min = std::min(batch_min, static_cast<double>(v));
      batch_max = std::max(batch_max, static_cast<double>(v));
    }
  }
  if (finite == 0) return;

  // Grow first, so every value of the batch is binned once, at the final range.
  const double batch_abs_max = std::max(-batch_min, batch_max);
  if (batch_abs_max > 0.0) {
    int exponent = 0;
    std::frexp(batch_abs_max, &exponent);  // batch_abs_max < 2^exponent, the smallest such power
    grow_to(exponent);
  }
  const std::size_t bins = options_.bins;
  const double half = static_cast<double>(bins / 2);
  if (!has_range_) {  // every finite value is zero
    abs_hist_[0] += finite;
    signed_hist_[bins / 2] += finite;
  } else {
    for (const T v : values) {
      if (!std::isfinite(v)) continue;
      const double scaled = std::ldexp(static_cast<double>(v), -exponent_);  // in (-1, 1), exact
      abs_hist_[static_cast<std::size_t>(std::fabs(scaled) * static_cast<double>(bins))] += 1;
      signed_hist_[static_cast<std::size_t>(half + std::floor(scaled * half))] += 1;
    }
  }

  if (count_ == 0) {
    min_ = batch_min;
    max_ = batch_max;
  } else {
    min_ = std::min(min_, batch_min);
    max_ = std::max(max_, batch_max);
  }
  count_ += finite;
  batch_mins_.push_back(batch_min);
  batch_maxs_.push_back(batch_max);
}

double tensor_statistics::moving_average(const std::vector<double>& sequence) const noexcept {
  if (sequence.empty()) return 0.0;
  double m = sequence.front();
  for (std::size_t k = 1; k < sequence.size(); ++k) m += options_.averaging_constant * (sequence[k] - m);
  return m;
}

void tensor_statistics::grow_to(int exponent) {
  if (!has_range_) {  // only the zero bins hold counts, and they stay put at any range
    has_range_ = true;
    exponent_ = exponent;
    return;
  }
  if (exponent <= exponent_) return;
  const int doublings = std::min(exponent - exponent_, max_useful_doublings);
  for (int k = 0; k < doublings; ++k) {
    double_abs_range(abs_hist_);
    double_signed_range(signed_hist_);
  }
  exponent_ = exponent;
}

void tensor_statistics::merge(const tensor_statistics& later) {
  if (!(later.options_ == options_)) {
    throw error(errc::invalid_argument, "cannot merge statistics with different bins or averaging constants");
  }
  if (later.has_range_) grow_to(later.exponent_);
  const tensor_statistics* other = &later;
  tensor_statistics grown(options_);
  if (later.has_range_ && later.exponent_ < exponent_) {
    grown = later;
    grown.grow_to(exponent_);
    other = &grown;
  }
  for (std::size_t i = 0; i < abs_hist_.size(); ++i) {
    abs_hist_[i] += other->abs_hist_[i];
    signed_hist_[i] += other->signed_hist_[i];
  }

  if (later.count_ > 0) {
    min_ = count_ == 0 ? later.min_ : std::min(min_, later.min_);
    max_ = count_ == 0 ? later.max_ : std::max(max_, later.max_);
  }
  batch_mins_.insert(batch_mins_.end(), later.batch_mins_.begin(), later.batch_mins_.end());
  batch_maxs_.insert(batch_maxs_.end(), later.batch_maxs_.begin(), later.batch_maxs_.end());
  count_ += later.count_;
  nan_count_ += later.nan_count_;
  inf_count_ += later.inf_count_;
}

double tensor_statistics::abs_max() const noexcept { return std::max(std::fabs(min_), std::fabs(max_)); }

double tensor_statistics::range() const noexcept { return has_range_ ? std::ldexp(1.0, exponent_) : 0.0; }

double tensor_statistics::abs_bin_width() const noexcept { return range() / static_cast<double>(options_.bins); }

double tensor_statistics::signed_bin_width() const noexcept {
  return 2.0 * range() / static_cast<double>(options_.bins);
}

void tensor_statistics::serialize_to(std::string& out) const {
  detail::put_u64(out, options_.bins);
  detail::put_f64(out, options_.averaging_constant);
  detail::put_u64(out, count_);
  detail::put_u64(out, nan_count_);
  detail::put_u64(out, inf_count_);
  detail::put_u64(out, batch_mins_.size());
  detail::put_f64(out, min_);
  detail::put_f64(out, max_);
  for (std::size_t k = 0; k < batch_mins_.size(); ++k) {
    detail::put_f64(out, batch_mins_[k]);
    detail::put_f64(out, batch_maxs_[k]);
  }
  detail::put_u32(out, has_range_ ? 1 : 0);
  detail::put_u32(out, static_cast<std::uint32_t>(exponent_));
  write_sparse(out, abs_hist_);
  write_sparse(out, signed_hist_);
}

tensor_statistics tensor_statistics::parse_from(std::string_view& in) {
  statistics_options options;
  options.bins = detail::take_u64(in);
  options.averaging_constant = detail::take_f64(in);
  tensor_statistics s(options);  // validates the options
  s.count_ = detail::take_u64(in);
  s.nan_count_ = detail::take_u64(in);
  s.inf_count_ = detail::take_u64(in);
  const std::uint64_t batches = detail::take_u64(in);
  s.min_ = detail::take_f64(in);
  s.max_ = detail::take_f64(in);
  // 16 bytes a batch must be there before anything is reserved for them.
  if (batches > in.size() / 16 || batches > s.count_) throw error(errc::invalid_argument, "calibration data: truncated batch extremes");
  s.batch_mins_.reserve(batches);
  s.batch_maxs_.reserve(batches);
  for (std::uint64_t k = 0; k < batches; ++k) {
    s.batch_mins_.push_back(detail::take_f64(in));
    s.batch_maxs_.push_back(detail::take_f64(in));
  }
  const std::uint32_t has_range = detail::take_u32(in);
  if (has_range > 1) throw error(errc::invalid_argument, "calibration data: bad range flag");
  s.has_range_ = has_range == 1;
  s.exponent_ = static_cast<std::int32_t>(detail::take_u32(in));
  read_sparse(in, s.abs_hist_);
  read_sparse(in, s.signed_hist_);
  const auto total = [](const std::vector<std::uint64_t>& h) { return std::accumulate(h.begin(), h.end(), std::uint64_t{0}); };
  if (total(s.abs_hist_) != s.count_ || total(s.signed_hist_) != s.count_) {
    throw error(errc::invalid_argument, "calibration data: histogram counts do not add up to the value count");
  }
  return s;
}

}  // namespace inferopt::quant
