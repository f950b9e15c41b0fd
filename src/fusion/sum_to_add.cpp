#include "inferopt/fusion/sum_to_add.hpp"

namespace inferopt {
namespace {

class sum_to_add_pattern final : public pattern<ir::node*> {
 public:
  // Opset 8 is where Sum started to broadcast like Add.
  sum_to_add_pattern() : pattern("sum-to-add", pattern_root{{"Sum"}, "", 8}) {}

  match_result<ir::node*> match(const ir::graph&, ir::node& sum, const pass_context&) const override {
    if (sum.inputs().size() != 2 || !sum.input(0) || !sum.input(1)) return {};
    return &sum;
  }

  std::int64_t rewrite(ir::graph&, ir::node* const& sum, pass_context&) const override {
    sum->set_op_type("Add");
    return 1;
  }
};

}  // namespace

sum_to_add::sum_to_add() : pattern_pass(make_patterns<sum_to_add_pattern>()) {}

}  // namespace inferopt
