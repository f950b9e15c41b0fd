#include "inferopt/quant/range_json.hpp"

#include <nlohmann/json.hpp>

#include "inferopt/core/atomic_file.hpp"
#include "inferopt/core/error.hpp"

namespace inferopt::quant {

std::string format_range_json(const range_table& ranges, activation_scheme scheme) {
  nlohmann::ordered_json table = nlohmann::ordered_json::object();
  for (const auto& [name, range] : ranges) {
    quant_params p;
    try {
      p = activation_params(range, scheme);
    } catch (const error& e) {
      throw error(errc::invalid_argument, "tensor '" + name + "': " + e.what());
    }
    nlohmann::ordered_json entry;
    entry["min"] = range.min;
    entry["max"] = range.max;
    entry["scale"] = static_cast<double>(p.scale);
    entry["zero_point"] = p.zero_point;
    entry["dtype"] = std::string(ir::to_string(p.dtype));
    table[name] = std::move(entry);
  }
  return table.dump(2) + "\n";
}

void write_range_json(const range_table& ranges, activation_scheme scheme, const std::filesystem::path& path) {
  write_file_atomically(path, format_range_json(ranges, scheme));
}

}  // namespace inferopt::quant
