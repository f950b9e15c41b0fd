// inferopt.cpu QLinearAdd (int8_nhwc.hpp): y = saturate(round(((a - za) sa + (b - zb) sb) / sy)
// + zy), and with `activation` "Relu" clamped below at zy, as one pass of the requantized sum
// (vector_math.hpp) over a and b of one shape. The layout does not matter: it is elementwise.
#include <algorithm>
#include <limits>

#include "inferopt/ir/graph.hpp"
#include "int8_nhwc.hpp"
#include "kernel_util.hpp"
#include "nn_common.hpp"
#include "vector_math.hpp"

namespace inferopt::runtime::nn {

namespace {

class qlinear_add_kernel final : public kernel {
 public:
  qlinear_add_kernel(data_type type, requantize_sum_params params) : type_(type), params_(params) {}

  void compute(kernel_context& ctx) override {
    const tensor& a = ctx.input(0);
    const tensor& b = ctx.input(3);
    if (a.dtype() != type_ || b.dtype() != type_ || a.shape() != b.shape()) {
      ctx.fail("A " + to_string(a.shape()) + " and B " + to_string(b.shape()) + " must be " + std::string(ir::to_string(type_)) +
               " tensors of one shape");
    }
    tensor& y = ctx.allocate_output(0, type_, a.shape());
    const std::int64_t n = a.element_count();
    detail::parallel_for(ctx.threads(), n, 1 << 16, [&](std::int64_t begin, std::int64_t end) {
      if (type_ == data_type::uint8) {
        requantized_sum(a.data<std::uint8_t>() + begin, b.data<std::uint8_t>() + begin, y.mutable_data<std::uint8_t>() + begin,
                        end - begin, params_);
      } else {
        requantized_sum(a.data<std::int8_t>() + begin, b.data<std::int8_t>() + begin, y.mutable_data<std::int8_t>() + begin,
                        end - begin, params_);
      }
    });
  }

 private:
  data_type type_;
  requantize_sum_params params_;
};

std::unique_ptr<kernel> make_qlinear_add(const kernel_build_info& info) {
  const ir::node& n = info.node;
  if (n.inputs().size() != 8 || !n.input(2) || !n.input(5) || !n.input(7)) info.unsupported("QLinearAdd needs all 8 inputs");
  const data_type type = n.input(7)->elem_type();
  if (type != data_type::uint8 && type != data_type::int8) info.unsupported("only uint8 and int8 are supported");
  if (n.input(2)->elem_type() != type || n.input(5)->elem_type() != type) info.unsupported("A, B and Y must share one type");
  const float sa = scalar_scale(info, 1), sb = scalar_scale(info, 4), sy = scalar_scale(info, 6);
  const float za = static_cast<float>(scalar_zero_point(info, 2));
  const float zb = static_cast<float>(scalar_zero_point(info, 5));
  const float zy = static_cast<float>(scalar_zero_point(info, 7));
  if (!(sy > 0.0f)) info.fail("y_scale must be positive");
  requantize_sum_params p{};
  p.a_ratio = sa / sy;
  p.b_ratio = sb / sy;
  p.offset = zy - p.a_ratio * za - p.b_ratio * zb;
  const bool relu = n.attr_string("activation", "") == "Relu";
  p.lowest = type == data_type::uint8 ? 0.0f : static_cast<float>(std::numeric_limits<std::int8_t>::min());
  p.highest = type == data_type::uint8 ? 255.0f : static_cast<float>(std::numeric_limits<std::int8_t>::max());
  if (relu) p.lowest = std::max(p.lowest, zy);
  return std::make_unique<qlinear_add_kernel>(type, p);
}

}  // namespace

void register_int8_add_kernels(kernel_registry& r) { r.add(executor_fused_domain, "QLinearAdd", make_qlinear_add); }

}  // namespace inferopt::runtime::nn
