#pragma once
// MatMul's operands (numpy semantics: 1-D operands, broadcast batch dims) seen as a batch of
// [m, k] x [k, n] products, shared by MatMul and MatMulInteger.

#include <cstdint>
#include <utility>
#include <vector>

#include "inferopt/runtime/kernel.hpp"
#include "kernel_util.hpp"

namespace inferopt::runtime::nn {

struct matmul_layout {
  std::int64_t m = 0, k = 0, n = 0;
  shape_t out_shape;
  shape_t batch;  // the output's broadcast batch dims
  std::vector<std::int64_t> strides_a, strides_b;  // per batch dim, in matrices
  /// B has no batch dims and A's batch is the output's: one [batch * m, k] x [k, n] product.
  bool folds_rows = false;

  [[nodiscard]] std::int64_t count() const { return detail::product(batch); }
  /// The matrix indices in A and B of output product `index`.
  [[nodiscard]] std::pair<std::int64_t, std::int64_t> operands(std::int64_t index) const {
    std::int64_t oa = 0, ob = 0;
    for (std::size_t d = batch.size(); d-- > 0;) {
      const std::int64_t i = index % batch[d];
      index /= batch[d];
      oa += i * strides_a[d];
      ob += i * strides_b[d];
    }
    return {oa, ob};
  }
};

/// The layout of a * b, or ctx.fail when they cannot be multiplied.
inline matmul_layout layout_matmul(const kernel_context& ctx, const tensor& a, const tensor& b) {
  if (a.rank() == 0 || b.rank() == 0) ctx.fail("operands must have at least one dim, got scalars");
  // 1-D operands become a row (A) or a column (B) and lose that dim in the output.
  shape_t sa = a.shape(), sb = b.shape();
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  matmul_layout l;
  l.m = sa[sa.size() - 2];
  l.k = sa.back();
  l.n = sb.back();
  if (sb[sb.size() - 2] != l.k) {
    ctx.fail("shapes " + to_string(a.shape()) + " and " + to_string(b.shape()) + " cannot be multiplied");
  }
  const shape_t batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  l.out_shape = detail::apply_shape_rule(ctx, [&] { return ir::shape_rules::matmul_shape<std::int64_t>(a.shape(), b.shape()); });
  // The broadcast batch dims are what precedes the output's matrix dims.
  const std::size_t matrix_dims = (a.rank() > 1 ? 1 : 0) + (b.rank() > 1 ? 1 : 0);
  l.batch.assign(l.out_shape.begin(), l.out_shape.end() - static_cast<std::ptrdiff_t>(matrix_dims));
  l.strides_a = detail::broadcast_strides(batch_a, l.batch);
  l.strides_b = detail::broadcast_strides(batch_b, l.batch);
  l.folds_rows = detail::product(batch_b) == 1 && detail::product(batch_a) == detail::product(l.batch);
  return l;
}

}  // namespace inferopt::runtime::nn
