#pragma once
// The constant int8 weights of an int8 oneDNN kernel (QLinearConvNhwc, QGemm) in the layouts
// its primitives ask for. Each layout is reordered from the initializer: oneDNN reorders
// nothing out of an int8 layout that carries zero-point compensation. Where the kernel's
// input has a static shape, no later run asks for a new layout, so the kernel says it holds
// its own copy (kernel::holds_own_copy) and the session releases the initializer after the
// first run: the weights are then held once. A run that still asked for a new layout gets a
// one-line error. Private to src/runtime/kernels; built with INFEROPT_WITH_ONEDNN only.

#include <cstddef>
#include <cstdint>
#include <string>

#include "inferopt/ir/shapes.hpp"
#include "inferopt/runtime/kernel.hpp"
#include "onednn_common.hpp"

namespace inferopt::runtime::nn {

class int8_weight_layouts {
 public:
  /// Weights `data` (the initializer's bytes) are input `input` of the kernel's node `n`; its
  /// input 0 decides whether the shape is fixed.
  int8_weight_layouts(const ir::node& n, std::size_t input, const std::int8_t* data)
      : input_(input), data_(data), fixed_shape_(ir::static_dims(n.input(0)).has_value()) {}

  /// The weights in `layout`; `plain` describes the initializer's own layout.
  dnnl::memory in(const kernel_context& ctx, const dnnl::memory::desc& layout, const dnnl::memory::desc& plain) {
    return copies_.in(layout, [&] {
      if (!ctx.has_input(input_)) {
        ctx.fail("input shape " + to_string(ctx.input(0).shape()) +
                 " needs its weights in a new layout, and its initializer was released after the first run");
      }
      return dnnl::memory(plain, onednn::engine(), const_cast<std::int8_t*>(data_));
    });
  }

  [[nodiscard]] bool holds_own_copy(std::size_t input) const noexcept {
    return input == input_ && fixed_shape_ && !copies_.empty();
  }
  [[nodiscard]] std::size_t bytes() const noexcept { return copies_.bytes(); }

 private:
  std::size_t input_;
  const std::int8_t* data_;  // the initializer's: read only while a run still has it as an input
  bool fixed_shape_;
  onednn::weight_layouts<> copies_;
};

}  // namespace inferopt::runtime::nn
