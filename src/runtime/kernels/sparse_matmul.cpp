// inferopt.BlockSparseMatMul (docs/SPARSE_OPS.md): Y = act(X W + bias), W a constant
// block-sparse [K, N] matrix carried by the node as BSR initializers, on the sparse module's
// CPU GEMM (sparse::run, AVX2 or portable, chosen at run time).
//
// The factory converts the arrays to a sparse::bsr_matrix once, checking every attribute and
// array (a malformed one is errc::invalid_model naming the node), so `compute` only checks X
// and the bias. X's leading dims are batch: X is read as [M, K] with M their product.
// The arrays must stay the initializers the kernel was built from: a model whose IR version
// lets a caller feed an initializer (IR < 4) and a caller who does so gets errc::unsupported.
// Error bound: sparse::run's, (k_s + 1) * 2^-24 * (sum |x w| + |bias|) per output, k_s the
// stored length of the output's column of W.

#include <array>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "inferopt/ir/value.hpp"
#include "inferopt/sparse/block_sparse_matmul_op.hpp"
#include "inferopt/sparse/bsr_gemm.hpp"
#include "kernel_util.hpp"

namespace inferopt::runtime {

namespace {

namespace op = sparse::block_sparse_matmul_op;

/// A constant input's data, checked against the dtype and rank the schema gives it.
const ir::tensor& constant_array(const kernel_build_info& info, std::size_t index, const char* name,
                                 ir::data_type type, std::size_t rank) {
  const ir::value* v = info.node.input(index);
  if (!v || !v->initializer() || !v->initializer()->has_data()) {
    info.fail(std::string("input ") + std::to_string(index) + " (" + name + ") must be an initializer with data");
  }
  const ir::tensor& t = *v->initializer();
  if (t.dtype != type) {
    info.fail(std::string(name) + " is " + std::string(ir::to_string(t.dtype)) + ", expected " +
              std::string(ir::to_string(type)));
  }
  const std::int64_t count = t.element_count();
  if (t.dims.size() != rank || count < 0 || t.byte_size() != static_cast<std::size_t>(count) * ir::element_size(type)) {
    info.fail(std::string(name) + " must be a " + std::to_string(rank) + "-D tensor whose data matches its dims");
  }
  return t;
}

template <class T>
std::vector<T> copy_of(const ir::tensor& t) {
  std::vector<T> out(t.byte_size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), t.bytes->data(), out.size() * sizeof(T));
  return out;
}

std::int64_t positive_attr(const kernel_build_info& info, const char* name, std::int64_t max) {
  const ir::attribute* a = info.node.find_attribute(name);
  if (!a) info.fail(std::string("attribute '") + name + "' is required");
  const std::int64_t v = info.node.attr_int(name, 0);
  if (v < 1 || v > max) {
    info.fail(std::string("attribute '") + name + "' is " + std::to_string(v) + ", expected 1.." + std::to_string(max));
  }
  return v;
}

class block_sparse_matmul_kernel final : public kernel {
 public:
  explicit block_sparse_matmul_kernel(const kernel_build_info& info) {
    const ir::node& n = info.node;
    if (n.inputs().size() < 4 || n.inputs().size() > 5 || n.outputs().size() != 1) {
      info.fail("expected inputs X, row_ptr, col_ind, values and an optional bias, and one output");
    }
    constexpr std::int64_t max_dim = std::int64_t{1} << 40;  // far beyond any weight; keeps products in range
    k_ = positive_attr(info, "rows", max_dim);
    n_ = positive_attr(info, "cols", max_dim);
    const auto br = static_cast<std::int32_t>(positive_attr(info, "block_rows", sparse::block_shape::max_extent));
    const auto bc = static_cast<std::int32_t>(positive_attr(info, "block_cols", sparse::block_shape::max_extent));
    const std::int64_t transposed = n.attr_int("transposed", 0);
    if (transposed != 0 && transposed != 1) info.fail("attribute 'transposed' is " + std::to_string(transposed) + ", expected 0 or 1");
    transposed_ = transposed == 1;
    const std::string activation = n.attr_string("activation", "");
    if (activation == "Relu") act_ = sparse::activation::relu;
    else if (!activation.empty()) info.fail("activation '" + activation + "' is not \"\" or \"Relu\"");

    const ir::tensor& row_ptr = constant_array(info, 1, "row_ptr", ir::data_type::int64, 1);
    const ir::tensor& col_ind = constant_array(info, 2, "col_ind", ir::data_type::int64, 1);
    const ir::tensor& values = constant_array(info, 3, "values", ir::data_type::float32, 3);
    // The stored matrix: W [K, N] with r x c blocks, or W^T [N, K] with c x r blocks.
    const sparse::block_shape block = transposed_ ? sparse::block_shape{bc, br} : sparse::block_shape{br, bc};
    if (values.dims[0] != col_ind.dims[0] || values.dims[1] != block.rows || values.dims[2] != block.cols) {
      info.fail("values has dims " + dims_text(values.dims) + ", expected [" + std::to_string(col_ind.dims[0]) + "," +
                std::to_string(block.rows) + "," + std::to_string(block.cols) + "] (blocks of the stored " +
                (transposed_ ? "W^T" : "W") + ")");
    }
    try {
      w_ = sparse::from_op_arrays(transposed_ ? n_ : k_, transposed_ ? k_ : n_, block, copy_of<std::int64_t>(row_ptr),
                                  copy_of<std::int64_t>(col_ind), copy_of<float>(values));
    } catch (const error& e) {
      info.fail(std::string("malformed block-sparse weight: ") + e.what());
    }
    for (std::size_t i = 1; i <= 3; ++i) arrays_[i - 1] = n.input(i)->initializer()->bytes->data();
  }

  void compute(kernel_context& ctx) override {
    // The arrays must be the initializers the matrix was built from (see the file comment).
    for (std::size_t i = 1; i <= 3; ++i) {
      if (ctx.input(i).raw() != arrays_[i - 1]) {
        ctx.unsupported("input " + std::to_string(i) + " was fed; the block-sparse arrays must stay the model's initializers");
      }
    }
    const tensor& x = ctx.input(0);
    if (x.dtype() != data_type::float32) ctx.fail("X is " + std::string(ir::to_string(x.dtype())) + ", expected float32");
    if (x.rank() == 0 || x.dim(x.rank() - 1) != k_) {
      ctx.fail("X of shape " + to_string(x.shape()) + " does not end in K = " + std::to_string(k_));
    }
    const float* bias = nullptr;
    if (ctx.has_input(4)) {
      const tensor& b = ctx.input(4);
      if (b.dtype() != data_type::float32 || b.rank() != 1 || b.dim(0) != n_) {
        ctx.fail("bias of type " + std::string(ir::to_string(b.dtype())) + " and shape " + to_string(b.shape()) +
                 " is not float32 [" + std::to_string(n_) + "]");
      }
      bias = b.data<float>();
    }
    shape_t out_shape(x.shape().begin(), x.shape().end() - 1);
    out_shape.push_back(n_);
    tensor& y = ctx.allocate_output(0, data_type::float32, out_shape);
    if (y.element_count() == 0) return;

    sparse::bsr_gemm_args args;
    args.m = detail::product(x.shape(), 0, x.rank() - 1);
    args.x = x.data<float>();
    args.ldx = k_;
    args.w = w_.view();
    args.trans_w = transposed_;
    args.bias = bias;
    args.act = act_;
    args.y = y.mutable_data<float>();
    args.ldy = n_;
    const sparse::cpu_context cpu{.threads = ctx.threads()};
    if (const sparse::kernel_status s = sparse::can_implement(args, cpu); !s) ctx.unsupported(s.reason);
    workspace_.resize(sparse::workspace_bytes(args, cpu));
    sparse::run(args, workspace_, cpu);
  }

 private:
  static std::string dims_text(const std::vector<std::int64_t>& dims) {
    std::string s = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
    return s + "]";
  }

  std::int64_t k_ = 0;
  std::int64_t n_ = 0;
  bool transposed_ = false;
  sparse::activation act_ = sparse::activation::none;
  sparse::bsr_matrix<float> w_;
  std::array<const void*, 3> arrays_{};  // the initializers' bytes w_ was built from
  std::vector<std::byte> workspace_;     // kept between runs; compute never runs concurrently
};

}  // namespace

void register_sparse_kernels(kernel_registry& r) {
  r.add(std::string(op::domain), std::string(op::op_type), [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<block_sparse_matmul_kernel>(info);
  }, op::version, op::version);
}

}  // namespace inferopt::runtime
