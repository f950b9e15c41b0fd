#pragma once
/// Metrics in the Prometheus text exposition format (version 0.0.4), the format `GET /metrics`
/// serves: each family once with its HELP and TYPE lines, then its samples. Histograms are
/// written cumulatively at the caller's bucket bounds (le), plus _sum and _count, and can also
/// be written as summaries of chosen quantiles, which Prometheus cannot compute from buckets
/// as precisely as histogram.hpp holds them.

#include <charconv>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "inferopt/serve/histogram.hpp"

namespace inferopt::serve {

class prometheus_text {
 public:
  /// `labels` is the inside of the braces, such as `model="resnet"`, or empty.
  void counter(std::string_view name, std::string_view help, std::uint64_t value, std::string_view labels = {}) {
    declare(name, help, "counter");
    sample(name, labels, {}, std::to_string(value));
  }

  void gauge(std::string_view name, std::string_view help, double value, std::string_view labels = {}) {
    declare(name, help, "gauge");
    sample(name, labels, {}, number(value));
  }

  /// Cumulative buckets at `bounds` (ascending), then +Inf, _sum and _count.
  void histogram(std::string_view name, std::string_view help, const serve::histogram& h,
                 std::span<const std::uint64_t> bounds, std::string_view labels = {}) {
    declare(name, help, "histogram");
    const std::string bucket = std::string(name) + "_bucket";
    for (const std::uint64_t le : bounds) sample(bucket, labels, "le=\"" + std::to_string(le) + "\"", std::to_string(h.count_at_most(le)));
    sample(bucket, labels, "le=\"+Inf\"", std::to_string(h.count()));
    sample(std::string(name) + "_sum", labels, {}, std::to_string(h.sum()));
    sample(std::string(name) + "_count", labels, {}, std::to_string(h.count()));
  }

  /// The quantiles (each in [0, 1]) of `h`, then _sum and _count.
  void summary(std::string_view name, std::string_view help, const serve::histogram& h, std::span<const double> quantiles,
               std::string_view labels = {}) {
    declare(name, help, "summary");
    for (const double q : quantiles) sample(name, labels, "quantile=\"" + number(q) + "\"", number(h.percentile(q)));
    sample(std::string(name) + "_sum", labels, {}, std::to_string(h.sum()));
    sample(std::string(name) + "_count", labels, {}, std::to_string(h.count()));
  }

  [[nodiscard]] const std::string& str() const noexcept { return out_; }

 private:
  void declare(std::string_view name, std::string_view help, std::string_view type) {
    if (!declared_.emplace(name).second) return;
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  void sample(std::string_view name, std::string_view labels, std::string_view extra, const std::string& value) {
    out_ += name;
    if (!labels.empty() || !extra.empty()) {
      out_ += '{';
      out_ += labels;
      if (!labels.empty() && !extra.empty()) out_ += ',';
      out_ += extra;
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }

  /// The shortest text that reads back as `v` (0.99, not 0.98999999999999999).
  [[nodiscard]] static std::string number(double v) {
    char text[32];
    const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
    return ec == std::errc() ? std::string(text, end) : std::string("NaN");
  }

  std::string out_;
  std::set<std::string, std::less<>> declared_;
};

}  // namespace inferopt::serve
