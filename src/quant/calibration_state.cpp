#include "inferopt/quant/calibration_state.hpp"

#include "byte_io.hpp"
#include "inferopt/core/error.hpp"

namespace inferopt::quant {

namespace {
constexpr std::string_view file_magic = "IOCALIB2";
/// The first format, with moving averages where each batch's extremes now are.
constexpr std::string_view first_file_magic = "IOCALIB1";
}

bool is_floating_tensor(std::string_view, ir::data_type type) noexcept {
  return type == ir::data_type::float32 || type == ir::data_type::float64 || type == ir::data_type::float16 ||
         type == ir::data_type::bfloat16;
}

calibration_state::calibration_state(statistics_options options) : options_(options) {
  (void)tensor_statistics(options_);  // validates the options now rather than at the first observe
}

void calibration_state::observe(std::string_view value_name, const runtime::tensor& value) {
  auto it = tensors_.find(value_name);
  if (it == tensors_.end()) it = tensors_.emplace(std::string(value_name), tensor_statistics(options_)).first;
  switch (value.dtype()) {
    case ir::data_type::float32: it->second.add_batch(value.values<float>()); break;
    case ir::data_type::float64: it->second.add_batch(value.values<double>()); break;
    default: {
      const std::vector<float> converted = value.to_float();
      it->second.add_batch(std::span<const float>(converted));
    }
  }
}

void calibration_state::merge(const calibration_state& later) {
  if (!(later.options_ == options_)) {
    throw error(errc::invalid_argument, "cannot merge calibration states with different statistics options");
  }
  for (const auto& [name, stats] : later.tensors_) {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) {
      tensors_.emplace(name, stats);
    } else {
      it->second.merge(stats);
    }
  }
}

const tensor_statistics* calibration_state::find(std::string_view value_name) const {
  const auto it = tensors_.find(value_name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::string calibration_state::serialize() const {
  std::string out(file_magic);
  detail::put_u64(out, options_.bins);
  detail::put_f64(out, options_.averaging_constant);
  detail::put_u64(out, tensors_.size());
  for (const auto& [name, stats] : tensors_) {
    detail::put_u64(out, name.size());
    out += name;
    stats.serialize_to(out);
  }
  return out;
}

calibration_state calibration_state::parse(std::string_view bytes) {
  if (bytes.substr(0, first_file_magic.size()) == first_file_magic) {
    throw error(errc::invalid_argument,
                "calibration data: an IOCALIB1 file keeps no per-batch extremes, so it cannot merge exactly; calibrate again");
  }
  if (bytes.substr(0, file_magic.size()) != file_magic) {
    throw error(errc::invalid_argument, "calibration data: not a calibration file (bad magic)");
  }
  bytes.remove_prefix(file_magic.size());
  statistics_options options;
  options.bins = detail::take_u64(bytes);
  options.averaging_constant = detail::take_f64(bytes);
  calibration_state state(options);
  const std::uint64_t count = detail::take_u64(bytes);
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint64_t length = detail::take_u64(bytes);
    detail::need(bytes, length);
    std::string name(bytes.substr(0, length));
    bytes.remove_prefix(length);
    tensor_statistics stats = tensor_statistics::parse_from(bytes);
    if (!(stats.options() == state.options_)) {
      throw error(errc::invalid_argument, "calibration data: tensor '" + name + "' has different statistics options");
    }
    if (!state.tensors_.emplace(std::move(name), std::move(stats)).second) {
      throw error(errc::invalid_argument, "calibration data: a tensor appears twice");
    }
  }
  if (!bytes.empty()) throw error(errc::invalid_argument, "calibration data: trailing bytes");
  return state;
}

}  // namespace inferopt::quant
