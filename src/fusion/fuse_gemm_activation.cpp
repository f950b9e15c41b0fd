#include "inferopt/fusion/fuse_gemm_activation.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

#include "fused_activation.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt {
namespace {

constexpr std::array<std::string_view, 4> gemm_attributes{"alpha", "beta", "transA", "transB"};

struct gemm_match {
  ir::node* gemm = nullptr;
  ir::node* act = nullptr;
  fusion::detail::fused_activation activation;
};

match_result<gemm_match> decline(std::string_view why) { return match_result<gemm_match>::declined(why); }

match_result<gemm_match> find_match(const ir::graph& g, const pass_context& ctx, ir::node* gemm) {
  // 1. a plain Gemm with A, B, [C] and FusedGemm's attributes
  if (!gemm->is("Gemm") || gemm->outputs().size() != 1 || !gemm->output(0) || gemm->inputs().size() < 2 ||
      gemm->inputs().size() > 3 || !gemm->input(0) || !gemm->input(1)) {
    return {};
  }
  for (const ir::attribute& a : gemm->attributes()) {
    if (std::find(gemm_attributes.begin(), gemm_attributes.end(), a.name) == gemm_attributes.end()) {
      return decline("declined-attribute");
    }
  }
  // 2. float32 only (the output's type, or A's when the output carries none)
  ir::data_type type = gemm->output(0)->elem_type();
  if (type == ir::data_type::undefined) type = gemm->input(0)->elem_type();
  if (type != ir::data_type::float32) return decline("declined-type");
  // 3. com.microsoft version 1 can be imported
  if (!fusion::detail::microsoft_opset_usable(ctx)) return decline("declined-opset");
  // 4. one reader, an activation FusedGemm accepts
  ir::value* out = gemm->output(0);
  ir::node* next = ir::sole_user(out);
  if (!next || next->input(0) != out) return decline("declined-no-activation");
  std::optional<fusion::detail::fused_activation> a = fusion::detail::match_fused_activation(ctx, next);
  if (!a) return decline("declined-no-activation");
  if (a->name == "Clip" || a->name == "HardSwish") return decline("declined-activation");
  // 5. the activation's output name can move to the fused node
  if (ir::can_bypass(g, next, 0, 0) != ir::bypass_result::removed) return decline("declined-output-name");
  return gemm_match{gemm, next, std::move(*a)};
}

void apply_match(ir::graph& g, pass_context& ctx, const gemm_match& m) {
  ir::bypass(g, m.act, 0, 0);  // checked in match: cannot decline
  ir::node* gemm = m.gemm;
  gemm->set_op_type("FusedGemm");
  gemm->set_domain(fusion::detail::microsoft_domain);
  gemm->set_attribute(ir::attribute::make_string("activation", m.activation.name));
  // FusedGemm names its parameters instead of listing them.
  if (!m.activation.params.empty()) {
    gemm->set_attribute(ir::attribute::make_float("activation_alpha", m.activation.params[0]));
  }
  if (m.activation.params.size() > 1) {
    gemm->set_attribute(ir::attribute::make_float("activation_beta", m.activation.params[1]));
  }
  ctx.require_opset(fusion::detail::microsoft_domain, fusion::detail::microsoft_opset);
}

class gemm_activation_pattern final : public pattern<gemm_match> {
 public:
  gemm_activation_pattern() : pattern("fuse-gemm-activation", pattern_root{{"Gemm"}}, 1, {"activations-fused"}) {}

  match_result<gemm_match> match(const ir::graph& g, ir::node& root, const pass_context& ctx) const override {
    return find_match(g, ctx, &root);
  }

  std::int64_t rewrite(ir::graph& g, const gemm_match& m, pass_context& ctx) const override {
    apply_match(g, ctx, m);
    ctx.count("activations-fused");
    return 1;
  }
};

}  // namespace

fuse_gemm_activation::fuse_gemm_activation() : pattern_pass(make_patterns<gemm_activation_pattern>()) {}

}  // namespace inferopt
