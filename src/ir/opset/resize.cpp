// Upsample and Resize.
//   7   Upsample's height_scale and width_scale become `scales` (1, 1, h, w); "bilinear" is
//       called "linear".
//   9   Upsample's scales move to input 1.
//   10  Upsample is deprecated for Resize, which has the same inputs and modes (replaced_ops.cpp).
//   11  Resize gains roi (input 1) and sizes (input 3), and the coordinate and rounding
//       attributes. Resize-10 mapped coordinates asymmetrically and, for nearest, truncated
//       when upsampling and rounded up when downsampling, so going up writes
//       coordinate_transformation_mode=asymmetric and the nearest_mode the constant scales
//       call for (floor for scales >= 1, ceil for scales <= 1); mixed scales are refused.
//       roi becomes an empty tensor, which only tf_crop_and_resize reads.
//   13  roi and scales become optional; tf_half_pixel_for_nn goes (attribute_changes.hpp).
//
//   before (9):  y = Upsample(x, scales) mode=nearest
//   after (13):  y = Resize(x, roi=[], scales) mode=nearest coordinate_transformation_mode=asymmetric nearest_mode=floor

#include <algorithm>

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class upsample_scales_attribute_adapter final : public adapter {
 public:
  upsample_scales_attribute_adapter() : adapter("upsample-scales-attribute") {}

  bool up(step_context& ctx) const override {
    const attribute* h = ctx.n->find_attribute("height_scale");
    const attribute* w = ctx.n->find_attribute("width_scale");
    if (!h || !w) return false;
    ctx.n->set_attribute(attribute::make_floats("scales", {1.0f, 1.0f, h->f, w->f}));
    ctx.n->remove_attribute("height_scale");
    ctx.n->remove_attribute("width_scale");
    if (ctx.n->attr_string("mode", "nearest") == "bilinear") ctx.n->set_attribute(attribute::make_string("mode", "linear"));
    return true;
  }
};

class upsample_scales_to_input_adapter final : public adapter {
 public:
  upsample_scales_to_input_adapter() : adapter("upsample-scales-to-input") {}

  bool up(step_context& ctx) const override {
    const attribute* scales = ctx.n->find_attribute("scales");
    if (!scales || scales->kind != attribute_kind::floats) ctx.refuse("attribute 'scales' is required before opset 9");
    const std::vector<float> values = scales->floats;
    ctx.g.set_input(ctx.n, 1,
                    ctx.add_constant(tensor::from_values<float>({}, {static_cast<std::int64_t>(values.size())}, values),
                                     "scales"));
    ctx.n->remove_attribute("scales");
    return true;
  }

  bool down(step_context& ctx) const override {
    const std::vector<double> scales = ctx.attribute_floats(1);
    ctx.rebuild("Upsample", {ctx.n->input(0)}, 1);
    ctx.n->set_attribute(attribute::make_floats("scales", std::vector<float>(scales.begin(), scales.end())));
    return true;
  }
};

/// The nearest_mode that rounds as Resize-10 did for these scales, or empty when they mix
/// upsampling and downsampling.
std::string legacy_rounding(const std::vector<double>& scales) {
  const bool up = std::all_of(scales.begin(), scales.end(), [](double s) { return s >= 1.0; });
  const bool down = std::all_of(scales.begin(), scales.end(), [](double s) { return s <= 1.0; });
  return up ? "floor" : down ? "ceil" : "";
}

class resize_roi_and_modes_adapter final : public adapter {
 public:
  resize_roi_and_modes_adapter() : adapter("resize-roi-and-modes") {}

  bool up(step_context& ctx) const override {
    if (ctx.n->attr_string("mode", "nearest") == "nearest") {
      const std::optional<std::vector<double>> scales = ctx.constant_floats(ctx.n->input(1));
      if (!scales) ctx.refuse("nearest mode needs constant scales to keep its rounding from opset 11");
      const std::string rule = legacy_rounding(*scales);
      if (rule.empty()) ctx.refuse("scales that both up- and downsample round differently from opset 11");
      ctx.n->set_attribute(attribute::make_string("nearest_mode", rule));
    }
    ctx.n->set_attribute(attribute::make_string("coordinate_transformation_mode", "asymmetric"));
    value* roi = ctx.add_constant(tensor::from_values<float>({}, {0}, std::vector<float>{}), "roi");
    ctx.rebuild("Resize", {ctx.n->input(0), roi, ctx.n->input(1)}, 1);
    return true;
  }

  bool down(step_context& ctx) const override {
    if (ctx.n->input(3)) ctx.refuse("sizes has no form before opset 11");
    if (ctx.n->attr_string("coordinate_transformation_mode", "half_pixel") != "asymmetric") {
      ctx.refuse("coordinate_transformation_mode other than asymmetric has no form before opset 11");
    }
    if (ctx.n->attr_int("exclude_outside", 0) != 0) ctx.refuse("exclude_outside has no form before opset 11");
    const std::string mode = ctx.n->attr_string("mode", "nearest");
    if (mode != "nearest" && mode != "linear") ctx.refuse("mode '" + mode + "' has no form before opset 11");
    if (mode == "nearest") {
      const std::vector<double> scales = ctx.attribute_floats(2);
      const std::string rule = ctx.n->attr_string("nearest_mode", "round_prefer_floor");
      const bool identity = std::all_of(scales.begin(), scales.end(), [](double s) { return s == 1.0; });
      if (!identity && rule != legacy_rounding(scales)) {
        ctx.refuse("nearest_mode '" + rule + "' rounds differently from Resize before opset 11");
      }
    }
    for (const char* a : {"coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                          "extrapolation_value"}) {
      ctx.n->remove_attribute(a);
    }
    ctx.rebuild("Resize", {ctx.n->input(0), ctx.n->input(2)}, 1);
    return true;
  }
};

class resize_optional_inputs_adapter final : public adapter {
 public:
  resize_optional_inputs_adapter() : adapter("resize-optional-inputs") {}

  bool down(step_context& ctx) const override {
    bool changed = false;
    for (std::size_t i : {std::size_t{1}, std::size_t{2}}) {
      if (ctx.n->input(i)) continue;
      ctx.g.set_input(ctx.n, i, ctx.add_constant(tensor::from_values<float>({}, {0}, std::vector<float>{}),
                                                  i == 1 ? "roi" : "scales"));
      changed = true;
    }
    return changed;
  }
};

}  // namespace

const adapter& upsample_scales_attribute() { return instance<upsample_scales_attribute_adapter>(); }

const adapter& upsample_scales_to_input() { return instance<upsample_scales_to_input_adapter>(); }

const adapter& resize_roi_and_modes() { return instance<resize_roi_and_modes_adapter>(); }

const adapter& resize_optional_inputs() { return instance<resize_optional_inputs_adapter>(); }

}  // namespace inferopt::ir::opset
