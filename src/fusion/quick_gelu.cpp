#include "quick_gelu.hpp"

#include <cmath>
#include <vector>

#include "fused_activation.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt::fusion::detail {
namespace {

struct quick_gelu_match {
  ir::value* x = nullptr;
  double alpha = 1.0;
  ir::node* scale = nullptr;
  ir::node* sigmoid = nullptr;
  ir::node* product = nullptr;  ///< becomes the QuickGelu
};

bool is_binary(const ir::node* n, const char* op) {
  return n && n->is(op) && n->inputs().size() == 2 && n->outputs().size() == 1 && n->output(0);
}

class quick_gelu_pattern final : public pattern<quick_gelu_match> {
 public:
  explicit quick_gelu_pattern(std::shared_ptr<const gelu_fusion_options> options)
      : pattern("fuse-gelu", pattern_root{{"Sigmoid"}}, 1, {"gelu-fused"}), options_(std::move(options)) {}

  match_result<quick_gelu_match> match(const ir::graph&, ir::node& sigmoid, const pass_context& ctx) const override {
    quick_gelu_match m;
    m.sigmoid = &sigmoid;
    if (!options_->allow_microsoft || sigmoid.inputs().size() != 1 || sigmoid.outputs().size() != 1 || !sigmoid.input(0)) return {};
    m.scale = sigmoid.input(0)->producer();
    m.product = ir::sole_user(sigmoid.output(0));
    if (!is_binary(m.scale, "Mul") || ir::sole_user(sigmoid.input(0)) != &sigmoid || !is_binary(m.product, "Mul")) return {};
    for (std::size_t i = 0; i < 2 && !m.x; ++i) {
      const auto c = ir::constant_floats(m.scale->input(1 - i), ctx.ir_version());
      if (c && c->size() == 1 && std::isfinite((*c)[0])) {
        m.x = m.scale->input(i);
        m.alpha = (*c)[0];
      }
    }
    const ir::value* other = m.product->input(0) == sigmoid.output(0) ? m.product->input(1) : m.product->input(0);
    if (!m.x || other != m.x) return {};
    if (m.x->elem_type() != ir::data_type::float32) return match_result<quick_gelu_match>::declined("declined-type");
    if (!microsoft_opset_usable(ctx)) return match_result<quick_gelu_match>::declined("declined-opset");
    return m;
  }

  std::int64_t rewrite(ir::graph& g, const quick_gelu_match& m, pass_context& ctx) const override {
    ir::node* gelu = m.product;
    g.set_input(gelu, 0, m.x);
    g.set_input(gelu, 1, nullptr);
    g.trim_omitted_inputs(gelu);
    gelu->set_op_type("QuickGelu");
    gelu->set_domain(microsoft_domain);
    gelu->attributes().clear();
    gelu->set_attribute(ir::attribute::make_float("alpha", static_cast<float>(m.alpha)));
    ir::erase_if_unread(g, m.sigmoid);
    ir::erase_if_unread(g, m.scale);
    ctx.require_opset(microsoft_domain, microsoft_opset);
    ctx.count("gelu-fused");
    return 1;
  }

 private:
  std::shared_ptr<const gelu_fusion_options> options_;
};

}  // namespace

std::unique_ptr<rewrite_pattern> make_quick_gelu_pattern(std::shared_ptr<const gelu_fusion_options> options) {
  return std::make_unique<quick_gelu_pattern>(std::move(options));
}

}  // namespace inferopt::fusion::detail
