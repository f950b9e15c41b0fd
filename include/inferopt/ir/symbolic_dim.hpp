#pragma once
/// Integer expressions of named dimensions, for shape inference.
///
/// Exported transformers compute shapes from shapes: `batch*sequence` rows for a MatMul,
/// `sequence+1` positions, `hidden/heads` per head, `(H-1)/2+1` after a strided conv. A
/// `sym_dim` is a sum of terms, each an integer coefficient times a product of names, kept in
/// one canonical order so equal expressions compare equal and print the same (`2*sequence`,
/// `batch*sequence`, `sequence+1`). A division that does not come out exact becomes a name of
/// its own (`(sequence-1)/2`). It may also be unknown: arithmetic with an unknown gives unknown.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/ir/value_type.hpp"

namespace inferopt::ir {

class sym_dim {
 public:
  /// Unknown.
  sym_dim() = default;
  sym_dim(std::int64_t n);  // NOLINT: a number reads as a dim
  /// A single name (`batch`). Names are opaque: `from_dim` is what reads expressions.
  static sym_dim named(std::string name);
  /// Reads a model's dim: a number, an expression in the form `str` prints, or any other
  /// `dim_param` as one name; an unset dim is unknown.
  static sym_dim from_dim(const dim& d);

  [[nodiscard]] bool known() const noexcept { return known_; }
  /// The value when the expression is a plain number.
  [[nodiscard]] std::optional<std::int64_t> constant() const noexcept;
  [[nodiscard]] bool is(std::int64_t n) const noexcept { return constant() == n; }
  /// Whether the value is >= 0 for any sizes of its names (every coefficient is positive):
  /// a dim never equals -1, which exporters test shape vectors against.
  [[nodiscard]] bool non_negative() const noexcept;
  /// Static number, `dim_param` expression, or an unset dim.
  [[nodiscard]] dim to_dim() const;
  /// `?` when unknown.
  [[nodiscard]] std::string str() const;
  /// Replaces names by numbers (`batch=8`); names not in `values` stay.
  [[nodiscard]] sym_dim substitute(const std::map<std::string, std::int64_t, std::less<>>& values) const;

  friend sym_dim operator+(const sym_dim& a, const sym_dim& b);
  friend sym_dim operator-(const sym_dim& a, const sym_dim& b);
  friend sym_dim operator*(const sym_dim& a, const sym_dim& b);
  /// Floor division (ONNX's shape formulas round toward negative infinity for the
  /// non-negative operands they use); unknown for a zero or unknown divisor.
  friend sym_dim floor_div(const sym_dim& a, const sym_dim& b);
  friend sym_dim ceil_div(const sym_dim& a, const sym_dim& b);
  /// Equal when both are known and the same expression (unknowns equal nothing).
  friend bool operator==(const sym_dim& a, const sym_dim& b) noexcept { return a.known_ && b.known_ && a.terms_ == b.terms_; }

 private:
  using monomial = std::vector<std::string>;  // sorted names; empty for the constant term
  bool known_ = false;
  std::map<monomial, std::int64_t> terms_;    // no zero coefficients
  void add_term(const monomial& m, std::int64_t coefficient);
};

/// Floor division of numbers, the same formula for both kinds of dimension.
[[nodiscard]] inline std::int64_t floor_div(std::int64_t a, std::int64_t b) noexcept {
  const std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
[[nodiscard]] inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept { return -floor_div(-a, b); }

/// The number a dimension holds, if it is one (so shape rules read both kinds alike).
[[nodiscard]] inline std::optional<std::int64_t> constant_of(std::int64_t d) noexcept { return d; }
[[nodiscard]] inline std::optional<std::int64_t> constant_of(const sym_dim& d) noexcept { return d.constant(); }

using sym_shape = std::vector<sym_dim>;
[[nodiscard]] sym_shape to_sym_shape(const shape& s);
[[nodiscard]] shape to_shape(const sym_shape& s);
/// `1x3x224x224`, `batchx128x768`, with `?` for unknown dims.
[[nodiscard]] std::string to_string(const sym_shape& s);

}  // namespace inferopt::ir
