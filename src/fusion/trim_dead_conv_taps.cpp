#include "inferopt/fusion/trim_dead_conv_taps.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt {
namespace {

using ints = std::vector<std::int64_t>;

/// Sizes past this are declined, so that the tap arithmetic below cannot overflow.
constexpr std::int64_t largest_size = std::int64_t{1} << 30;

/// One spatial axis of a Conv: its input size and attributes, and the taps it keeps.
struct conv_axis {
  std::int64_t in = 0, kernel = 0, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;
  std::int64_t first_kept = 0, last_kept = 0;

  [[nodiscard]] std::int64_t out() const {
    return (in + pad_begin + pad_end - ((kernel - 1) * dilation + 1)) / stride + 1;
  }
  /// Whether tap k reads the input, not padding, at some output position o: whether some
  /// o in [0, out) has 0 <= o * stride + k * dilation - pad_begin < in.
  [[nodiscard]] bool tap_reads_input(std::int64_t k) const {
    const std::int64_t at_first_output = k * dilation - pad_begin;
    const std::int64_t o = at_first_output >= 0 ? 0 : (stride - 1 - at_first_output) / stride;
    return o < out() && o * stride + at_first_output < in;
  }
  [[nodiscard]] bool trimmed() const { return first_kept > 0 || last_kept < kernel - 1; }
};

struct trim_match {
  ir::node* conv = nullptr;
  std::vector<conv_axis> axes;
};

bool well_formed(const conv_axis& a) {
  const auto in_range = [](std::int64_t v, std::int64_t lo) { return v >= lo && v <= largest_size; };
  return in_range(a.in, 1) && in_range(a.kernel, 1) && in_range(a.stride, 1) && in_range(a.dilation, 1) &&
         in_range(a.pad_begin, 0) && in_range(a.pad_end, 0) &&
         a.in + a.pad_begin + a.pad_end >= (a.kernel - 1) * a.dilation + 1;
}

/// Chooses the taps `a` keeps: from the first to the last that reads the input, widened
/// where removing more would need a negative pad. False when no tap reads the input.
bool choose_kept_taps(conv_axis& a) {
  std::int64_t first = 0;
  while (first < a.kernel && !a.tap_reads_input(first)) ++first;
  if (first == a.kernel) return false;
  std::int64_t last = a.kernel - 1;
  while (!a.tap_reads_input(last)) --last;
  a.first_kept = std::min(first, a.pad_begin / a.dilation);
  a.last_kept = std::max(last, a.kernel - 1 - a.pad_end / a.dilation);
  return true;
}

/// The Conv's spatial axes, or nullopt when an attribute or shape is missing or malformed.
std::optional<std::vector<conv_axis>> read_axes(const ir::node& conv, const ir::tensor& w) {
  const std::optional<std::size_t> rank = ir::known_rank(conv.input(0));
  if (!rank || *rank != w.dims.size() || *rank < 3) return std::nullopt;
  const std::size_t spatial = *rank - 2;
  const ints ones(spatial, 1);
  const ints strides = conv.attr_ints("strides", ones);
  const ints dilations = conv.attr_ints("dilations", ones);
  const ints pads = conv.attr_ints("pads", ints(2 * spatial, 0));
  const ints kernel = conv.attr_ints("kernel_shape", ints(w.dims.begin() + 2, w.dims.end()));
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial ||
      kernel != ints(w.dims.begin() + 2, w.dims.end())) {
    return std::nullopt;
  }
  std::vector<conv_axis> axes(spatial);
  for (std::size_t i = 0; i < spatial; ++i) {
    const std::optional<std::int64_t> in = ir::static_dim(conv.input(0), i + 2);  // the batch may be symbolic
    if (!in) return std::nullopt;
    axes[i] = {*in, kernel[i], strides[i], dilations[i], pads[i], pads[i + spatial]};
    if (!well_formed(axes[i])) return std::nullopt;
  }
  return axes;
}

match_result<trim_match> find_match(const pass_context& ctx, ir::node& conv) {
  if (conv.inputs().size() < 2 || conv.outputs().size() != 1 || !conv.input(0) || !conv.output(0)) return {};
  if (conv.attr_string("auto_pad", "NOTSET") != "NOTSET") return {};
  const ir::tensor* w = ir::constant_tensor(conv.input(1), ctx.ir_version());
  if (!w || !w->has_data() || ir::element_size(w->dtype) == 0) return {};
  const std::int64_t count = w->element_count();
  if (count <= 0 || w->byte_size() != static_cast<std::size_t>(count) * ir::element_size(w->dtype)) return {};
  std::optional<std::vector<conv_axis>> axes = read_axes(conv, *w);
  if (!axes) return {};
  for (conv_axis& a : *axes) {
    if (!choose_kept_taps(a)) return match_result<trim_match>::declined("declined-all-taps-dead");
  }
  if (std::none_of(axes->begin(), axes->end(), [](const conv_axis& a) { return a.trimmed(); })) return {};
  return trim_match{&conv, std::move(*axes)};
}

/// W with only the kept taps of each spatial axis.
ir::tensor kept_weights(const ir::tensor& w, const std::vector<conv_axis>& axes) {
  const std::size_t rank = w.dims.size();
  ints dims = w.dims;
  ints first(rank, 0);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    dims[i + 2] = axes[i].last_kept - axes[i].first_kept + 1;
    first[i + 2] = axes[i].first_kept;
  }
  ints source_stride(rank, 1);
  for (std::size_t a = rank - 1; a-- > 0;) source_stride[a] = source_stride[a + 1] * w.dims[a + 1];

  const std::size_t bytes_per = ir::element_size(w.dtype);
  const std::int64_t count = ir::tensor::element_count(dims);
  std::string bytes(static_cast<std::size_t>(count) * bytes_per, '\0');
  for (std::int64_t flat = 0; flat < count; ++flat) {
    std::int64_t rest = flat;
    std::int64_t source = 0;
    for (std::size_t a = rank; a-- > 0;) {
      source += (rest % dims[a] + first[a]) * source_stride[a];
      rest /= dims[a];
    }
    std::memcpy(bytes.data() + flat * bytes_per, w.bytes->data() + source * bytes_per, bytes_per);
  }
  ir::tensor out;
  out.dtype = w.dtype;
  out.dims = std::move(dims);
  out.bytes = std::make_shared<const std::string>(std::move(bytes));
  return out;
}

class trim_dead_taps_pattern final : public pattern<trim_match> {
 public:
  trim_dead_taps_pattern() : pattern("trim-dead-conv-taps", pattern_root{{"Conv"}}, 1, {"declined-all-taps-dead"}) {}

  match_result<trim_match> match(const ir::graph&, ir::node& conv, const pass_context& ctx) const override {
    return find_match(ctx, conv);
  }

  std::int64_t rewrite(ir::graph& g, const trim_match& m, pass_context& ctx) const override {
    const ir::tensor* w = ir::constant_tensor(m.conv->input(1), ctx.ir_version());
    ir::replace_constant_input(g, m.conv, 1, kept_weights(*w, m.axes));
    const std::size_t spatial = m.axes.size();
    ints kernel(spatial), dilations(spatial), pads(2 * spatial);
    for (std::size_t i = 0; i < spatial; ++i) {
      const conv_axis& a = m.axes[i];
      kernel[i] = a.last_kept - a.first_kept + 1;
      dilations[i] = kernel[i] == 1 ? 1 : a.dilation;
      pads[i] = a.pad_begin - a.first_kept * a.dilation;
      pads[i + spatial] = a.pad_end - (a.kernel - 1 - a.last_kept) * a.dilation;
    }
    if (m.conv->find_attribute("kernel_shape")) m.conv->set_attribute(ir::attribute::make_ints("kernel_shape", kernel));
    m.conv->set_attribute(ir::attribute::make_ints("dilations", dilations));
    m.conv->set_attribute(ir::attribute::make_ints("pads", pads));
    ctx.count("trimmed-convs");
    return 1;
  }
};

}  // namespace

trim_dead_conv_taps::trim_dead_conv_taps() : pattern_pass(make_patterns<trim_dead_taps_pattern>()) {}

}  // namespace inferopt
