#pragma once
/// The executor's kernels: one object per node, built once from the node's attributes
/// (validating them) and run many times. Kernels are found by (domain, op type, opset) in a
/// `kernel_registry`, which later modules extend with their own ops.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "inferopt/ir/node.hpp"
#include "inferopt/runtime/tensor.hpp"

namespace inferopt::runtime {

namespace detail {
class buffer_pool;
struct output_placement;
}

/// What a kernel sees when it runs.
class kernel_context {
 public:
  kernel_context(const ir::node& n, std::span<const tensor* const> inputs, std::span<tensor> outputs, int threads,
                 detail::buffer_pool* pool = nullptr, detail::output_placement* placement = nullptr)
      : node_(n), inputs_(inputs), outputs_(outputs), threads_(threads), pool_(pool), placement_(placement) {}

  [[nodiscard]] std::size_t input_count() const noexcept { return inputs_.size(); }
  /// Whether input `i` is present (not omitted and within range).
  [[nodiscard]] bool has_input(std::size_t i) const noexcept { return i < inputs_.size() && inputs_[i] != nullptr; }
  /// Input `i`. @throws error naming the node when it is missing.
  [[nodiscard]] const tensor& input(std::size_t i) const;
  [[nodiscard]] std::size_t output_count() const noexcept { return outputs_.size(); }
  /// Whether output `i` is wanted (the node names it).
  [[nodiscard]] bool wants_output(std::size_t i) const noexcept;
  /// Allocates output `i`: at its place in the session's memory plan when it has one, else
  /// reusing the buffer it had in the previous run when it fits.
  tensor& allocate_output(std::size_t i, data_type type, const shape_t& shape);
  /// Sets output `i` to an existing tensor (a view or reshape of an input, for example).
  void set_output(std::size_t i, tensor t);
  /// Working memory for this call only: `bytes`, 64-byte aligned, contents undefined. Planned
  /// runs take it from the session's arena, as a tensor that lives for this one step, so it
  /// shares memory with tensors dead by then instead of staying resident between calls;
  /// other calls get a buffer freed when the call ends. One buffer per call: asking again
  /// returns it, grown if needed, without its contents.
  [[nodiscard]] std::byte* scratch(std::size_t bytes);

  [[nodiscard]] int threads() const noexcept { return threads_; }
  [[nodiscard]] const ir::node& node() const noexcept { return node_; }
  /// Throws `errc::invalid_argument` with the node in the message: `node 'x' (Op): what`.
  [[noreturn]] void fail(const std::string& what) const;
  /// Throws `errc::unsupported` naming the node: a valid input this kernel does not handle.
  [[noreturn]] void unsupported(const std::string& what) const;

 private:
  const ir::node& node_;
  std::span<const tensor* const> inputs_;
  std::span<tensor> outputs_;
  int threads_;
  detail::buffer_pool* pool_;
  detail::output_placement* placement_;
  tensor own_scratch_;  // scratch() where the arena has no place for it
};

class kernel {
 public:
  virtual ~kernel() = default;
  virtual void compute(kernel_context& ctx) = 0;
  /// Whether the kernel now holds its own copy of constant input `input` (weights reordered
  /// into its layout) and reads the session's tensor only when a feed overrides it: the session
  /// may then drop its reference to the initializer, so the weights are held once.
  [[nodiscard]] virtual bool holds_own_copy(std::size_t input) const noexcept {
    (void)input;
    return false;
  }
  /// Bytes of weights the kernel holds in its own layouts (reports: the session's weights).
  [[nodiscard]] virtual std::size_t own_bytes() const noexcept { return 0; }
};

/// What a factory gets to build a kernel: the node and the opset its domain imports.
struct kernel_build_info {
  const ir::node& node;
  std::int64_t opset;
  /// Throws `errc::invalid_model` naming the node (an attribute the spec does not allow).
  [[noreturn]] void fail(const std::string& what) const;
  /// Throws `errc::unsupported` naming the node (valid, but not implemented here).
  [[noreturn]] void unsupported(const std::string& what) const;
};

using kernel_factory = std::function<std::unique_ptr<kernel>(const kernel_build_info&)>;

class kernel_registry {
 public:
  /// Registers a factory for opsets [since, until] of the domain ("" is ai.onnx).
  void add(std::string domain, std::string op_type, kernel_factory f, std::int64_t since = 1,
           std::int64_t until = INT64_MAX);
  /// The factory for a node at an opset, or null.
  [[nodiscard]] const kernel_factory* find(std::string_view domain, std::string_view op_type, std::int64_t opset) const;
  /// Op types registered for a domain (for reports).
  [[nodiscard]] std::vector<std::string> op_types(std::string_view domain = "") const;

 private:
  struct entry {
    std::int64_t since;
    std::int64_t until;
    kernel_factory make;
  };
  std::map<std::pair<std::string, std::string>, std::vector<entry>, std::less<>> entries_;
};

/// Every kernel inferopt ships (the ops listed in the runtime README section).
[[nodiscard]] const kernel_registry& builtin_kernels();

/// Kernel families; each fills the registry with its ops.
void register_elementwise_kernels(kernel_registry& r);
void register_nn_kernels(kernel_registry& r);
void register_shape_kernels(kernel_registry& r);
void register_reduce_kernels(kernel_registry& r);
void register_quantize_kernels(kernel_registry& r);
/// inferopt.BlockSparseMatMul (docs/SPARSE_OPS.md), on the sparse module's CPU GEMM.
void register_sparse_kernels(kernel_registry& r);

/// The instruction set the executor's dense products (MatMul, Gemm, Conv) run with on this
/// CPU: "avx512", "avx2" or "generic", chosen once per process (INFEROPT_NN_ISA caps it). For
/// reports and cost models that compare against the executor's dense GEMM.
[[nodiscard]] const char* dense_gemm_isa() noexcept;

/// The channel block of the executor's blocked convolution layout on this CPU (16 with
/// AVX-512, 8 with AVX2), or 0 when sessions keep every tensor in its model's layout (no
/// oneDNN in the build, or INFEROPT_LAYOUT=plain, INFEROPT_NN_GEMM=eigen, INFEROPT_NN_ISA=generic).
[[nodiscard]] int blocked_layout_block() noexcept;

/// Whether sessions run a QDQ model's quantized groups (DequantizeLinear -> Conv / Add /
/// MaxPool -> QuantizeLinear) on the executor's int8 kernels rather than in float: oneDNN is
/// in the build and serves (not INFEROPT_NN_GEMM=eigen or INFEROPT_NN_ISA=generic).
[[nodiscard]] bool int8_kernels_available() noexcept;

}  // namespace inferopt::runtime
