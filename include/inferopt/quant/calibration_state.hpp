#pragma once
/// Calibration statistics of every collected tensor of a model, keyed by value name: what
/// observing calibration batches produces, what can be saved, merged across shards and
/// threads, and what the calibrators read.
///
/// File format (all integers little-endian, doubles as their IEEE-754 bits in a u64):
///
///     magic    8 bytes  "IOCALIB2" (IOCALIB1, which kept moving averages instead of each
///                       batch's extremes, is refused: calibrate again)
///     options  u64 bins, f64 averaging_constant (the state's; every tensor repeats them)
///     count    u64      number of tensors, then per tensor in name order:
///       name   u64 length + bytes (UTF-8)
///       bins u64, averaging_constant f64
///       count, nan_count, inf_count, batches         u64 each
///       min, max                                     f64 each
///       per batch, in order: its min and max         f64 each
///       has_range u32 (0 or 1), range_exponent i32 (R = 2^exponent)
///       |x| histogram, then x histogram, each sparse: u64 n, then n x (u32 bin, u64 count)
///       with strictly increasing bins
///
/// Every field round-trips bit for bit, so parse(serialize(s)) == s.

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "inferopt/ir/data_type.hpp"
#include "inferopt/quant/statistics.hpp"
#include "inferopt/runtime/tensor.hpp"

namespace inferopt::quant {

/// Which tensors calibration collects, by value name and element type.
using tensor_filter = std::function<bool(std::string_view value_name, ir::data_type type)>;

/// True for float32, float64, float16 and bfloat16: the default filter.
[[nodiscard]] bool is_floating_tensor(std::string_view value_name, ir::data_type type) noexcept;

class calibration_state {
 public:
  using map_type = std::map<std::string, tensor_statistics, std::less<>>;

  explicit calibration_state(statistics_options options = {});

  /// Adds one batch of `value_name` (creating its statistics on first sight). float32 and
  /// float64 are read in place; other types are converted through `tensor::to_float`.
  /// @throws error for element types that have no float conversion (bool, string).
  void observe(std::string_view value_name, const runtime::tensor& value);

  /// Adds `later`'s batches after this state's, tensor by tensor (`tensor_statistics::merge`).
  /// @throws error(errc::invalid_argument) when the statistics options differ.
  void merge(const calibration_state& later);

  [[nodiscard]] const statistics_options& options() const noexcept { return options_; }
  [[nodiscard]] const map_type& tensors() const noexcept { return tensors_; }
  /// Null when the tensor was never observed.
  [[nodiscard]] const tensor_statistics* find(std::string_view value_name) const;

  /// The binary form documented above.
  [[nodiscard]] std::string serialize() const;
  /// @throws error(errc::invalid_argument) for bytes that are not a complete calibration file.
  [[nodiscard]] static calibration_state parse(std::string_view bytes);

  friend bool operator==(const calibration_state&, const calibration_state&) = default;

 private:
  statistics_options options_;
  map_type tensors_;
};

}  // namespace inferopt::quant
