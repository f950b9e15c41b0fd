#include "inferopt/fusion/fuse_conv_mul_add.hpp"

#include <optional>
#include <string_view>
#include <vector>

#include "conv_weights.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt {
namespace {

/// An arithmetic node found after a conv and the conv's folded weights. Building it edits
/// nothing.
struct arithmetic_match {
  ir::node* op = nullptr;
  fusion::detail::conv_weights folded;
  std::size_t conv_slot = 0;  // the op's input the conv feeds
};

match_result<arithmetic_match> decline(std::string_view why) {
  return match_result<arithmetic_match>::declined(why);
}

/// The output axis that dim 0 of the constant lines up with, under the opset's broadcasting
/// of Mul/Add/Sub/Div; nullopt when that broadcasting does not apply (condition 4).
std::optional<std::int64_t> first_aligned_axis(const ir::node* op, std::size_t conv_slot, std::int64_t constant_rank,
                                               std::int64_t output_rank, std::int64_t opset) {
  if (opset >= 7) return output_rank - constant_rank;  // numpy: right-aligned
  // Opsets 1-6 broadcast only B (the second operand) and only when `broadcast` is set; `axis`
  // names where B starts, right-aligned without it.
  if (conv_slot != 0 || op->attr_int("broadcast", 0) == 0) return std::nullopt;
  if (!op->find_attribute("axis")) return output_rank - constant_rank;
  const std::int64_t axis = op->attr_int("axis", 0);
  return axis < 0 ? axis + output_rank : axis;
}

/// The constant's value for each output channel, or nullopt when it varies along any other
/// axis or would enlarge the output (condition 4).
std::optional<std::vector<double>> per_channel(const ir::tensor& t, std::vector<double> values, std::int64_t start,
                                               std::int64_t output_rank, std::int64_t channels) {
  const std::int64_t rank = static_cast<std::int64_t>(t.dims.size());
  if (start < 0 || start + rank > output_rank) return std::nullopt;
  bool varies = false;
  for (std::int64_t k = 0; k < rank; ++k) {
    const std::int64_t d = t.dims[static_cast<std::size_t>(k)];
    if (d == 1) continue;
    if (start + k != 1 || d != channels) return std::nullopt;
    varies = true;
  }
  const std::size_t expected = varies ? static_cast<std::size_t>(channels) : 1;
  if (values.size() != expected) return std::nullopt;
  if (!varies) values.assign(static_cast<std::size_t>(channels), values.front());
  return values;
}

match_result<arithmetic_match> find_match(const ir::graph& g, const pass_context& ctx, ir::node* conv) {
  // Condition 2 before 1, as in fuse-conv-bn: both fail silently, and reading the weights is
  // the expensive part.
  ir::node* op = ir::sole_user(conv->output(0));  // condition 2
  if (!op || !(op->is("Mul") || op->is("Add") || op->is("Sub") || op->is("Div"))) return {};
  std::optional<fusion::detail::conv_weights> c = fusion::detail::open_conv_weights(ctx, conv);  // condition 1
  if (!c) return {};
  if (op->inputs().size() != 2 || op->outputs().size() != 1 || !op->output(0)) return decline("declined-malformed");
  const std::size_t conv_slot = op->input(0) == conv->output(0) ? 0 : 1;
  const bool commutes = op->is("Mul") || op->is("Add");
  if (conv_slot != 0 && !commutes) return decline("declined-operand-order");

  const ir::value* operand = op->input(1 - conv_slot);  // condition 3
  const ir::tensor* t = ir::constant_tensor(operand, ctx.ir_version());
  if (!t || t->dtype != c->weight_tensor->dtype) return decline("declined-operand");
  std::optional<std::vector<double>> values = ir::constant_floats(operand, ctx.ir_version());
  if (!values) return decline("declined-operand");

  const auto output_rank = static_cast<std::int64_t>(c->output_rank());  // condition 4
  const std::optional<std::int64_t> start =
      first_aligned_axis(op, conv_slot, static_cast<std::int64_t>(t->dims.size()), output_rank, ctx.onnx_opset());
  if (!start) return decline("declined-broadcast");
  std::optional<std::vector<double>> k = per_channel(*t, std::move(*values), *start, output_rank, c->out_channels);
  if (!k) return decline("declined-broadcast");

  fusion::detail::load_weights(ctx, *c);
  if (op->is("Mul")) {
    fusion::detail::scale_output_channels(*c, *k);
  } else if (op->is("Div")) {
    for (double& x : *k) {
      if (x == 0.0) return decline("declined-division-by-zero");  // condition 5
      x = 1.0 / x;
    }
    fusion::detail::scale_output_channels(*c, *k);
  } else {
    if (op->is("Sub")) {
      for (double& x : *k) x = -x;
    }
    fusion::detail::shift_output_channels(*c, *k);
  }
  if (!fusion::detail::fits_weight_type(*c)) return decline("declined-overflow");
  if (ir::can_bypass(g, op, conv_slot) != ir::bypass_result::removed) return decline("declined-output-name");  // 6
  return arithmetic_match{op, std::move(*c), conv_slot};
}

/// `muls-folded`, `adds-folded`, ...: one statistic per op type.
std::string folded_statistic(const ir::node* op) {
  std::string name;
  for (char ch : op->op_type()) name += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  return name + "s-folded";
}

/// Each fold leaves the conv feeding the next op of a chain; the driver tries the conv again.
class conv_mul_add_pattern final : public pattern<arithmetic_match> {
 public:
  conv_mul_add_pattern() : pattern("fuse-conv-mul-add", pattern_root{{"Conv", "ConvTranspose"}}) {}

  match_result<arithmetic_match> match(const ir::graph& g, ir::node& conv, const pass_context& ctx) const override {
    return find_match(g, ctx, &conv);
  }

  std::int64_t rewrite(ir::graph& g, const arithmetic_match& m, pass_context& ctx) const override {
    const std::string statistic = folded_statistic(m.op);  // before the bypass erases the op
    ir::bypass(g, m.op, m.conv_slot);
    fusion::detail::commit(g, m.folded);
    ctx.count(statistic);
    return 1;
  }
};

}  // namespace

fuse_conv_mul_add::fuse_conv_mul_add() : pattern_pass(make_patterns<conv_mul_add_pattern>()) {}

}  // namespace inferopt
