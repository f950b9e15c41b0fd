// MatMulInteger (opset 10): Y = (A - a_zero_point) (B - b_zero_point) in int32, MatMul's
// shapes (1-D operands, broadcast batch dims). A and B are uint8 or int8; a_zero_point is one
// value or one per row of a matrix A, b_zero_point one value or one per column of B.
//
// A uint8 or int8 A times an int8 B with single zero points (what dynamic quantization writes)
// runs on oneDNN's integer GEMM where the CPU has VNNI; every other case, and the portable
// builds, on an exact int32 product of the zero-point-shifted operands (Eigen). Both are
// exact: int32 sums of at most 2^31 / 255^2 = 33025 products per output cannot overflow, and
// longer reductions are refused.

#include <Eigen/Core>

#include "kernel_util.hpp"
#include "nn_common.hpp"
#include "nn_gemm.hpp"
#include "nn_matmul_layout.hpp"

namespace inferopt::runtime::nn {

namespace {

constexpr std::int64_t longest_exact_reduction = 33025;

using int32_matrix = Eigen::Matrix<std::int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A zero point: one value, or one per row (A) or column (B).
struct zero_points {
  std::vector<std::int32_t> values{0};
  [[nodiscard]] bool single() const { return values.size() == 1; }
  [[nodiscard]] std::int32_t at(std::int64_t i) const { return values[single() ? 0 : static_cast<std::size_t>(i)]; }
};

zero_points read_zero_points(const kernel_context& ctx, std::size_t input, const tensor& operand, std::int64_t per) {
  zero_points z;
  if (!ctx.has_input(input)) return z;
  const tensor& t = ctx.input(input);
  if (t.dtype() != operand.dtype()) ctx.fail("zero point " + std::to_string(input) + " has another type than its operand");
  const std::vector<float> v = t.to_float();
  const bool one = t.element_count() == 1 && t.rank() <= 1;
  const bool each = t.rank() == 1 && t.dim(0) == per && operand.rank() == 2;
  if (!one && !each) ctx.unsupported("zero point of shape " + to_string(t.shape()) + " (one value, or one per row of A / column of B)");
  z.values.assign(v.begin(), v.end());
  if (!z.single() && std::all_of(z.values.begin(), z.values.end(), [&](std::int32_t x) { return x == z.values[0]; })) {
    z.values.resize(1);
  }
  return z;
}

/// Operand `x` ([rows, cols], row-major) minus its zero points, as int32.
template <class T>
int32_matrix shifted(const T* x, std::int64_t rows, std::int64_t cols, const zero_points& z, bool per_row) {
  int32_matrix out(rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      out(r, c) = static_cast<std::int32_t>(x[r * cols + c]) - z.at(per_row ? r : c);
    }
  }
  return out;
}

class matmul_integer_kernel final : public kernel {
 public:
  explicit matmul_integer_kernel(const kernel_build_info&) {}

  void compute(kernel_context& ctx) override {
    const tensor& a = ctx.input(0);
    const tensor& b = ctx.input(1);
    for (const tensor* t : {&a, &b}) {
      if (t->dtype() != data_type::uint8 && t->dtype() != data_type::int8) {
        ctx.fail("operands must be uint8 or int8, got " + std::string(ir::to_string(t->dtype())));
      }
    }
    const matmul_layout l = layout_matmul(ctx, a, b);
    if (l.k > longest_exact_reduction) ctx.unsupported("a reduction of " + std::to_string(l.k) + " would overflow int32");
    const zero_points za = read_zero_points(ctx, 2, a, l.m);
    const zero_points zb = read_zero_points(ctx, 3, b, l.n);
    tensor& y = ctx.allocate_output(0, data_type::int32, l.out_shape);
    if (y.element_count() == 0) return;
    if (a.dtype() == data_type::uint8) run(ctx, a.data<std::uint8_t>(), b, l, za, zb, y);
    else run(ctx, a.data<std::int8_t>(), b, l, za, zb, y);
  }

 private:
  template <class TA>
  static void run(const kernel_context& ctx, const TA* a, const tensor& b, const matmul_layout& l, const zero_points& za,
                  const zero_points& zb, tensor& y) {
    std::int32_t* yd = y.mutable_data<std::int32_t>();
    const std::int64_t rows = l.folds_rows ? l.count() * l.m : l.m;
    const std::int64_t products = l.folds_rows ? 1 : l.count();
    for (std::int64_t i = 0; i < products; ++i) {
      const auto [oa, ob] = l.operands(i);
      const TA* ai = a + oa * l.m * l.k;
      std::int32_t* yi = yd + i * l.m * l.n;
      if (b.dtype() == data_type::int8) {
        const std::int8_t* bi = b.data<std::int8_t>() + ob * l.k * l.n;
        if (za.single() && zb.single() &&
            onednn_integer_gemm(rows, l.n, l.k, ai, static_cast<TA>(za.at(0)), bi, static_cast<std::int8_t>(zb.at(0)), yi,
                                ctx.threads())) {
          continue;
        }
        exact(ai, bi, rows, l, za, zb, yi);
      } else {
        exact(ai, b.data<std::uint8_t>() + ob * l.k * l.n, rows, l, za, zb, yi);
      }
    }
  }

  template <class TA, class TB>
  static void exact(const TA* a, const TB* b, std::int64_t rows, const matmul_layout& l, const zero_points& za,
                    const zero_points& zb, std::int32_t* y) {
    Eigen::Map<int32_matrix>(y, rows, l.n).noalias() = shifted(a, rows, l.k, za, true) * shifted(b, l.k, l.n, zb, false);
  }
};

}  // namespace

void register_matmul_integer_kernels(kernel_registry& r) {
  r.add("", "MatMulInteger", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<matmul_integer_kernel>(info);
  });
}

}  // namespace inferopt::runtime::nn
