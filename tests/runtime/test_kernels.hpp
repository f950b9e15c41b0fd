#pragma once
// Kernels for session tests whose outputs are easy to predict, so that the session's contract
// is checked without the built-in kernel families.

#include "inferopt/runtime/kernel.hpp"

namespace inferopt::test {

/// y = x + 1 (float).
class add_one final : public runtime::kernel {
 public:
  void compute(runtime::kernel_context& ctx) override {
    const runtime::tensor& x = ctx.input(0);
    runtime::tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    for (std::int64_t k = 0; k < x.element_count(); ++k) y.mutable_data<float>()[k] = x.data<float>()[k] + 1.0f;
  }
};

/// y = a + b, same shapes only.
class add_same final : public runtime::kernel {
 public:
  void compute(runtime::kernel_context& ctx) override {
    const runtime::tensor& a = ctx.input(0);
    const runtime::tensor& b = ctx.input(1);
    if (a.shape() != b.shape()) ctx.fail("shapes differ");
    runtime::tensor& y = ctx.allocate_output(0, a.dtype(), a.shape());
    for (std::int64_t k = 0; k < a.element_count(); ++k) y.mutable_data<float>()[k] = a.data<float>()[k] + b.data<float>()[k];
  }
};

}  // namespace inferopt::test
