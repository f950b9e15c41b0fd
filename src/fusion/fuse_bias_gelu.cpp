#include "inferopt/fusion/fuse_bias_gelu.hpp"

#include <memory>
#include <utility>
#include <vector>

#include "fused_activation.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt {
namespace {

struct bias_gelu_match {
  ir::node* add = nullptr;
  ir::node* gelu = nullptr;
  ir::value* x = nullptr;
  ir::value* bias = nullptr;
  bool tanh = false;
};

/// Whether `n` computes a GELU of its one input, and which form (tanh: FastGelu's).
bool is_gelu(const ir::node& n, bool& tanh) {
  if (n.inputs().size() != 1 || n.outputs().size() != 1) return false;
  if (n.domain() == fusion::detail::microsoft_domain) {
    tanh = n.op_type() == "FastGelu";
    return tanh || n.op_type() == "Gelu";
  }
  if (!n.is_onnx_domain() || !n.is("Gelu")) return false;
  const std::string approximate = n.attr_string("approximate", "none");
  tanh = approximate == "tanh";
  return tanh || approximate == "none";
}

match_result<bias_gelu_match> find_match(const pass_context& ctx, ir::node& gelu) {
  using result = match_result<bias_gelu_match>;
  bias_gelu_match m;
  m.gelu = &gelu;
  if (!is_gelu(gelu, m.tanh) || !gelu.input(0)) return {};
  m.add = gelu.input(0)->producer();
  if (!m.add || !m.add->is("Add") || m.add->inputs().size() != 2 || m.add->outputs().size() != 1) return {};
  for (std::size_t i = 0; i < 2 && !m.x; ++i) {
    const ir::value* x = m.add->input(i);
    const ir::tensor* b = ir::constant_tensor(m.add->input(1 - i), ctx.ir_version());
    const auto last = x && x->type() && x->type()->dims && !x->type()->dims->empty() ? std::optional(x->type()->dims->back())
                                                                                     : std::nullopt;
    if (b && b->dtype == ir::data_type::float32 && last && last->is_static() && b->dims == std::vector<std::int64_t>{last->value()} &&
        x->elem_type() == ir::data_type::float32) {
      m.x = m.add->input(i);
      m.bias = m.add->input(1 - i);
    }
  }
  if (!m.x) return {};  // not a bias Add: nothing to say
  if (ir::sole_user(gelu.input(0)) != &gelu) return result::declined("declined-extra-reader");
  if (!fusion::detail::microsoft_opset_usable(ctx)) return result::declined("declined-opset");
  return m;
}

class bias_gelu_pattern final : public pattern<bias_gelu_match> {
 public:
  explicit bias_gelu_pattern(pattern_root root) : pattern("fuse-bias-gelu", std::move(root), 1, {"bias-gelus-fused"}) {}

  match_result<bias_gelu_match> match(const ir::graph&, ir::node& root, const pass_context& ctx) const override {
    return find_match(ctx, root);
  }

  std::int64_t rewrite(ir::graph& g, const bias_gelu_match& m, pass_context& ctx) const override {
    ir::node* gelu = m.gelu;
    g.set_input(gelu, 0, m.x);
    g.add_node_input(gelu, m.bias);
    gelu->set_op_type(m.tanh ? "FastGelu" : "BiasGelu");
    gelu->set_domain(fusion::detail::microsoft_domain);
    gelu->attributes().clear();
    g.erase(m.add);
    ctx.require_opset(fusion::detail::microsoft_domain, fusion::detail::microsoft_opset);
    ctx.count("bias-gelus-fused");
    return 1;
  }
};

}  // namespace

// One pattern per domain a GELU can come in: ai.onnx's (opset 20) and onnxruntime's.
fuse_bias_gelu::fuse_bias_gelu() : pattern_pass([] {
  std::vector<std::unique_ptr<rewrite_pattern>> patterns;
  patterns.push_back(std::make_unique<bias_gelu_pattern>(pattern_root{{"Gelu"}, "", 20}));
  patterns.push_back(std::make_unique<bias_gelu_pattern>(pattern_root{{"Gelu", "FastGelu"}, fusion::detail::microsoft_domain}));
  return patterns;
}()) {}

}  // namespace inferopt
