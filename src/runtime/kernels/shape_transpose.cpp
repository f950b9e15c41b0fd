// Transpose, DepthToSpace and SpaceToDepth: permutations of the input's elements. Each is a
// strided view of the input copied out by `strided_copy`, which merges dims that stay
// together (NCHW -> NHWC becomes a batched 2-D transpose) and copies transposed blocks in
// cache-sized tiles. A permutation that only moves unit dims is a zero-copy reshape.

#include <numeric>

#include "shape_common.hpp"

namespace inferopt::runtime::shape_detail {
namespace {

/// out[i] = in[perm applied]: copies `x` permuted by `perm` into a new output.
void permute(kernel_context& ctx, const tensor& x, const shape_t& view_shape, const std::vector<std::size_t>& perm,
             const shape_t& out_shape) {
  const std::size_t width = element_width(ctx, x.dtype());
  const std::vector<std::int64_t> in_strides = detail::strides_of(view_shape);
  shape_t permuted_shape(perm.size());
  std::vector<std::int64_t> strides(perm.size());
  for (std::size_t k = 0; k < perm.size(); ++k) {
    permuted_shape[k] = view_shape[perm[k]];
    strides[k] = in_strides[perm[k]];
  }
  // Moving only unit dims keeps the element order: share the storage.
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < perm.size(); ++k) {
    if (view_shape[perm[k]] != 1) order.push_back(perm[k]);
  }
  if (std::is_sorted(order.begin(), order.end())) {
    ctx.set_output(0, x.reshaped(out_shape));
    return;
  }
  tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
  strided_copy(bytes_of(x), mutable_bytes_of(out), width, permuted_shape, strides, ctx.threads());
}

class transpose_kernel final : public kernel {
 public:
  explicit transpose_kernel(const kernel_build_info& info) {
    if (const ir::attribute* a = info.node.find_attribute("perm")) {
      perm_ = a->ints;
      has_perm_ = true;
      std::vector<bool> seen(perm_.size(), false);
      for (std::int64_t p : perm_) {
        if (p < 0 || p >= static_cast<std::int64_t>(perm_.size()) || seen[static_cast<std::size_t>(p)]) {
          info.fail("perm " + to_string(perm_) + " is not a permutation");
        }
        seen[static_cast<std::size_t>(p)] = true;
      }
    }
  }
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    std::vector<std::size_t> perm(x.rank());
    if (has_perm_) {
      if (perm_.size() != x.rank()) {
        ctx.fail("perm " + to_string(perm_) + " does not match input shape " + to_string(x.shape()));
      }
      for (std::size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<std::size_t>(perm_[k]);
    } else {
      std::iota(perm.rbegin(), perm.rend(), std::size_t{0});
    }
    const std::vector<std::int64_t> order(perm.begin(), perm.end());
    const shape_t out_shape = detail::apply_shape_rule(ctx, [&] { return ir::shape_rules::transpose_shape<std::int64_t>(x.shape(), order); });
    permute(ctx, x, x.shape(), perm, out_shape);
  }

 private:
  bool has_perm_ = false;
  std::vector<std::int64_t> perm_;
};

std::int64_t read_blocksize(const kernel_build_info& info) {
  const std::int64_t b = info.node.attr_int("blocksize", 0);
  if (b <= 0) info.fail("blocksize must be positive, got " + std::to_string(b));
  return b;
}

/// The DCR/CRD mode attribute of DepthToSpace and SpaceToDepth.
bool read_crd(const kernel_build_info& info) {
  const std::string mode = info.node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") info.fail("mode must be DCR or CRD, got '" + mode + "'");
  return mode == "CRD";
}

// DCR: [N, b, b, C/b^2, H, W] -> [N, C/b^2, H, b, W, b]; CRD: [N, C/b^2, b, b, H, W] -> same.
class depth_to_space_kernel final : public kernel {
 public:
  explicit depth_to_space_kernel(const kernel_build_info& info)
      : block_(read_blocksize(info)), crd_(read_crd(info)) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    if (x.rank() != 4) ctx.fail("input must be 4-D, got shape " + to_string(x.shape()));
    const std::int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), b = block_;
    if (b > c / b || c % (b * b) != 0) ctx.fail("channels " + std::to_string(c) + " are not a multiple of blocksize^2");
    const std::int64_t d = c / (b * b);
    if (crd_) {
      permute(ctx, x, {n, d, b, b, h, w}, {0, 1, 4, 2, 5, 3}, {n, d, h * b, w * b});
    } else {
      permute(ctx, x, {n, b, b, d, h, w}, {0, 3, 4, 1, 5, 2}, {n, d, h * b, w * b});
    }
  }

 private:
  std::int64_t block_;
  bool crd_;
};

// [N, C, H/b, b, W/b, b] -> DCR: [N, b, b, C, H/b, W/b]; CRD: [N, C, b, b, H/b, W/b].
class space_to_depth_kernel final : public kernel {
 public:
  explicit space_to_depth_kernel(const kernel_build_info& info) : block_(read_blocksize(info)), crd_(read_crd(info)) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    if (x.rank() != 4) ctx.fail("input must be 4-D, got shape " + to_string(x.shape()));
    const std::int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), b = block_;
    std::int64_t depth = 0;
    if (b > INT32_MAX || h % b != 0 || w % b != 0 || __builtin_mul_overflow(c, b * b, &depth)) {
      ctx.fail("height and width of " + to_string(x.shape()) + " are not multiples of blocksize " + std::to_string(b));
    }
    const shape_t view{n, c, h / b, b, w / b, b};
    const shape_t out{n, depth, h / b, w / b};
    if (crd_) {
      permute(ctx, x, view, {0, 1, 3, 5, 2, 4}, out);
    } else {
      permute(ctx, x, view, {0, 3, 5, 1, 2, 4}, out);
    }
  }

 private:
  std::int64_t block_;
  bool crd_;
};

}  // namespace

void register_transpose_kernels(kernel_registry& r) {
  r.add("", "Transpose", factory<transpose_kernel>());
  r.add("", "DepthToSpace", factory<depth_to_space_kernel>());
  r.add("", "SpaceToDepth", factory<space_to_depth_kernel>());
}

}  // namespace inferopt::runtime::shape_detail
