// Comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual), boolean logic (And, Or,
// Xor) and Where, all with numpy broadcasting. Comparisons of the 16-bit floats happen in
// float; NaN compares false except in !=, as IEEE says.

#include "elementwise_common.hpp"

namespace inferopt::runtime::elementwise {

namespace {

struct equal {
  template <class T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct less {
  template <class T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct greater {
  template <class T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct less_or_equal {
  template <class T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct greater_or_equal {
  template <class T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct logical_and {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct logical_or {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct logical_xor {
  bool operator()(bool a, bool b) const { return a != b; }
};

/// output = condition ? X : Y, the three broadcast together; X and Y of any one type.
class where_kernel final : public kernel {
 public:
  explicit where_kernel(const kernel_build_info&) {}
  void compute(kernel_context& ctx) override {
    const tensor& c = ctx.input(0);
    const tensor& x = ctx.input(1);
    const tensor& y = ctx.input(2);
    if (c.dtype() != data_type::boolean)
      ctx.fail("condition must be bool, got " + std::string(ir::to_string(c.dtype())));
    if (x.dtype() != y.dtype()) ctx.fail("X and Y types differ");
    const shape_t shape = detail::broadcast_shapes(ctx, {&c.shape(), &x.shape(), &y.shape()});
    // Selection copies bits, so the element width is all that matters.
    switch (ir::element_size(x.dtype())) {
      case 1:
        run<std::uint8_t>(ctx, c, x, y, shape);
        break;
      case 2:
        run<std::uint16_t>(ctx, c, x, y, shape);
        break;
      case 4:
        run<std::uint32_t>(ctx, c, x, y, shape);
        break;
      case 8:
        run<std::uint64_t>(ctx, c, x, y, shape);
        break;
      default:
        ctx.unsupported("element type " + std::string(ir::to_string(x.dtype())) + " is not supported");
    }
  }

 private:
  /// A mask select along a row whose condition is contiguous, which vectorizes; an input
  /// with `Contiguous` false holds one value for the row.
  template <bool XContiguous, bool YContiguous, class Bits>
  static void select(const std::uint8_t* c, const Bits* x, const Bits* y, Bits* z, std::int64_t len) {
    for (std::int64_t i = 0; i < len; ++i) {
      const auto m = static_cast<Bits>(Bits{0} - static_cast<Bits>(c[i] != 0));
      const Bits a = XContiguous ? x[i] : x[0];
      const Bits b = YContiguous ? y[i] : y[0];
      z[i] = static_cast<Bits>((a & m) | (b & static_cast<Bits>(~m)));
    }
  }

  template <class Bits>
  static void run(kernel_context& ctx, const tensor& c, const tensor& x, const tensor& y, const shape_t& shape) {
    tensor& out = ctx.allocate_output(0, x.dtype(), shape);
    const std::int64_t total = out.element_count();
    if (total == 0) return;
    const auto* pc = static_cast<const std::uint8_t*>(c.raw());
    const auto* px = static_cast<const Bits*>(x.raw());
    const auto* py = static_cast<const Bits*>(y.raw());
    auto* po = static_cast<Bits*>(out.mutable_raw());
    const broadcast_plan p = plan_broadcast(shape, {&c.shape(), &x.shape(), &y.shape()});
    for_each_segment(ctx.threads(), p, total, [&](std::int64_t o, const std::int64_t* off, std::int64_t len) {
      const std::uint8_t* sc = pc + off[0];
      const Bits* sx = px + off[1];
      const Bits* sy = py + off[2];
      Bits* z = po + o;
      const std::int64_t kc = p.inner_step[0];
      const std::int64_t kx = p.inner_step[1];
      const std::int64_t ky = p.inner_step[2];
      if (kc && kx && ky) {
        select<true, true>(sc, sx, sy, z, len);
      } else if (kc && kx) {  // Y one value along the row, as a constant 0 or -inf often is
        select<true, false>(sc, sx, sy, z, len);
      } else if (kc && ky) {
        select<false, true>(sc, sx, sy, z, len);
      } else {
        for (std::int64_t i = 0; i < len; ++i) z[i] = sc[i * kc] ? sx[i * kx] : sy[i * ky];
      }
    });
  }
};

}  // namespace

void register_logic_kernels(kernel_registry& r) {
  add(r, "Equal", factory<binary_kernel<all_types, equal, true>>(), 1);
  add(r, "Less", factory<binary_kernel<numeric_types, less, true>>(), 1);
  add(r, "Greater", factory<binary_kernel<numeric_types, greater, true>>(), 1);
  add(r, "LessOrEqual", factory<binary_kernel<numeric_types, less_or_equal, true>>(), 12);
  add(r, "GreaterOrEqual", factory<binary_kernel<numeric_types, greater_or_equal, true>>(), 12);
  add(r, "And", factory<binary_kernel<bool_types, logical_and>>(), 1);
  add(r, "Or", factory<binary_kernel<bool_types, logical_or>>(), 1);
  add(r, "Xor", factory<binary_kernel<bool_types, logical_xor>>(), 1);
  add(r, "Where", factory<where_kernel>(), 9);
}

}  // namespace inferopt::runtime::elementwise
