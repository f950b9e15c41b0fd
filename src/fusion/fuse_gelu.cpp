#include "inferopt/fusion/fuse_gelu.hpp"

#include <cmath>
#include <numbers>
#include <optional>
#include <vector>

#include "fused_activation.hpp"
#include "two_way_option.hpp"
#include "quick_gelu.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt {
namespace {

/// A chain found: x, the nodes to erase (readers after producers) and the node that becomes
/// the Gelu.
struct gelu_match {
  ir::value* x = nullptr;
  std::vector<ir::node*> erased;
  ir::node* last = nullptr;
  bool tanh = false;
};

/// Reads the chain; every step either finds its node or says why not.
class chain_reader {
 public:
  explicit chain_reader(const pass_context& ctx) : ctx_(ctx) {}

  /// Whether `v` is a one-element constant equal to `expected` (condition 1).
  [[nodiscard]] bool is_number(const ir::value* v, double expected) const {
    const auto values = ir::constant_floats(v, ctx_.ir_version());
    return values && values->size() == 1 && std::abs((*values)[0] - expected) <= 1e-5 * std::abs(expected);
  }

  /// `n` as a default-domain binary `op` with one output: the operand that is not `known`
  /// (which must be one of them), or null.
  static ir::value* other_operand(const ir::node* n, const char* op, const ir::value* known) {
    if (!n || !n->is(op) || n->inputs().size() != 2 || n->outputs().size() != 1 || !n->output(0)) return nullptr;
    if (n->input(0) == known) return n->input(1);
    if (n->input(1) == known) return n->input(0);
    return nullptr;
  }

  /// The reader of `v` when it is `v`'s only one (condition 3), else null.
  static ir::node* next(const ir::value* v) { return ir::sole_user(v); }

  /// `n` = Mul(v, c) or Mul(c, v) with c == `expected`: the operand v, else null.
  [[nodiscard]] ir::value* scaled_by(const ir::node* n, double expected) const {
    if (!n || !n->is("Mul") || n->inputs().size() != 2 || n->outputs().size() != 1) return nullptr;
    if (is_number(n->input(1), expected)) return n->input(0);
    if (is_number(n->input(0), expected)) return n->input(1);
    return nullptr;
  }

 private:
  const pass_context& ctx_;
};

/// From Add(inner, 1) on (`add_one` reads `inner`): 0.5 * x * a in one of its three
/// associations. Fills `erased` and `last`; false when the tail is not there.
bool read_tail(const chain_reader& r, const ir::value* inner, ir::node* add_one, ir::value* x, gelu_match& m) {
  if (!r.is_number(chain_reader::other_operand(add_one, "Add", inner), 1.0)) return false;
  ir::value* a = add_one->output(0);
  ir::node* first = chain_reader::next(a);
  if (!first) return false;
  m.erased.push_back(add_one);
  // Mul(Mul(x, a), 0.5): x times a first.
  if (chain_reader::other_operand(first, "Mul", a) == x) {
    ir::node* second = chain_reader::next(first->output(0));
    if (!r.scaled_by(second, 0.5)) return false;
    m.erased.push_back(first);
    m.last = second;
    return true;
  }
  // Mul(x, Mul(a, 0.5)): a halved first.
  if (r.scaled_by(first, 0.5) == a) {
    ir::node* second = chain_reader::next(first->output(0));
    if (chain_reader::other_operand(second, "Mul", first->output(0)) != x) return false;
    m.erased.push_back(first);
    m.last = second;
    return true;
  }
  // Mul(Mul(x, 0.5), a): x halved on its own.
  ir::value* half_x = chain_reader::other_operand(first, "Mul", a);
  if (!half_x || chain_reader::next(half_x) != first || !half_x->producer() || r.scaled_by(half_x->producer(), 0.5) != x) {
    return false;
  }
  m.erased.push_back(half_x->producer());
  m.last = first;
  return true;
}

/// Erf(Div(x, sqrt 2)) or Erf(Mul(x, 1/sqrt 2)), then the tail.
std::optional<gelu_match> read_erf_form(const chain_reader& r, ir::node& erf) {
  if (erf.inputs().size() != 1 || erf.outputs().size() != 1 || !erf.input(0)) return std::nullopt;
  ir::node* scale = erf.input(0)->producer();
  if (!scale || chain_reader::next(erf.input(0)) != &erf) return std::nullopt;
  ir::value* x = r.scaled_by(scale, 1 / std::numbers::sqrt2);
  if (!x && scale->is("Div") && scale->inputs().size() == 2 && r.is_number(scale->input(1), std::numbers::sqrt2)) {
    x = scale->input(0);
  }
  ir::node* add_one = chain_reader::next(erf.output(0));
  if (!x || !add_one) return std::nullopt;
  gelu_match m{x, {scale, &erf}, nullptr, false};
  if (!read_tail(r, erf.output(0), add_one, x, m)) return std::nullopt;
  return m;
}

/// x^3 as Pow(x, 3) or Mul(x, Mul(x, x)) (either order): x and the nodes, else nullopt.
std::optional<std::pair<ir::value*, std::vector<ir::node*>>> read_cube(const chain_reader& r, ir::value* cube) {
  ir::node* n = cube ? cube->producer() : nullptr;
  if (!n || chain_reader::next(cube) == nullptr || n->outputs().size() != 1) return std::nullopt;
  if (n->is("Pow") && n->inputs().size() == 2 && r.is_number(n->input(1), 3.0)) {
    return std::pair{n->input(0), std::vector<ir::node*>{n}};
  }
  if (!n->is("Mul") || n->inputs().size() != 2) return std::nullopt;
  for (std::size_t k = 0; k < 2; ++k) {
    ir::value* x = n->input(k);
    ir::node* square = n->input(1 - k) ? n->input(1 - k)->producer() : nullptr;
    if (square && square->is("Mul") && square->inputs().size() == 2 && square->input(0) == x && square->input(1) == x &&
        chain_reader::next(square->output(0)) == n) {
      return std::pair{x, std::vector<ir::node*>{square, n}};
    }
  }
  return std::nullopt;
}

/// Tanh(Mul(sqrt(2/pi), Add(x, Mul(0.044715, x^3)))), then the tail.
std::optional<gelu_match> read_tanh_form(const chain_reader& r, ir::node& tanh) {
  if (tanh.inputs().size() != 1 || tanh.outputs().size() != 1 || !tanh.input(0)) return std::nullopt;
  constexpr double sqrt_2_over_pi = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;
  ir::node* outer = tanh.input(0)->producer();
  if (chain_reader::next(tanh.input(0)) != &tanh) return std::nullopt;
  ir::value* sum = r.scaled_by(outer, sqrt_2_over_pi);
  ir::node* add = sum ? sum->producer() : nullptr;
  if (!add || chain_reader::next(sum) != outer || !add->is("Add") || add->inputs().size() != 2) return std::nullopt;
  for (std::size_t k = 0; k < 2; ++k) {
    ir::value* term = add->input(1 - k);
    ir::node* times = term ? term->producer() : nullptr;
    ir::value* cube = r.scaled_by(times, 0.044715);
    if (!cube || chain_reader::next(term) != add) continue;
    const auto found = read_cube(r, cube);
    if (!found || found->first != add->input(k)) continue;
    gelu_match m{found->first, found->second, nullptr, true};
    m.erased.insert(m.erased.end(), {times, add, outer, &tanh});
    ir::node* add_one = chain_reader::next(tanh.output(0));
    if (!add_one || !read_tail(r, tanh.output(0), add_one, m.x, m)) return std::nullopt;
    return m;
  }
  return std::nullopt;
}

/// Condition 4: which op the model can take; null when none.
const char* target_domain(const pass_context& ctx, const gelu_fusion_options& options) {
  if (ctx.onnx_opset() >= 20) return "";
  if (options.allow_microsoft && fusion::detail::microsoft_opset_usable(ctx)) return fusion::detail::microsoft_domain;
  return nullptr;
}

class gelu_pattern final : public pattern<gelu_match> {
 public:
  explicit gelu_pattern(std::shared_ptr<const gelu_fusion_options> options)
      : pattern("fuse-gelu", pattern_root{{"Erf", "Tanh"}}, 1, {"gelu-fused"}), options_(std::move(options)) {}

  match_result<gelu_match> match(const ir::graph&, ir::node& root, const pass_context& ctx) const override {
    const chain_reader r(ctx);
    std::optional<gelu_match> m = root.is("Erf") ? read_erf_form(r, root) : read_tanh_form(r, root);
    if (!m) return {};
    if (!ir::is_floating(m->x->elem_type())) return match_result<gelu_match>::declined("declined-type");
    if (!target_domain(ctx, *options_)) return match_result<gelu_match>::declined("declined-opset");
    return *m;
  }

  std::int64_t rewrite(ir::graph& g, const gelu_match& m, pass_context& ctx) const override {
    const std::string domain = target_domain(ctx, *options_);
    ir::node* gelu = m.last;
    g.set_input(gelu, 0, m.x);
    g.set_input(gelu, 1, nullptr);
    g.trim_omitted_inputs(gelu);
    gelu->attributes().clear();
    gelu->set_domain(domain);
    if (domain.empty()) {
      gelu->set_op_type("Gelu");
      if (m.tanh) gelu->set_attribute(ir::attribute::make_string("approximate", "tanh"));
    } else {
      gelu->set_op_type(m.tanh ? "FastGelu" : "Gelu");
      ctx.require_opset(fusion::detail::microsoft_domain, fusion::detail::microsoft_opset);
    }
    for (auto it = m.erased.rbegin(); it != m.erased.rend(); ++it) ir::erase_if_unread(g, *it);
    ctx.count("gelu-fused");
    return 1;
  }

 private:
  std::shared_ptr<const gelu_fusion_options> options_;
};

}  // namespace

fuse_gelu::fuse_gelu() : fuse_gelu(std::make_shared<gelu_fusion_options>()) {}

fuse_gelu::fuse_gelu(std::shared_ptr<gelu_fusion_options> options)
    : pattern_pass([&] {
        std::vector<std::unique_ptr<rewrite_pattern>> patterns;
        patterns.push_back(std::make_unique<gelu_pattern>(options));
        patterns.push_back(fusion::detail::make_quick_gelu_pattern(options));
        return patterns;
      }()),
      options_(std::move(options)) {}

namespace {
constexpr fusion::detail::two_way_option fuse_gelu_option{"domain", "ai.onnx", "com.microsoft"};
}  // namespace

void fuse_gelu::set_option(std::string_view key, std::string_view value) {
  fuse_gelu_option.set(name(), key, value, options_->allow_microsoft);
}

std::map<std::string, std::string> fuse_gelu::options() const { return fuse_gelu_option.text(options_->allow_microsoft); }

}  // namespace inferopt
