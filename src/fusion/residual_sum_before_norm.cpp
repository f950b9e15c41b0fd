#include "inferopt/fusion/residual_sum_before_norm.hpp"

#include <algorithm>

namespace inferopt {
namespace {

class residual_sum_pattern final : public pattern<ir::node*> {
 public:
  residual_sum_pattern()
      : pattern("residual-sum-before-norm", pattern_root{{"Add"}, "", 8}, 1, {"declined-read-elsewhere"}) {}

  match_result<ir::node*> match(const ir::graph&, ir::node& add, const pass_context&) const override {
    if (add.inputs().size() != 2 || !add.input(0) || !add.input(1)) return {};
    const ir::value* sum = add.output(0);
    const auto& uses = sum->uses();
    const bool feeds_norm = std::any_of(uses.begin(), uses.end(), [](const ir::use& u) {
      return u.user->is("LayerNormalization") && u.input_index == 0;
    });
    if (!feeds_norm) return {};
    if (uses.size() != 1 || sum->is_graph_output()) return match_result<ir::node*>::declined("declined-read-elsewhere");
    return &add;
  }

  std::int64_t rewrite(ir::graph&, ir::node* const& add, pass_context&) const override {
    add->set_op_type("Sum");
    return 1;
  }
};

}  // namespace

residual_sum_before_norm::residual_sum_before_norm() : pattern_pass(make_patterns<residual_sum_pattern>()) {}

}  // namespace inferopt
