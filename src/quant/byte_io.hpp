#pragma once
// Little-endian writing and bounds-checked reading of the calibration file's fields, so the
// bytes are the same on every machine.

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

#include "inferopt/core/error.hpp"

namespace inferopt::quant::detail {

inline void put_u64(std::string& out, std::uint64_t v) {
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
}
inline void put_u32(std::string& out, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
}
inline void put_f64(std::string& out, double v) { put_u64(out, std::bit_cast<std::uint64_t>(v)); }

inline void need(std::string_view in, std::size_t bytes) {
  if (in.size() < bytes) throw error(errc::invalid_argument, "calibration data: truncated");
}
inline std::uint64_t take_u64(std::string_view& in) {
  need(in, 8);
  std::uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= std::uint64_t{static_cast<unsigned char>(in[k])} << (8 * k);
  in.remove_prefix(8);
  return v;
}
inline std::uint32_t take_u32(std::string_view& in) {
  need(in, 4);
  std::uint32_t v = 0;
  for (int k = 0; k < 4; ++k) v |= std::uint32_t{static_cast<unsigned char>(in[k])} << (8 * k);
  in.remove_prefix(4);
  return v;
}
inline double take_f64(std::string_view& in) { return std::bit_cast<double>(take_u64(in)); }

}  // namespace inferopt::quant::detail
