#pragma once
/// `remove-unused`: drops initializers nothing reads and value_info entries that describe
/// values the graph no longer has.

#include "inferopt/pass/pass.hpp"

namespace inferopt {

/// An unused initializer that is also listed as a graph input (IR < 4 style, where every
/// weight was an input) goes together with that input: it was a weight, not a feed. Plain
/// graph inputs without data are part of the model's interface and stay.
class remove_unused final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "remove-unused"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "remove unused initializers and stale value_info entries";
  }
  bool run(ir::graph& g, pass_context& ctx) override;
};

}  // namespace inferopt
