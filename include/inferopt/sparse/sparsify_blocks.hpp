#pragma once
/// `sparsify-blocks`: prunes the constant weight of a MatMul or Gemm to block sparsity by
/// magnitude and runs the product as `inferopt.BlockSparseMatMul` (docs/SPARSE_OPS.md).
///
///   before:  X -> MatMul(X, W)                 -> Y [-> Relu -> Z]
///            X -> Gemm(X, B, C; transB = t)    -> Y [-> Relu -> Z]
///   after:   X -> inferopt.BlockSparseMatMul(X, row_ptr, col_ind, values [, bias];
///                                            activation = "" or "Relu") -> Y (or Z)
///
/// Algebra: Y = act(X P(W) + bias), W the [K, N] weight as the product uses it (MatMul's B,
/// Gemm's B or B^T), P(W) the weight with its smallest blocks set to zero: the block grid of
/// `block` (rows along K, columns along N) is ranked by block norm and round(sparsity *
/// blocks) blocks go (sparse::prune_blocks; ties broken in the stored orientation). **This
/// changes the model's numbers**: it is not in any -O level, and the rewritten graph equals the
/// original only with P applied to its weight. The arrays hold P(W) as stored in the model: W
/// itself for MatMul and Gemm with transB = 0 (`transposed` = 0), B = W^T for transB = 1
/// (`transposed` = 1), so the rewrite needs no transpose. Gemm's C becomes the bias.
///
/// Conditions (each checked in `match` before anything is edited; a declined node stays as it
/// is and counts the statistic in brackets):
///   1. the node is a default-domain MatMul with inputs A, B; or a Gemm with inputs A, B and
///      optionally C, no attributes but alpha, beta, transA, transB, transA = 0, alpha = 1, and
///      beta = 1 when C is present [declined-attributes];
///   2. B is a constant (pass_context::is_constant) float32 tensor with data, and A's element
///      type is float32 or unknown [declined-not-constant, declined-type];
///   3. B is 2-D: a batched weight is declined; A's rank, when known, is at least 1 (MatMul)
///      or 2 (Gemm), and its last dim, when known, is K [declined-rank, declined-shape];
///   4. B has at least `min-size` elements: small products gain nothing [declined-small];
///   5. B holds no NaN, which has no magnitude to rank [declined-not-finite];
///   6. Gemm's C, when present, is a per-column bias: a float32 constant whose dims are all 1
///      but the last (1 or N), at most 2 of them, or a non-constant value of static shape
///      [N] [declined-bias];
///   7. the model imports no `inferopt` opset, or version 1 [declined-opset];
///   8. a per-node sparsity (sparsify_options::node_sparsity) of the node is not 0: a layer
///      given none stays a dense product [declined-dense].
/// A Relu that is the product's only reader, with an output that can keep its name
/// (detail::can_bypass), is folded into `activation` (`relus-fused`); any other reader stays.
/// The dense weight (and a reshaped C) is erased when nothing else reads it; one that an IR < 4
/// model also lists as a graph input stays for `remove-unused` to drop with its input.
///
/// 1x1 Conv is not matched: it would need a Transpose to NHWC and one back, which on our
/// executor cost more than the dense 1x1 Conv itself (README, sparse section).
///
/// The pass runs on the main graph only. Options (pipeline text
/// `sparsify-blocks{block=16x16,sparsity=0.75,min-size=65536,norm=l2,dry-run=0}`):
///   - `block` RxC or R (square), or `block-rows` / `block-cols`: extents in 1..64, default 16;
///   - `sparsity`: fraction of the block grid removed, in [0, 1], default 0.75;
///   - `min-size`: fewest weight elements worth rewriting, default 65536;
///   - `norm`: `l1` or `l2` (default) block norm;
///   - `dry-run`: `1`/`true` matches and counts (`would-sparsify`) but edits nothing.
/// `plan_sparsify` reports the same decisions node by node, with predicted speedups.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/pass/pass.hpp"
#include "inferopt/sparse/block_prune.hpp"
#include "inferopt/sparse/speedup_model.hpp"

namespace inferopt::sparse {

/// The options of `sparsify-blocks` (see the header comment).
struct sparsify_options {
  block_shape block;                 ///< on W as used, [K, N]: rows along K, columns along N
  double sparsity = 0.75;            ///< in [0, 1]
  std::int64_t min_size = 65536;     ///< weight elements, >= 0
  block_norm norm = block_norm::l2;
  bool dry_run = false;
  /// Sparsity of particular nodes (by label), in place of `sparsity`: set by code that has
  /// chosen a sparsity per layer (calibrated allocation); not in the pipeline text.
  std::map<std::string, double> node_sparsity;

  /// The sparsity `node` gets.
  [[nodiscard]] double sparsity_of(const ir::node& node) const;
};

/// What the pass decides for one MatMul or Gemm of the main graph.
struct sparsify_candidate {
  std::string node;               ///< the node's name; `#index (Op)` when it has none
  const ir::node* at = nullptr;   ///< the node itself, in the model the plan read
  std::string op_type;            ///< MatMul or Gemm
  std::int64_t k = 0;             ///< W as used is k x n (0 when the weight is not a 2-D constant)
  std::int64_t n = 0;
  bool transposed = false;        ///< the arrays store W^T (Gemm with transB = 1)
  std::int64_t blocks_total = 0;  ///< the block grid of W
  std::int64_t blocks_kept = 0;   ///< what stays: blocks_total - round(sparsity * blocks_total)
  double block_sparsity = 0.0;    ///< 1 - blocks_kept / blocks_total
  double predicted_speedup = 0.0; ///< sparse::predicted_speedup at block_sparsity; +inf when nothing is kept
  bool fuses_relu = false;        ///< a following Relu goes into the op
  std::string declined;           ///< empty when the node is rewritten; else the statistic, e.g. `declined-small`
};

/// The pass's decisions on `m`'s main graph, node by node (every MatMul and Gemm, in graph
/// order), without editing anything. Predicted speedups are against `baseline` (the CLI passes
/// the instruction set of the executor's dense GEMM, runtime::dense_gemm_isa()).
/// @throws error(errc::invalid_argument) for options out of range.
[[nodiscard]] std::vector<sparsify_candidate> plan_sparsify(const ir::model& m, const sparsify_options& options,
                                                            dense_baseline baseline);

/// Checks option values. @throws error(errc::invalid_argument) naming the option.
void check(const sparsify_options& options);

class sparsify_blocks final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "sparsify-blocks"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "prune constant MatMul/Gemm weights to block sparsity and run them as inferopt.BlockSparseMatMul (changes numbers)";
  }
  bool run(ir::graph& g, pass_context& ctx) override;
  [[nodiscard]] bool runs_on_subgraphs() const noexcept override { return false; }

  /// Keys `block`, `block-rows`, `block-cols`, `sparsity`, `min-size`, `norm`, `dry-run`.
  /// @throws error(errc::invalid_argument) for another key or a malformed or out-of-range value.
  void set_option(std::string_view key, std::string_view value) override;
  [[nodiscard]] std::map<std::string, std::string> options() const override;

  [[nodiscard]] const sparsify_options& settings() const noexcept { return options_; }
  /// Per-node sparsities in place of the `sparsity` option (sparsify_options::node_sparsity).
  void set_node_sparsity(std::map<std::string, double> by_node) { options_.node_sparsity = std::move(by_node); }

 private:
  sparsify_options options_;
};

}  // namespace inferopt::sparse
