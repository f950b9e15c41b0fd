#include "inferopt/quant/trt_calibration_cache.hpp"

#include <bit>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "inferopt/core/atomic_file.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/quant/quant_params.hpp"

namespace inferopt::quant {

std::string format_trt_calibration_cache(const range_table& ranges, std::string_view header) {
  std::string out(header);
  out += '\n';
  for (const auto& [name, range] : ranges) {
    if (name.find_first_of("\r\n") != std::string::npos) {
      throw error(errc::invalid_argument, "tensor name with a line break cannot go into a TensorRT calibration cache");
    }
    float scale = 0.0f;
    try {
      scale = symmetric_int8_scale(range);
    } catch (const error& e) {
      throw error(errc::invalid_argument, "tensor '" + name + "': " + e.what());
    }
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(std::bit_cast<std::uint32_t>(scale)));
    out += name;
    out += ": ";
    out += hex;
    out += '\n';
  }
  return out;
}

void write_trt_calibration_cache(const range_table& ranges, const std::filesystem::path& path, std::string_view header) {
  write_file_atomically(path, format_trt_calibration_cache(ranges, header));
}

trt_calibration_cache parse_trt_calibration_cache(std::string_view text) {
  trt_calibration_cache cache;
  std::size_t line_number = 0;
  bool header_seen = false;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (!header_seen) {
      cache.header = std::string(line);
      header_seen = true;
      continue;
    }
    const auto fail = [&] {
      throw error(errc::invalid_argument, "calibration cache line " + std::to_string(line_number) +
                                              ": expected 'name: <hex scale>', found '" + std::string(line) + "'");
    };
    const std::size_t colon = line.rfind(": ");
    if (colon == std::string_view::npos || colon == 0) fail();
    const std::string_view digits = line.substr(colon + 2);
    if (digits.empty() || digits.size() > 8 || digits.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos) {
      fail();
    }
    const auto bits = static_cast<std::uint32_t>(std::stoul(std::string(digits), nullptr, 16));
    cache.scales[std::string(line.substr(0, colon))] = std::bit_cast<float>(bits);
  }
  return cache;
}

trt_calibration_cache read_trt_calibration_cache(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(errc::io, path.string() + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_trt_calibration_cache(text.str());
}

}  // namespace inferopt::quant
