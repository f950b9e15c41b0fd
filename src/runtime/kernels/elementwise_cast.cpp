// Cast, CastLike, Identity and Dropout (inference form).
//
// Cast converts between every numeric type, bool, float16 and bfloat16:
//  - to the 16-bit floats rounds to nearest even, in one rounding: double goes through a
//    round-to-odd float, so no value rounds twice. The exception is bfloat16 before opset 19:
//    ONNX's reference (and the backend test data of opset 13) truncated then, and only moved
//    to round-to-nearest-even with opset 19, so Cast and CastLike below 19 truncate;
//  - float to integer truncates toward zero; NaN becomes 0 and out-of-range values saturate
//    (ONNX leaves both undefined);
//  - integer to narrower integer wraps (two's complement), as numpy and C++20 do;
//  - to bool is `!= 0` (NaN is true), from bool gives 0 or 1.
// Strings, float8 and 4-bit types are unsupported.

#include <bit>
#include <cmath>

#include "elementwise_common.hpp"

namespace inferopt::runtime::elementwise {

namespace {

/// The float nearest `d` with round-to-odd: rounding that float once more (to half or
/// bfloat16, which keep far fewer than 24 - 2 bits) gives the correctly rounded result of d.
inline float round_to_odd_float(double d) noexcept {
  float f = static_cast<float>(d);
  if (std::isfinite(f) && static_cast<double>(f) != d) {
    auto bits = std::bit_cast<std::uint32_t>(f);
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) --bits;  // truncate toward zero
    f = std::bit_cast<float>(bits | 1u);
  }
  return f;
}

/// bfloat16 by truncation, as Cast produced it before opset 19 (NaN stays a quiet NaN).
struct bfloat_truncated : bfloat {
  static std::uint16_t store(float x) noexcept {
    const auto bits = std::bit_cast<std::uint32_t>(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
    return static_cast<std::uint16_t>(bits >> 16);
  }
};

template <class From, class To>
struct convert {
  using in_t = typename From::value;
  using out_t = typename To::value;
  out_t operator()(in_t v) const {
    if constexpr (std::is_same_v<To, boolean>) {
      return v != in_t(0);
    } else if constexpr (std::is_same_v<From, boolean>) {
      return v ? out_t(1) : out_t(0);
    } else if constexpr (std::is_floating_point_v<out_t>) {
      if constexpr ((std::is_same_v<in_t, double> ||
                     std::is_integral_v<in_t>)&&!std::is_same_v<typename To::storage, out_t>) {
        return round_to_odd_float(static_cast<double>(v));  // to half / bfloat16 in one rounding
      } else {
        return static_cast<out_t>(v);
      }
    } else if constexpr (std::is_floating_point_v<in_t>) {
      return float_to_integer<out_t>(static_cast<double>(v));
    } else {
      return static_cast<out_t>(v);
    }
  }
};

/// Converts `x` into a new output of type `to`; the same type is passed through uncopied.
void cast_to(kernel_context& ctx, const tensor& x, data_type to, bool truncate_bfloat16) {
  if (x.dtype() == to) {
    ctx.set_output(0, x);
    return;
  }
  dispatch<all_types>(ctx, x.dtype(), [&](auto f) {
    using From = decltype(f);
    if (to == data_type::bfloat16 && truncate_bfloat16) {
      tensor& y = ctx.allocate_output(0, to, x.shape());
      unary_map<From, bfloat_truncated>(ctx.threads(), x, y, convert<From, bfloat_truncated>{});
      return;
    }
    dispatch<all_types>(ctx, to, [&](auto t) {
      using To = decltype(t);
      tensor& y = ctx.allocate_output(0, To::type, x.shape());
      unary_map<From, To>(ctx.threads(), x, y, convert<From, To>{});
    });
  });
}

class cast_kernel final : public kernel {
 public:
  explicit cast_kernel(const kernel_build_info& info) : truncate_bfloat16_(info.opset < 19) {
    const ir::attribute* a = info.node.find_attribute("to");
    if (!a || a->kind != ir::attribute_kind::i) info.fail("needs an int attribute 'to'");
    if (a->i <= 0 || a->i > INT32_MAX) info.fail("attribute 'to' is not an element type: " + std::to_string(a->i));
    to_ = static_cast<data_type>(a->i);  // numbers past int4 are types of newer ONNX: unsupported below
    if (!contains<all_types>(to_)) {
      info.unsupported("cast to " + std::string(ir::to_string(to_)) + " (type " + std::to_string(a->i) +
                       ") is not supported");
    }
  }
  void compute(kernel_context& ctx) override { cast_to(ctx, ctx.input(0), to_, truncate_bfloat16_); }

 private:
  data_type to_;
  bool truncate_bfloat16_;
};

/// Cast to the element type of the second input.
class cast_like_kernel final : public kernel {
 public:
  explicit cast_like_kernel(const kernel_build_info& info) : truncate_bfloat16_(info.opset < 19) {}
  void compute(kernel_context& ctx) override { cast_to(ctx, ctx.input(0), ctx.input(1).dtype(), truncate_bfloat16_); }

 private:
  bool truncate_bfloat16_;
};

class identity_kernel final : public kernel {
 public:
  explicit identity_kernel(const kernel_build_info&) {}
  void compute(kernel_context& ctx) override { ctx.set_output(0, ctx.input(0)); }
};

/// Inference dropout: output = input, mask all true (1 of the input type before opset 10).
/// Training mode (opset 12 on) is random unless the ratio is 0, where it is the identity too.
class dropout_kernel final : public kernel {
 public:
  explicit dropout_kernel(const kernel_build_info& info) : opset_(info.opset) {
    const float ratio = info.node.attr_float("ratio", 0.5f);
    if (opset_ < 12 && !(ratio >= 0.0f && ratio < 1.0f)) info.fail("attribute 'ratio' must be in [0, 1)");
  }
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    if (opset_ >= 12 && ctx.has_input(2)) {
      const tensor& mode = ctx.input(2);
      if (mode.dtype() != data_type::boolean || mode.element_count() != 1)
        ctx.fail("training_mode must be a bool scalar");
      const bool training = mode.data<std::uint8_t>()[0] != 0;
      float ratio = 0.5f;
      if (ctx.has_input(1)) {
        const tensor& r = ctx.input(1);
        if (r.element_count() != 1) ctx.fail("ratio must be a scalar");
        ratio = r.to_float()[0];
      }
      if (training && ratio != 0.0f) ctx.unsupported("training mode (random dropout) is not supported");
    }
    ctx.set_output(0, x);
    if (!ctx.wants_output(1)) return;
    if (opset_ >= 10) {
      tensor& mask = ctx.allocate_output(1, data_type::boolean, x.shape());
      std::fill_n(mask.mutable_data<std::uint8_t>(), mask.element_count(), std::uint8_t{1});
      return;
    }
    dispatch<float_types>(ctx, x.dtype(), [&](auto e) {
      using E = decltype(e);
      tensor& mask = ctx.allocate_output(1, E::type, x.shape());
      std::fill_n(mask.mutable_data<typename E::storage>(), mask.element_count(), E::store(1));
    });
  }

 private:
  std::int64_t opset_;
};

}  // namespace

void register_cast_kernels(kernel_registry& r) {
  add(r, "Cast", factory<cast_kernel>(), 6);
  add(r, "CastLike", factory<cast_like_kernel>(), 15);
  add(r, "Identity", factory<identity_kernel>(), 1);
  add(r, "Dropout", factory<dropout_kernel>(), 7);
}

}  // namespace inferopt::runtime::elementwise
