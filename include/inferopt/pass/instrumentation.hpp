#pragma once
/// Hooks the pass manager calls around every pass, and the built-in instrumentations.

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>

#include "inferopt/pass/pass.hpp"

namespace inferopt {

/// What a pass did in one run (over the main graph and its subgraphs).
struct pass_outcome {
  bool changed = false;
  std::int64_t rewrites = 0;
  std::map<std::string, std::int64_t> counters;
};

/// Every hook does nothing by default. An instrumentation that throws from `after_pass`
/// fails the pass: the manager rolls the graph back and reports the error.
class pass_instrumentation {
 public:
  virtual ~pass_instrumentation() = default;
  virtual void before_pass(const pass& p, const ir::model& m) { (void)p, (void)m; }
  virtual void after_pass(const pass& p, const ir::model& m, const pass_outcome& outcome) {
    (void)p, (void)m, (void)outcome;
  }
  virtual void after_pass_failed(const pass& p, const ir::model& m, const std::string& why) {
    (void)p, (void)m, (void)why;
  }
};

/// Structural verification after every pass; throws `errc::verification` naming the pass
/// that broke the graph.
class verify_each final : public pass_instrumentation {
 public:
  void after_pass(const pass& p, const ir::model& m, const pass_outcome& outcome) override;
};

/// Prints the graph as text after every pass that changed it.
class print_after_change final : public pass_instrumentation {
 public:
  /// `out` must outlive this instrumentation.
  explicit print_after_change(std::ostream& out) : out_(out) {}
  void after_pass(const pass& p, const ir::model& m, const pass_outcome& outcome) override;

 private:
  std::ostream& out_;
};

}  // namespace inferopt
