#include "conv_weights.hpp"

#include <cmath>
#include <limits>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt::fusion::detail {

std::optional<conv_weights> open_conv_weights(const pass_context& ctx, ir::node* conv) {
  if (!conv || conv->is_dead() || !(conv->is("Conv") || conv->is("ConvTranspose"))) return std::nullopt;
  if (conv->inputs().size() < 2 || conv->inputs().size() > 3 || conv->outputs().size() != 1 || !conv->output(0) ||
      !conv->input(0)) {
    return std::nullopt;
  }
  const ir::tensor* w = ir::constant_tensor(conv->input(1), ctx.ir_version());
  if (!w || !ir::is_floating(w->dtype) || w->dims.size() < 3) return std::nullopt;
  // A conv whose input is known to have another element type is malformed; leave it alone.
  const ir::data_type x_type = conv->input(0)->elem_type();
  if (x_type != ir::data_type::undefined && x_type != w->dtype) return std::nullopt;

  conv_weights c;
  c.conv = conv;
  c.weight_tensor = w;
  c.transpose = conv->is("ConvTranspose");
  c.group = conv->attr_int("group", 1);
  if (c.group < 1 || w->dims[0] <= 0 || w->dims[1] <= 0 || w->dims[0] % c.group != 0) return std::nullopt;
  // Conv: W is (C_out, C_in/group, k...); ConvTranspose: W is (C_in, C_out/group, k...).
  c.out_channels = c.transpose ? w->dims[1] * c.group : w->dims[0];

  // What load_weights relies on: W's bytes hold its element count of values (W is floating,
  // so element_size is not 0).
  const std::int64_t count = w->element_count();
  if (count <= 0 || w->byte_size() / ir::element_size(w->dtype) != static_cast<std::size_t>(count)) return std::nullopt;

  if (const ir::value* b = conv->input(2)) {
    const ir::tensor* bt = ir::constant_tensor(b, ctx.ir_version());
    if (!bt || bt->dtype != w->dtype || bt->dims.size() != 1) return std::nullopt;
    std::optional<std::vector<double>> bias = ir::constant_floats(b, ctx.ir_version());
    if (!bias || static_cast<std::int64_t>(bias->size()) != c.out_channels) return std::nullopt;
    c.bias = std::move(*bias);
  } else {
    c.bias.assign(static_cast<std::size_t>(c.out_channels), 0.0);
  }
  return c;
}

void load_weights(const pass_context& ctx, conv_weights& c) {
  if (!c.w.empty()) return;
  c.w = *ir::constant_floats(c.conv->input(1), ctx.ir_version());  // open_conv_weights checked it
}

void scale_output_channels(conv_weights& c, std::span<const double> scale) {
  expects(static_cast<std::int64_t>(scale.size()) == c.out_channels, "scale_output_channels: one scale per channel");
  const std::vector<std::int64_t>& dims = c.weight_tensor->dims;
  const std::size_t rows = static_cast<std::size_t>(dims[0]);
  const std::size_t cols = static_cast<std::size_t>(dims[1]);
  const std::size_t window = c.w.size() / (rows * cols);  // product of the kernel dims
  if (!c.transpose) {
    for (std::size_t o = 0; o < rows; ++o) {
      for (std::size_t k = o * cols * window; k < (o + 1) * cols * window; ++k) c.w[k] *= scale[o];
    }
  } else {
    // Row ci feeds output channels g*(C_out/group) + j, j < C_out/group, of its group g.
    const std::size_t in_per_group = rows / static_cast<std::size_t>(c.group);
    for (std::size_t ci = 0; ci < rows; ++ci) {
      const std::size_t first_out = ci / in_per_group * cols;
      for (std::size_t j = 0; j < cols; ++j) {
        double* block = c.w.data() + (ci * cols + j) * window;
        for (std::size_t k = 0; k < window; ++k) block[k] *= scale[first_out + j];
      }
    }
  }
  for (std::size_t o = 0; o < c.bias.size(); ++o) c.bias[o] *= scale[o];
}

void shift_output_channels(conv_weights& c, std::span<const double> shift) {
  expects(shift.size() == c.bias.size(), "shift_output_channels: one shift per channel");
  for (std::size_t o = 0; o < c.bias.size(); ++o) c.bias[o] += shift[o];
}

namespace {

double largest_finite(ir::data_type t) noexcept {
  switch (t) {
    case ir::data_type::float16: return 65504.0;
    case ir::data_type::bfloat16: return 3.3895313892515355e38;
    case ir::data_type::float32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

}  // namespace

bool fits_weight_type(const conv_weights& c) {
  const double limit = largest_finite(c.weight_tensor->dtype);
  const auto fits = [limit](double x) { return std::isfinite(x) && std::fabs(x) <= limit; };
  for (double x : c.w) {
    if (!fits(x)) return false;
  }
  for (double x : c.bias) {
    if (!fits(x)) return false;
  }
  return true;
}

void commit(ir::graph& g, const conv_weights& c) {
  ir::node* conv = c.conv;
  ir::tensor w = ir::floats_as(*c.weight_tensor, c.weight_tensor->dims, c.w);  // before W changes
  ir::tensor b = ir::floats_as(*c.weight_tensor, {c.out_channels}, c.bias);
  ir::replace_constant_input(g, conv, 1, std::move(w));
  if (conv->input(2)) {
    ir::replace_constant_input(g, conv, 2, std::move(b));
  } else {
    ir::set_constant_input(g, conv, 2, std::move(b), conv->input(1)->name() + "_bias");
  }
}

}  // namespace inferopt::fusion::detail
