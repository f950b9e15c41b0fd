#pragma once
/// Static types of values: element type plus a shape whose dims may be symbolic.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "inferopt/ir/data_type.hpp"

namespace inferopt::ir {

/// One dimension: a known size, a symbolic name (`batch`), or unknown.
struct dim {
  std::variant<std::monostate, std::int64_t, std::string> size;
  std::string denotation;

  dim() = default;
  dim(std::int64_t n) : size(n) {}                // NOLINT: a number reads as a dim
  dim(std::string param) : size(std::move(param)) {}  // NOLINT
  dim(const char* param) : size(std::string(param)) {}  // NOLINT

  [[nodiscard]] bool is_static() const noexcept { return std::holds_alternative<std::int64_t>(size); }
  [[nodiscard]] bool is_symbolic() const noexcept { return std::holds_alternative<std::string>(size); }
  [[nodiscard]] std::int64_t value() const { return std::get<std::int64_t>(size); }
  [[nodiscard]] const std::string& param() const { return std::get<std::string>(size); }
  friend bool operator==(const dim&, const dim&) = default;
};

using shape = std::vector<dim>;

/// The type of a value. Only tensor types are modelled; sequences, maps, optionals and
/// sparse tensors keep their full description in the owner's residual and report
/// `is_tensor == false`.
struct value_type {
  bool is_tensor = true;
  data_type elem_type = data_type::undefined;
  std::optional<ir::shape> dims;  ///< nullopt: rank unknown

  [[nodiscard]] bool has_static_shape() const noexcept {
    if (!dims) return false;
    for (const dim& d : *dims) {
      if (!d.is_static()) return false;
    }
    return true;
  }
  friend bool operator==(const value_type&, const value_type&) = default;
};

/// `1x3x224x224`, `batchx3x?x?` or `?` (unknown rank); for messages and reports.
inline std::string to_string(const std::optional<shape>& s) {
  if (!s) return "?";
  if (s->empty()) return "scalar";
  std::string out;
  for (std::size_t i = 0; i < s->size(); ++i) {
    if (i) out += 'x';
    const dim& d = (*s)[i];
    out += d.is_static() ? std::to_string(d.value()) : d.is_symbolic() ? d.param() : "?";
  }
  return out;
}

}  // namespace inferopt::ir
