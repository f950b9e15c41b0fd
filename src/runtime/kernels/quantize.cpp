// QuantizeLinear and DequantizeLinear (opsets 10, 13, 19 and 21), per tensor or per axis, and
// DynamicQuantizeLinear (opset 11), which computes its uint8 scale and zero point from x.
//
//   quantize:   y = saturate(round_half_even(x / scale) + zero_point)
//   dequantize: y = (x - zero_point) * scale
//
// Quantized types: int8, uint8, int16, uint16 (and int32 as a Dequantize input); the zero
// point is optional (0, and uint8 output for Quantize unless `output_dtype` says otherwise).
// x / scale is computed in float as the reference does (double for int32 x), then rounded
// half to even; NaN quantizes to the lowest value of the output type. float8, 4-bit types
// and blocked quantization (block_size > 0) are unsupported.

#include <cmath>

#include "elementwise_common.hpp"

namespace inferopt::runtime {

namespace {

using namespace elementwise;

using quantized_types =
    type_list<native<std::int8_t>, native<std::uint8_t>, native<std::int16_t>, native<std::uint16_t>>;
using dequantize_input_types = concat<quantized_types, type_list<native<std::int32_t>>>;
using scale_types = type_list<native<float>, half, bfloat>;
using quantize_input_types = type_list<native<float>, half, bfloat, native<std::int32_t>>;

/// x viewed as [outer, channels, inner] with one scale and zero point per channel (one
/// channel for per-tensor quantization).
struct channel_params {
  std::int64_t outer = 1;
  std::int64_t channels = 1;
  std::int64_t inner = 1;
  std::vector<float> scale;
  std::vector<float> zero;
};

channel_params layout(const kernel_context& ctx, const tensor& x, const tensor& scale, const tensor* zero_point,
                      std::int64_t axis) {
  channel_params p;
  if (scale.element_count() == 1 && scale.rank() <= 1) {
    p.inner = x.element_count();
  } else if (scale.rank() == 1) {
    const std::size_t a = detail::normalize_axis(ctx, axis, x.rank());
    if (scale.dim(0) != x.dim(a)) {
      ctx.fail("scale has " + std::to_string(scale.dim(0)) + " elements but axis " + std::to_string(axis) +
               " of the input has " + std::to_string(x.dim(a)));
    }
    p.outer = detail::product(x.shape(), 0, a);
    p.channels = x.dim(a);
    p.inner = detail::product(x.shape(), a + 1);
  } else {
    ctx.fail("scale of shape " + to_string(scale.shape()) + " needs blocked quantization (block_size)");
  }
  p.scale = scale.to_float();
  if (zero_point) {
    const bool both_single = zero_point->element_count() == 1 && scale.element_count() == 1 &&
                             zero_point->rank() <= 1 && scale.rank() <= 1;  // [] and [1] alike
    if (zero_point->shape() != scale.shape() && !both_single) {
      ctx.fail("zero point shape " + to_string(zero_point->shape()) + " differs from scale shape " +
               to_string(scale.shape()));
    }
    p.zero = zero_point->to_float();
  } else {
    p.zero.assign(p.scale.size(), 0.0f);
  }
  return p;
}

/// Runs fn(src_offset, channel, count) over the rows of a channel layout, across threads.
template <class Fn>
void for_each_row(int threads, const channel_params& p, Fn&& fn) {
  const std::int64_t rows = p.outer * p.channels;
  const std::int64_t rows_per_chunk = std::max<std::int64_t>(1, grain / std::max<std::int64_t>(p.inner, 1));
  detail::parallel_for(threads, rows, rows_per_chunk, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) fn(r * p.inner, r % p.channels, p.inner);
  });
}

/// Calls run(in, out, y) with x's type among `InTypes`, `out_type` among `OutTypes` (as
/// type tags) and a new output y of x's shape.
template <class InTypes, class OutTypes, class Run>
void with_types(kernel_context& ctx, const tensor& x, data_type out_type, Run&& run) {
  dispatch<InTypes>(ctx, x.dtype(), [&](auto in) {
    dispatch<OutTypes>(ctx, out_type, [&](auto out) {
      tensor& y = ctx.allocate_output(0, decltype(out)::type, x.shape());
      run(in, out, y);
    });
  });
}

void check_block_size(const kernel_build_info& info) {
  if (info.node.attr_int("block_size", 0) != 0) info.unsupported("blocked quantization (block_size) is not supported");
}

class quantize_kernel final : public kernel {
 public:
  explicit quantize_kernel(const kernel_build_info& info) : axis_(info.node.attr_int("axis", 1)) {
    check_block_size(info);
    const std::int64_t t = info.node.attr_int("output_dtype", 0);
    if (t != 0) {
      if (t < 1 || t > INT32_MAX) info.fail("attribute 'output_dtype' is not a type: " + std::to_string(t));
      output_type_ = static_cast<data_type>(t);
      if (!contains<quantized_types>(output_type_)) {
        info.unsupported("quantizing to " + std::string(ir::to_string(output_type_)) + " is not supported");
      }
    }
  }

  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const tensor& scale = ctx.input(1);
    const tensor* zero_point = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    data_type out_type = output_type_ == data_type::undefined ? data_type::uint8 : output_type_;
    if (zero_point) {
      if (output_type_ != data_type::undefined && zero_point->dtype() != output_type_) {
        ctx.fail("zero point type differs from attribute 'output_dtype'");
      }
      out_type = zero_point->dtype();
    }
    if (!contains<quantized_types>(out_type)) {
      ctx.unsupported("quantizing to " + std::string(ir::to_string(out_type)) + " is not supported");
    }
    const channel_params p = layout(ctx, x, scale, zero_point, axis_);
    with_types<quantize_input_types, quantized_types>(ctx, x, out_type, [&](auto in, auto out, tensor& y) {
      run<decltype(in), decltype(out)>(ctx.threads(), x, y, p);
    });
  }

 private:
  template <class In, class Out>
  static void run(int threads, const tensor& x, tensor& y, const channel_params& p) {
    using V = std::conditional_t<std::is_integral_v<typename In::value>, double, float>;
    using T = typename Out::value;
    const auto* src = x.data<typename In::storage>();
    auto* dst = y.mutable_data<typename Out::storage>();
    const V lo = static_cast<V>(std::numeric_limits<T>::lowest());
    const V hi = static_cast<V>(std::numeric_limits<T>::max());
    // Rounding half to even by adding and removing 1.5 * 2^(mantissa bits): exact for
    // |q| <= 2^22 (float) under the default rounding mode, and a plain vectorizable add
    // where nearbyint is a library call. Larger |q| stay larger than any output range and
    // saturate below; NaN fails both comparisons and lands on the lowest value.
    constexpr V magic = std::is_same_v<V, float> ? V(12582912.0) : V(6755399441055744.0);
    for_each_row(threads, p, [&](std::int64_t offset, std::int64_t c, std::int64_t n) {
      const V s = static_cast<V>(p.scale[c]);
      const V z = static_cast<V>(p.zero[c]);
      for (std::int64_t i = offset; i < offset + n; ++i) {
        V q = (static_cast<V>(In::load(src[i])) / s + magic) - magic + z;
        q = q >= lo ? q : lo;
        q = q <= hi ? q : hi;
        dst[i] = static_cast<T>(q);
      }
    });
  }

  std::int64_t axis_;
  data_type output_type_ = data_type::undefined;
};

class dequantize_kernel final : public kernel {
 public:
  explicit dequantize_kernel(const kernel_build_info& info)
      : axis_(info.node.attr_int("axis", 1)), scale_typed_output_(info.opset >= 19) {
    check_block_size(info);
  }

  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const tensor& scale = ctx.input(1);
    const tensor* zero_point = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (zero_point && zero_point->dtype() != x.dtype()) ctx.fail("zero point type differs from the input type");
    const data_type out_type = scale_typed_output_ ? scale.dtype() : data_type::float32;
    if (!contains<dequantize_input_types>(x.dtype())) {
      ctx.unsupported("dequantizing " + std::string(ir::to_string(x.dtype())) + " is not supported");
    }
    const channel_params p = layout(ctx, x, scale, zero_point, axis_);
    with_types<dequantize_input_types, scale_types>(ctx, x, out_type, [&](auto in, auto out, tensor& y) {
      run<decltype(in), decltype(out)>(ctx.threads(), x, y, p);
    });
  }

 private:
  template <class In, class Out>
  static void run(int threads, const tensor& x, tensor& y, const channel_params& p) {
    const auto* src = x.data<typename In::storage>();
    auto* dst = y.mutable_data<typename Out::storage>();
    for_each_row(threads, p, [&](std::int64_t offset, std::int64_t c, std::int64_t n) {
      const float s = p.scale[c];
      const float z = p.zero[c];
      for (std::int64_t i = offset; i < offset + n; ++i) dst[i] = Out::store((static_cast<float>(src[i]) - z) * s);
    });
  }

  std::int64_t axis_;
  bool scale_typed_output_;
};

/// DynamicQuantizeLinear: the range of x widened to include 0 gives scale = (max - min) / 255
/// (1 when the range is empty, as onnxruntime does) and zero point round(-min / scale), both
/// outputs scalars; x is then quantized to uint8 like QuantizeLinear.
class dynamic_quantize_kernel final : public kernel {
 public:
  explicit dynamic_quantize_kernel(const kernel_build_info&) {}

  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    if (x.dtype() != data_type::float32) ctx.fail("input must be float32, got " + std::string(ir::to_string(x.dtype())));
    const float* src = x.data<float>();
    const std::int64_t count = x.element_count();
    float lo = 0.0f, hi = 0.0f;
    for (std::int64_t i = 0; i < count; ++i) {
      lo = std::min(lo, src[i]);
      hi = std::max(hi, src[i]);
    }
    if (!std::isfinite(lo) || !std::isfinite(hi)) ctx.fail("input holds infinity; it has no uint8 scale");
    const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    const float zero = std::nearbyint(std::clamp(-lo / scale, 0.0f, 255.0f));
    ctx.allocate_output(1, data_type::float32, {}).mutable_data<float>()[0] = scale;
    ctx.allocate_output(2, data_type::uint8, {}).mutable_data<std::uint8_t>()[0] = static_cast<std::uint8_t>(zero);
    tensor& y = ctx.allocate_output(0, data_type::uint8, x.shape());
    std::uint8_t* dst = y.mutable_data<std::uint8_t>();
    // Round half to even by the 1.5 * 2^23 trick, as quantize_kernel does.
    constexpr float magic = 12582912.0f;
    detail::parallel_for(ctx.threads(), count, grain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        float q = (src[i] / scale + magic) - magic + zero;
        q = q >= 0.0f ? q : 0.0f;
        q = q <= 255.0f ? q : 255.0f;
        dst[i] = static_cast<std::uint8_t>(q);
      }
    });
  }
};

}  // namespace

void register_quantize_kernels(kernel_registry& r) {
  r.add("", "DynamicQuantizeLinear", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<dynamic_quantize_kernel>(info);
  });
  elementwise::add(r, "QuantizeLinear", elementwise::factory<quantize_kernel>(), 10);
  elementwise::add(r, "DequantizeLinear", elementwise::factory<dequantize_kernel>(), 10);
}

}  // namespace inferopt::runtime
