// Ops that move elements without computing on them: Reshape, Transpose, Concat, Split,
// Slice, Expand, Tile, Pad, Resize. The tracked values of small integer tensors go through
// Reshape, Squeeze, Unsqueeze, Concat and Slice, as shape vectors do in exported graphs.

#include <cmath>

#include "inference_context.hpp"

namespace inferopt::ir::shape_inference_detail {
namespace {

using namespace shape_rules;

/// Output 0 gets new dims and, when still small, input 0's tracked values (same order).
void reshaped(inference_context& ctx, sym_shape dims) {
  value_facts out{ctx.input(0).elem, std::move(dims), ctx.input(0).values};
  if (!trackable(out.elem, *out.dims)) out.values.reset();
  ctx.set_output(0, std::move(out));
}

void reshape(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  std::optional<std::vector<sym_dim>> target;
  if (ctx.opset() < 5) {
    const auto attr = ctx.node().attr_ints("shape", {});
    target = std::vector<sym_dim>(attr.begin(), attr.end());
  } else {
    target = ctx.input(1).values;
  }
  if (!target) {
    const auto rank = ctx.vector_length(1);
    return ctx.set_output_like(0, 0, rank ? std::optional(sym_shape(*rank)) : std::nullopt);
  }
  const bool allowzero = ctx.node().attr_int("allowzero", 0) != 0;
  if (!in) {
    // Without the input's dims, only the entries that are not 0 or -1 are certain.
    sym_shape out = *target;
    for (sym_dim& d : out) d = d.is(0) || d.is(-1) ? sym_dim{} : d;
    return ctx.set_output_like(0, 0, std::move(out));
  }
  reshaped(ctx, reshape_shape<sym_dim>(*in, *target, allowzero));
}

void flatten(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  if (!in) return ctx.set_output_like(0, 0, sym_shape(2));
  reshaped(ctx, flatten_shape<sym_dim>(*in, ctx.node().attr_int("axis", 1)));
}

void squeeze(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  const auto axes = ctx.int_list("axes", 1, 13);
  if (!in || !axes) return ctx.set_output_like(0, 0, std::nullopt);
  // Without axes every 1 goes: the rank depends on dims we may not know.
  const bool all_numbers = std::all_of(in->begin(), in->end(), [](const sym_dim& d) { return d.constant().has_value(); });
  if (axes->empty() && !all_numbers) return ctx.set_output_like(0, 0, std::nullopt);
  reshaped(ctx, squeeze_shape<sym_dim>(*in, *axes));
}

void unsqueeze(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  const auto axes = ctx.int_list("axes", 1, 13);
  if (!in || !axes) return ctx.set_output_like(0, 0, std::nullopt);
  reshaped(ctx, unsqueeze_shape<sym_dim>(*in, *axes));
}

void transpose(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  if (!in) return ctx.set_output_like(0, 0, std::nullopt);
  ctx.set_output_like(0, 0, transpose_shape<sym_dim>(*in, ctx.node().attr_ints("perm", {})));
}

/// Concat: the inputs agree outside the axis and add up along it. With some input shapes
/// unknown, the known ones still fix every dim but the axis (and must agree).
void concat(inference_context& ctx) {
  std::vector<sym_shape> parts;
  bool all_known = true;
  for (std::size_t i = 0; i < ctx.input_count(); ++i) {
    if (ctx.dims(i)) parts.push_back(*ctx.dims(i));
    else all_known = false;
  }
  const std::int64_t axis = ctx.node().attr_int("axis", 0);
  if (!all_known) {
    if (parts.empty()) return ctx.set_output_like(0, 0, std::nullopt);
    sym_shape known = concat_shape<sym_dim>(parts, axis);
    known[static_cast<std::size_t>(normalize_axis(axis, static_cast<std::int64_t>(known.size())))] = sym_dim{};
    return ctx.set_output(0, value_facts{ctx.input(0).elem, std::move(known), std::nullopt});
  }
  value_facts out{ctx.input(0).elem, concat_shape<sym_dim>(parts, axis), std::nullopt};
  if (trackable(out.elem, *out.dims)) {
    std::vector<sym_dim> values;
    for (std::size_t i = 0; i < ctx.input_count() && out.dims->size() == 1; ++i) {
      if (!ctx.input(i).values) return ctx.set_output(0, std::move(out));
      values.insert(values.end(), ctx.input(i).values->begin(), ctx.input(i).values->end());
    }
    if (out.dims->size() == 1) out.values = std::move(values);
  }
  ctx.set_output(0, std::move(out));
}

/// Split: sizes from the attribute (before 13) or input 1, else equal parts (the last one
/// smaller when num_outputs does not divide, from 18).
void split(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  const std::size_t parts = ctx.output_count();
  if (!in) {
    for (std::size_t i = 0; i < parts; ++i) ctx.set_output_like(i, 0, std::nullopt);
    return;
  }
  const std::int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), static_cast<std::int64_t>(in->size()));
  const auto sizes = ctx.int_list("split", 1, 13);
  for (std::size_t i = 0; i < parts; ++i) {
    sym_shape out = *in;
    if (sizes && sizes->size() == parts) {
      out[axis] = (*sizes)[i];
    } else if (sizes && !sizes->empty()) {
      ctx.fail("split has " + std::to_string(sizes->size()) + " sizes for " + std::to_string(parts) + " outputs");
    } else if (!sizes) {
      out[axis] = sym_dim{};
    } else {
      const sym_dim whole = (*in)[axis];
      const sym_dim chunk = ceil_div(whole, sym_dim(static_cast<std::int64_t>(parts)));
      out[axis] = i + 1 < parts ? chunk : whole - chunk * sym_dim(static_cast<std::int64_t>(parts - 1));
    }
    ctx.set_output_like(i, 0, std::move(out));
  }
}

/// Slice bounds: attributes before opset 10, inputs after; a bound may be symbolic.
struct slice_bounds {
  std::vector<sym_dim> starts, ends;
  std::vector<std::int64_t> axes, steps;
};

std::optional<slice_bounds> read_slice(const inference_context& ctx, std::size_t rank) {
  slice_bounds b;
  if (ctx.opset() < 10) {
    for (std::int64_t v : ctx.node().attr_ints("starts", {})) b.starts.emplace_back(v);
    for (std::int64_t v : ctx.node().attr_ints("ends", {})) b.ends.emplace_back(v);
    b.axes = ctx.node().attr_ints("axes", {});
  } else {
    if (!ctx.input(1).values || !ctx.input(2).values) return std::nullopt;
    b.starts = *ctx.input(1).values;
    b.ends = *ctx.input(2).values;
    const auto axes = ctx.int_list("axes", 3, 10);
    const auto steps = ctx.int_list("steps", 4, 10);
    if (!axes || !steps) return std::nullopt;
    b.axes = *axes;
    b.steps = *steps;
  }
  if (b.axes.empty()) b.axes = every_axis(b.starts.size());
  if (b.steps.empty()) b.steps.assign(b.starts.size(), 1);
  if (b.ends.size() != b.starts.size() || b.axes.size() != b.starts.size() || b.steps.size() != b.starts.size()) {
    ctx.fail("starts, ends, axes and steps differ in length");
  }
  for (std::int64_t& a : b.axes) a = normalize_axis(a, static_cast<std::int64_t>(rank));
  return b;
}

void slice(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  if (!in) return ctx.set_output_like(0, 0, std::nullopt);
  const auto bounds = read_slice(ctx, in->size());
  if (!bounds) return ctx.set_output_like(0, 0, sym_shape(in->size()));
  sym_shape out = *in;
  for (std::size_t k = 0; k < bounds->axes.size(); ++k) {
    const std::int64_t a = bounds->axes[k];
    out[a] = slice_dim((*in)[a], bounds->starts[k], bounds->ends[k], bounds->steps[k]);
  }
  value_facts result{ctx.input(0).elem, out, std::nullopt};
  const auto& values = ctx.input(0).values;
  if (values && in->size() == 1 && out[0].constant() && !bounds->starts.empty()) {
    // A slice of a shape vector: the kept elements, when the bounds are numbers.
    const auto start = bounds->starts[0].constant();
    const std::int64_t n = static_cast<std::int64_t>(values->size()), step = bounds->steps[0];
    if (start) {
      std::int64_t s = *start < 0 ? *start + n : *start;
      s = step > 0 ? std::clamp<std::int64_t>(s, 0, n) : std::clamp<std::int64_t>(s, 0, n - 1);
      // Values that disagree with the dims (a hostile value_info) are left untracked.
      std::vector<sym_dim> kept;
      for (std::int64_t i = 0; i < *out[0].constant(); ++i) {
        const __int128 at = static_cast<__int128>(s) + static_cast<__int128>(i) * step;  // a hostile step overflows int64
        if (at < 0 || at >= n) break;
        kept.push_back((*values)[static_cast<std::size_t>(at)]);
      }
      if (static_cast<std::int64_t>(kept.size()) == *out[0].constant()) result.values = std::move(kept);
    }
  }
  ctx.set_output(0, std::move(result));
}

void expand(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  const auto& target = ctx.input(1).values;
  if (!in || !target) {
    const auto rank = ctx.vector_length(1);
    if (in && rank) return ctx.set_output_like(0, 0, sym_shape(std::max<std::size_t>(in->size(), *rank)));
    return ctx.set_output_like(0, 0, std::nullopt);
  }
  ctx.set_output_like(0, 0, broadcast<sym_dim>(*in, *target));
}

void tile(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  const auto& repeats = ctx.input(1).values;
  if (!in) return ctx.set_output_like(0, 0, std::nullopt);
  if (!repeats) return ctx.set_output_like(0, 0, sym_shape(in->size()));
  ctx.set_output_like(0, 0, tile_shape<sym_dim>(*in, *repeats));
}

void pad(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  if (!in) return ctx.set_output_like(0, 0, std::nullopt);
  const auto pad_values = ctx.int_list("pads", 1, 11);
  const auto axes = ctx.int_list("axes", 3, 18);
  if (!pad_values || !axes) return ctx.set_output_like(0, 0, sym_shape(in->size()));
  ctx.set_output_like(0, 0, pad_shape<sym_dim>(*in, *pad_values, *axes));
}

void depth_to_space(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  if (!in) return ctx.set_output_like(0, 0, std::nullopt);
  const bool to_space = ctx.node().op_type() == "DepthToSpace";
  ctx.set_output_like(0, 0, depth_to_space_shape<sym_dim>(*in, ctx.node().attr_int("blocksize", 0), to_space));
}

/// Scales as floats, from a constant input or the attribute.
std::optional<std::vector<double>> float_list(const inference_context& ctx, std::size_t index) {
  const tensor* t = ctx.constant(index);
  if (!t || !t->has_data()) return std::nullopt;
  std::vector<double> out;
  if (t->dtype == data_type::float32) {
    for (float v : t->values<float>()) out.push_back(v);
  } else if (t->dtype == data_type::float64) {
    out = t->values<double>();
  } else {
    return std::nullopt;
  }
  return out;
}

sym_dim scaled(const sym_dim& d, double scale) {
  // 2^62 bounds every real size and keeps the conversion below defined.
  constexpr double largest = 4.6e18;
  if (!std::isfinite(scale) || scale < 0) shape_rules::contradiction("scale " + std::to_string(scale) + " is not a finite non-negative number");
  if (auto c = d.constant()) {
    const double size = std::floor(static_cast<double>(*c) * scale);
    if (size > largest) shape_rules::contradiction("scale " + std::to_string(scale) + " makes a dim beyond any tensor's size");
    return static_cast<std::int64_t>(size);
  }
  if (scale == std::floor(scale) && scale >= 1 && scale <= largest) return d * sym_dim(static_cast<std::int64_t>(scale));
  return sym_dim{};
}

/// Resize-18's keep_aspect_ratio_policy: one scale for every listed axis, the smallest
/// (not_larger) or largest (not_smaller) of sizes/in, and each size round(scale * in).
std::optional<std::vector<std::int64_t>> aspect_kept_sizes(const sym_shape& in, const std::vector<std::int64_t>& axes,
                                                           const std::vector<sym_dim>& sizes, bool not_larger) {
  std::optional<double> scale;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const auto d = in[axes[k]].constant(), want = sizes[k].constant();
    if (!d || !want || *d == 0) return std::nullopt;
    const double s = static_cast<double>(*want) / static_cast<double>(*d);
    scale = !scale ? s : not_larger ? std::min(*scale, s) : std::max(*scale, s);
  }
  std::vector<std::int64_t> out;
  for (std::int64_t a : axes) out.push_back(static_cast<std::int64_t>(std::round(*scale * static_cast<double>(*in[a].constant()))));
  return out;
}

/// Resize and Upsample: `sizes` when given, else floor(dim * scale).
void resize(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  if (!in) return ctx.set_output_like(0, 0, std::nullopt);
  const node& n = ctx.node();
  std::vector<std::int64_t> axes = n.attr_ints("axes", {});
  if (axes.empty()) axes = every_axis(in->size());
  for (std::int64_t& a : axes) a = normalize_axis(a, static_cast<std::int64_t>(in->size()));
  sym_shape out = *in;
  const bool is_upsample = n.op_type() == "Upsample";
  const std::size_t sizes_input = 3, scales_input = is_upsample || ctx.opset() < 11 ? 1 : 2;
  if (!is_upsample && ctx.opset() >= 11 && ctx.has_input(sizes_input) && ctx.dims(sizes_input) &&
      !(ctx.dims(sizes_input)->size() == 1 && (*ctx.dims(sizes_input))[0].is(0))) {
    const auto& sizes = ctx.input(sizes_input).values;
    if (!sizes || sizes->size() != axes.size()) return ctx.set_output_like(0, 0, sym_shape(in->size()));
    const std::string policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (std::size_t k = 0; k < axes.size(); ++k) out[axes[k]] = (*sizes)[k];
    } else {
      for (std::size_t k = 0; k < axes.size(); ++k) out[axes[k]] = sym_dim{};
      if (const auto fixed = aspect_kept_sizes(*in, axes, *sizes, policy == "not_larger")) {
        for (std::size_t k = 0; k < axes.size(); ++k) out[axes[k]] = (*fixed)[k];
      }
    }
    return ctx.set_output_like(0, 0, std::move(out));
  }
  std::optional<std::vector<double>> scales;
  if (is_upsample && ctx.opset() < 9) {
    const attribute* a = n.find_attribute("scales");
    if (a) scales = std::vector<double>(a->floats.begin(), a->floats.end());
  } else {
    scales = float_list(ctx, scales_input);
  }
  if (!scales || scales->size() != axes.size()) return ctx.set_output_like(0, 0, sym_shape(in->size()));
  for (std::size_t k = 0; k < axes.size(); ++k) out[axes[k]] = scaled((*in)[axes[k]], (*scales)[k]);
  ctx.set_output_like(0, 0, std::move(out));
}

/// CenterCropPad: the listed axes take the sizes of input 1.
void center_crop_pad(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  const auto& sizes = ctx.input(1).values;
  if (!in) return ctx.set_output_like(0, 0, std::nullopt);
  std::vector<std::int64_t> axes = ctx.node().attr_ints("axes", {});
  if (axes.empty()) axes = every_axis(in->size());
  if (!sizes || sizes->size() != axes.size()) return ctx.set_output_like(0, 0, sym_shape(in->size()));
  sym_shape out = *in;
  for (std::size_t k = 0; k < axes.size(); ++k) out[normalize_axis(axes[k], static_cast<std::int64_t>(in->size()))] = (*sizes)[k];
  ctx.set_output_like(0, 0, std::move(out));
}

}  // namespace

void register_layout_rules(rule_table& t) {
  t["Reshape"] = reshape;
  t["Flatten"] = flatten;
  t["Squeeze"] = squeeze;
  t["Unsqueeze"] = unsqueeze;
  t["Transpose"] = transpose;
  t["Concat"] = concat;
  t["Split"] = split;
  t["Slice"] = slice;
  t["Expand"] = expand;
  t["Tile"] = tile;
  t["Pad"] = pad;
  t["DepthToSpace"] = depth_to_space;
  t["SpaceToDepth"] = depth_to_space;
  t["Resize"] = resize;
  t["Upsample"] = resize;
  t["CenterCropPad"] = center_crop_pad;
}

}  // namespace inferopt::ir::shape_inference_detail
