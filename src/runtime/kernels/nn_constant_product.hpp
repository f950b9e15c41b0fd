#pragma once
// The product of a linear layer, C = A W (+ bias), for a constant W: MatMul and Gemm with an
// initializer as B, and Attention's packed QKV weights. With oneDNN (INFEROPT_WITH_ONEDNN), W
// is reordered once per row count into the blocked layout oneDNN's matmul reads, so each run
// streams prepacked panels instead of packing W again: on BERT-base's weights, which come
// from memory on every run, that is 1.2x oneDNN's sgemm at two threads (docs/BENCHMARKS.md).
// Without oneDNN, or where oneDNN declines, `run` returns false and the caller takes nn::gemm.
// Memory: one blocked copy of W per distinct layout (row counts share it when oneDNN picks the
// same layout for them, which it does for the sizes seen); at most four (row count, bias)
// primitives are kept. Once it holds a copy, the session may release the initializer
// (kernel::holds_own_copy): the node's W input is then absent, `operand` stands in for it and,
// where nn::gemm must compute (a fifth row count), `plain` unpacks W once more.
// Error bound: that of nn::gemm with the same k.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "inferopt/runtime/kernel.hpp"

namespace inferopt::ir {
class node;
}

namespace inferopt::runtime::nn {

/// What the product applies to each output after the bias, in oneDNN's epilogue: nothing, or
/// the GELU of a transformer's FFN (erf form, or the tanh approximation).
enum class linear_activation { none, gelu_erf, gelu_tanh };

class constant_weight_product {
 public:
  constant_weight_product();
  ~constant_weight_product();
  constant_weight_product(const constant_weight_product&) = delete;
  constant_weight_product& operator=(const constant_weight_product&) = delete;

  /// Remembers W [k x n], row-major ([n x k] when `transposed`: Gemm's transB). Not copied: it
  /// must outlive this object (initializers outlive the sessions built on them).
  void set_weights(const float* w, std::int64_t k, std::int64_t n, bool transposed = false);
  /// Whether `data` is the W this product holds (a graph input may override an initializer;
  /// null: the session released it to this product's copy).
  [[nodiscard]] bool holds(const void* data) const noexcept { return data == nullptr ? holds_copy() : data == weights_; }
  /// Whether it holds W in its own packed copy (then the session may release the initializer).
  [[nodiscard]] bool holds_copy() const noexcept;
  /// Bytes of the packed copies and of W unpacked from them (reports).
  [[nodiscard]] std::size_t own_bytes() const noexcept;
  /// The node's W this run: input `index`, or, once the session released it, a float32 tensor
  /// of W's shape without data (pass its null raw() to `run`; `plain` gives the values).
  [[nodiscard]] const tensor& operand(const kernel_context& ctx, std::size_t index) const;
  /// W's values in the node's layout, unpacked from the copy (once): for nn::gemm after the
  /// session released the initializer.
  [[nodiscard]] const float* plain();
  /// C [m x n] = act(A [m x k] (row-major, leading dim k) * W + bias [n]) (bias may be null), when
  /// `b`, the operand the node got this run, is the W this product holds (null: the session
  /// released it to this product's copy). False when it did not compute (another B, no oneDNN,
  /// oneDNN declined, or too many row counts).
  bool run(const void* b, const float* a, std::int64_t m, const float* bias, float* c, int threads,
           linear_activation act = linear_activation::none);

 private:
  struct cache;
  const float* weights_ = nullptr;
  std::int64_t k_ = 0, n_ = 0;
  bool transposed_ = false;
  std::unique_ptr<cache> cache_;
  tensor shape_only_;               // W's shape, no data: the operand once released
  std::vector<float> unpacked_;     // W unpacked from the copy, made on first need
};

/// Gives `product` the node's input `input` as W when it is a float32 matrix initializer with
/// data (W^T when `transposed`); otherwise leaves it empty, and `run` returns false.
void use_constant_weights(constant_weight_product& product, const ir::node& node, std::size_t input, bool transposed = false);

}  // namespace inferopt::runtime::nn
