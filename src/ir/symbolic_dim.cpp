#include "inferopt/ir/symbolic_dim.hpp"

#include <algorithm>
#include <cctype>

namespace inferopt::ir {
namespace {

// Real shapes need a handful of terms; a hostile graph could grow expressions without bound
// (a chain of Muls on a shape vector), so past these sizes a dim becomes unknown.
constexpr std::size_t max_terms = 16;
constexpr std::size_t max_names_per_term = 8;

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':'; }

/// Reads the expressions `str` prints; nullopt for anything else (then the whole text is one
/// name). Names never start with a digit in what we print.
class expression_reader {
 public:
  explicit expression_reader(std::string_view text) : text_(text) {}

  std::optional<sym_dim> read() {
    if (text_.empty()) return std::nullopt;
    std::optional<sym_dim> sum = term();
    while (sum && pos_ < text_.size()) {
      const char op = text_[pos_];
      if (op != '+' && op != '-') return std::nullopt;
      ++pos_;
      std::optional<sym_dim> t = term();
      if (!t) return std::nullopt;
      sum = op == '+' ? *sum + *t : *sum - *t;
    }
    return sum;
  }

 private:
  std::optional<sym_dim> term() {
    bool negative = false;
    if (pos_ < text_.size() && text_[pos_] == '-') negative = true, ++pos_;
    std::optional<sym_dim> product = factor();
    while (product && pos_ < text_.size() && text_[pos_] == '*') {
      ++pos_;
      std::optional<sym_dim> f = factor();
      if (!f) return std::nullopt;
      product = *product * *f;
    }
    if (product && negative) product = sym_dim(0) - *product;
    return product;
  }

  std::optional<sym_dim> factor() {
    const std::size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '(') return quotient_name();
    while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
    if (pos_ == start) return std::nullopt;
    const std::string_view token = text_.substr(start, pos_ - start);
    if (!std::isdigit(static_cast<unsigned char>(token[0]))) return sym_dim::named(std::string(token));
    std::int64_t n = 0;
    for (char c : token) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || __builtin_mul_overflow(n, 10, &n) ||
          __builtin_add_overflow(n, c - '0', &n)) {
        return std::nullopt;
      }
    }
    return sym_dim(n);
  }

  /// `(expr)/divisor`, kept whole as one name: the division that did not come out exact.
  std::optional<sym_dim> quotient_name() {
    const std::size_t start = pos_;
    int depth = 0;
    for (; pos_ < text_.size(); ++pos_) {
      depth += text_[pos_] == '(' ? 1 : text_[pos_] == ')' ? -1 : 0;
      if (depth == 0) break;
    }
    if (pos_ >= text_.size() || ++pos_ >= text_.size() || text_[pos_] != '/') return std::nullopt;
    ++pos_;
    const std::size_t divisor = pos_;
    while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
    if (pos_ == divisor) return std::nullopt;
    return sym_dim::named(std::string(text_.substr(start, pos_ - start)));
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

sym_dim::sym_dim(std::int64_t n) : known_(true) { add_term({}, n); }

sym_dim sym_dim::named(std::string name) {
  sym_dim d;
  d.known_ = true;
  d.terms_[{std::move(name)}] = 1;
  return d;
}

sym_dim sym_dim::from_dim(const dim& d) {
  if (d.is_static()) return sym_dim(d.value());
  if (!d.is_symbolic() || d.param().empty()) return {};
  std::optional<sym_dim> parsed = expression_reader(d.param()).read();
  // Only our own canonical spelling is read as arithmetic; any other text is one name.
  if (parsed && parsed->str() == d.param()) return *parsed;
  return named(d.param());
}

void sym_dim::add_term(const monomial& m, std::int64_t coefficient) {
  if (!known_) return;
  std::int64_t& c = terms_[m];
  if (__builtin_add_overflow(c, coefficient, &c)) {
    known_ = false;
    terms_.clear();
    return;
  }
  if (c == 0) terms_.erase(m);
  if (terms_.size() > max_terms || m.size() > max_names_per_term) {
    known_ = false;
    terms_.clear();
  }
}

std::optional<std::int64_t> sym_dim::constant() const noexcept {
  if (!known_) return std::nullopt;
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second;
  return std::nullopt;
}

bool sym_dim::non_negative() const noexcept {
  return known_ && std::all_of(terms_.begin(), terms_.end(), [](const auto& t) { return t.second > 0; });
}

dim sym_dim::to_dim() const {
  if (!known_) return {};
  if (auto c = constant()) return dim(*c);
  return dim(str());
}

std::string sym_dim::str() const {
  if (!known_) return "?";
  std::string out;
  auto append = [&](const monomial& m, std::int64_t c) {
    if (c < 0) out += '-';
    else if (!out.empty()) out += '+';
    // Unsigned, so that -2^63 has a magnitude too.
    const std::uint64_t magnitude = c < 0 ? 0 - static_cast<std::uint64_t>(c) : static_cast<std::uint64_t>(c);
    if (m.empty() || magnitude != 1) out += std::to_string(magnitude);
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (i > 0 || magnitude != 1) out += '*';
      out += m[i];
    }
  };
  for (const auto& [m, c] : terms_) {
    if (!m.empty()) append(m, c);
  }
  if (auto it = terms_.find(monomial{}); it != terms_.end()) append(it->first, it->second);
  return out.empty() ? "0" : out;
}

sym_dim sym_dim::substitute(const std::map<std::string, std::int64_t, std::less<>>& values) const {
  if (!known_) return *this;
  sym_dim result(0);
  for (const auto& [m, c] : terms_) {
    sym_dim term(c);
    for (const std::string& name : m) {
      auto it = values.find(name);
      term = term * (it != values.end() ? sym_dim(it->second) : named(name));
    }
    result = result + term;
  }
  return result;
}

sym_dim operator+(const sym_dim& a, const sym_dim& b) {
  if (!a.known_ || !b.known_) return {};
  sym_dim r = a;
  for (const auto& [m, c] : b.terms_) r.add_term(m, c);
  return r;
}

sym_dim operator-(const sym_dim& a, const sym_dim& b) {
  if (!a.known_ || !b.known_) return {};
  sym_dim r = a;
  for (const auto& [m, c] : b.terms_) {
    if (c == INT64_MIN) return {};
    r.add_term(m, -c);
  }
  return r;
}

sym_dim operator*(const sym_dim& a, const sym_dim& b) {
  if (!a.known_ || !b.known_) return {};
  sym_dim r(0);
  for (const auto& [ma, ca] : a.terms_) {
    for (const auto& [mb, cb] : b.terms_) {
      sym_dim::monomial m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      std::int64_t c = 0;
      if (__builtin_mul_overflow(ca, cb, &c)) return {};
      r.add_term(m, c);
      if (!r.known_) return {};
    }
  }
  return r;
}

sym_dim floor_div(const sym_dim& a, const sym_dim& b) {
  if (!a.known_ || !b.known_ || b.is(0)) return {};
  if (auto bc = b.constant()) {
    if (auto ac = a.constant()) return floor_div(*ac, *bc);
    const bool exact = std::all_of(a.terms_.begin(), a.terms_.end(), [&](const auto& t) { return t.second % *bc == 0; });
    if (exact) {
      sym_dim r(0);
      for (const auto& [m, c] : a.terms_) r.add_term(m, c / *bc);
      return r;
    }
  } else if (a.terms_.size() == 1 && b.terms_.size() == 1) {
    // A product divided by some of its own factors: (batch*sequence)/sequence.
    const auto& [ma, ca] = *a.terms_.begin();
    const auto& [mb, cb] = *b.terms_.begin();
    sym_dim::monomial rest;
    if (ca % cb == 0 && std::includes(ma.begin(), ma.end(), mb.begin(), mb.end())) {
      std::set_difference(ma.begin(), ma.end(), mb.begin(), mb.end(), std::back_inserter(rest));
      sym_dim r(0);
      r.add_term(rest, ca / cb);
      return r;
    }
  }
  return sym_dim::named("(" + a.str() + ")/" + (b.terms_.size() == 1 && b.constant() ? b.str() : "(" + b.str() + ")"));
}

sym_dim ceil_div(const sym_dim& a, const sym_dim& b) { return floor_div(a + b - sym_dim(1), b); }

sym_shape to_sym_shape(const shape& s) {
  sym_shape out;
  out.reserve(s.size());
  for (const dim& d : s) out.push_back(sym_dim::from_dim(d));
  return out;
}

shape to_shape(const sym_shape& s) {
  shape out;
  out.reserve(s.size());
  for (const sym_dim& d : s) out.push_back(d.to_dim());
  return out;
}

std::string to_string(const sym_shape& s) {
  if (s.empty()) return "scalar";
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + s[i].str();
  return out;
}

}  // namespace inferopt::ir
