#pragma once
/// Rewrite patterns: one local graph rewrite, split into a side-effect-free `match` and a
/// `rewrite` that applies exactly what was matched. The greedy driver (pattern_driver.hpp)
/// owns everything around them: which nodes to try, in which order, how often, the
/// statistics and the caps. A new fusion is then one file: its contract header, `match`,
/// `rewrite`, and a test.
///
/// The contract every pattern keeps:
///   1. The pattern's file opens with a comment block: before/after sketch, the algebra, and
///      numbered conditions. Each condition is a check in `match` that can decline, and has a
///      test where the pattern declines.
///   2. `match` decides everything and edits nothing: it is a const member, given the root by
///      reference only so that the match it returns can name nodes for `rewrite`. When the
///      root does not start the pattern at all it returns `no_match` (counted nowhere); when
///      it does but a condition fails it returns the condition's statistic (`declined-...`).
///   3. `rewrite` applies one match that `match` returned and cannot decline: every check that
///      could fail (a graph output that must keep its name, say) belongs in `match`, so a
///      declined rewrite never leaves the graph half edited.
///   4. `rewrite` edits only the nodes and values the match names (and nodes and initializers
///      it creates), counts its own statistics through the context, and returns how many
///      rewrites the pass reports for it (usually 1).
/// (MLIR's RewritePattern and ONNX Runtime's RewriteRule split the same way: a root op type,
/// a benefit, a cheap condition, and an apply step.)

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inferopt/ir/graph.hpp"
#include "inferopt/pass/pass.hpp"

namespace inferopt {

/// Where a pattern can start: a node of one of `op_types` in `domain`, in a model whose import
/// of that domain lies in [min_opset, max_opset].
struct pattern_root {
  std::vector<std::string> op_types;  ///< never empty
  std::string domain;                 ///< "" for the default ONNX domain ("ai.onnx" is the same)
  std::int64_t min_opset = 0;
  std::int64_t max_opset = std::numeric_limits<std::int64_t>::max();

  /// Whether `n` is such a node in a model importing `opset` for the root's domain.
  [[nodiscard]] bool accepts(const ir::node& n, std::int64_t opset) const;
  /// Whether `n` has one of the op types in the root's domain (the opset aside).
  [[nodiscard]] bool accepts_node(const ir::node& n) const;
};

/// The outcome of `match`: the match found, the statistic naming why the pattern declined, or
/// neither (the root does not start this pattern at all).
template <class Match>
class match_result {
 public:
  /// No match: nothing to count.
  match_result() = default;
  /// A match, to hand to `rewrite`.
  match_result(Match m) : found_(std::move(m)) {}  // NOLINT: implicit, so `return m;` reads well
  /// Declined by a condition; `statistic` names it (a string literal, such as
  /// "declined-variance") and is counted once per root.
  [[nodiscard]] static match_result declined(std::string_view statistic) {
    match_result r;
    r.declined_ = statistic;
    return r;
  }

  [[nodiscard]] bool found() const noexcept { return found_.has_value(); }
  [[nodiscard]] const Match& operator*() const noexcept { return *found_; }
  [[nodiscard]] const Match* operator->() const noexcept { return &*found_; }
  /// The statistic of a decline; empty for a match or no match.
  [[nodiscard]] std::string_view declined() const noexcept { return declined_; }

 private:
  std::optional<Match> found_;
  std::string_view declined_;
};

/// What one attempt of a pattern at a root came to, as the driver sees it.
struct pattern_outcome {
  enum class kind { no_match, declined, rewritten };
  kind what = kind::no_match;
  std::string_view statistic;  ///< declined: why
  std::int64_t rewrites = 0;   ///< rewritten: how many the pass reports
};

/// A named rewrite with a root and a benefit; see the contract at the top of this file. Most
/// patterns derive from `pattern<Match>`, which splits `apply` into `match` and `rewrite`.
class rewrite_pattern {
 public:
  virtual ~rewrite_pattern() = default;
  rewrite_pattern(const rewrite_pattern&) = delete;
  rewrite_pattern& operator=(const rewrite_pattern&) = delete;

  /// Stable kebab-case name, the key of the driver's per-pattern statistics.
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const pattern_root& root() const noexcept { return root_; }
  /// Among the patterns of one driver run that share a root, the higher benefit is tried
  /// first; equal benefits keep the order the patterns were given in.
  [[nodiscard]] int benefit() const noexcept { return benefit_; }
  /// Statistics the pass reports even when they stay zero, as MLIR declares its statistics up
  /// front: a report that leaves a counter out reads as "never ran".
  [[nodiscard]] const std::vector<std::string>& statistics() const noexcept { return statistics_; }

  /// Matches at `root` and, when it matches, rewrites.
  virtual pattern_outcome apply(ir::graph& g, ir::node& root, pass_context& ctx) const = 0;

 protected:
  rewrite_pattern(std::string name, pattern_root root, int benefit = 1, std::vector<std::string> statistics = {})
      : name_(std::move(name)), root_(std::move(root)), benefit_(benefit), statistics_(std::move(statistics)) {}

 private:
  std::string name_;
  pattern_root root_;
  int benefit_;
  std::vector<std::string> statistics_;
};

/// A pattern whose `match` hands a `Match` value to `rewrite`.
template <class Match>
class pattern : public rewrite_pattern {
 public:
  using rewrite_pattern::rewrite_pattern;

  /// Decides whether the pattern applies at `root`, editing nothing (contract item 2).
  [[nodiscard]] virtual match_result<Match> match(const ir::graph& g, ir::node& root,
                                                  const pass_context& ctx) const = 0;
  /// Applies `m` (contract items 3 and 4); returns the rewrites the pass reports.
  virtual std::int64_t rewrite(ir::graph& g, const Match& m, pass_context& ctx) const = 0;

  pattern_outcome apply(ir::graph& g, ir::node& root, pass_context& ctx) const final {
    const match_result<Match> r = match(g, root, ctx);
    if (!r.found()) {
      if (r.declined().empty()) return {};
      return {pattern_outcome::kind::declined, r.declined(), 0};
    }
    return {pattern_outcome::kind::rewritten, {}, rewrite(g, *r, ctx)};
  }
};

}  // namespace inferopt
