#pragma once
/// `to-fp16`: runs the float32 part of a graph in float16, with Casts where float16 and
/// float32 regions meet.
///
///   before:  x(f32) -> Conv(W f32) -> Relu -> TopK -> Mul(s f32) -> y(f32)
///   after:   x(f32) -> Cast(f16) -> Conv(W' f16) -> Relu -> Cast(f32) -> TopK -> Cast(f16)
///                   -> Mul(s' f16) -> Cast(f32) -> y(f32)
///
/// W' and s' are new float16 initializers: each float32 value is clamped to +-65504 (the
/// largest finite half; the number clamped is the `clamped-values` statistic) and rounded to
/// nearest even once. Infinities and NaN stay what they are. Constant and ConstantOfShape
/// nodes get their `value` tensor converted the same way. The original float32 initializer
/// is erased once nothing reads it.
///
/// A node is converted when all of these hold (otherwise it stays float32 and Casts
/// surround it):
///   1. it is in the default ONNX domain and has no subgraph;
///   2. its op is one whose float slots the pass knows (`float_slots` in the source): the
///      inputs and outputs typed 'T'. Slots that are not 'T' (Resize's roi and scales, shape
///      and axes inputs, MaxPool's indices) keep their types, so ops with such slots are
///      handled, not blocked; ops the pass does not know are left alone;
///   3. its op is not blocked: the default list names ops whose float16 form is missing or
///      fragile in common runtimes (Resize, Upsample, TopK, Range, NonMaxSuppression, RoiAlign,
///      the Random* family, RNN/LSTM/GRU, CumSum, Einsum), and `block-ops` adds to it;
///   4. its name is not in `block-nodes`;
///   5. every 'T' input present has known element type float32 (so a graph already in
///      float16 is left as it is, and running the pass twice changes nothing more), and
///      every 'T' output has type float32 or none recorded;
///   6. none of its 'T' outputs is read from a nested subgraph (the Cast back would have to
///      go into the enclosing node's body);
///   7. its definition at the model's opset accepts float16: Equal only does from opset 11,
///      and below it stays float32 (so the pass never needs a newer opset).
///
/// Boundaries: a converted node reading a float32 value that is not a constant (a graph
/// input, an output of a node left in float32, a value of an enclosing graph) reads it
/// through one shared Cast(to=FLOAT16), and a node left in float32 reading a float16 value
/// reads it through one shared Cast(to=FLOAT). Casts are inserted before their first reader,
/// so topological order holds.
///
/// Options (pipeline text `to-fp16{keep-io-types=1,block-ops=Resize;TopK,block-nodes=a;b}`):
///   - `keep-io-types` (default 1): graph inputs and outputs stay float32, with Casts at the
///     boundary, so callers keep feeding and reading float32; with 0, float32 graph inputs
///     read by converted nodes and graph outputs of converted nodes become float16;
///   - `block-ops`: `;`-separated op types kept in float32, added to the default list;
///   - `block-nodes`: `;`-separated node names kept in float32;
///   - `keep-norm-statistics` (default 1): a normalization written out as ops (LayerNorm or
///     RMSNorm below opset 17, L2 norms) keeps its squares and their sums float32: the Pow
///     (exponent 2), Mul(x, x), ReduceSumSquare or ReduceL2, and its sole readers among
///     ReduceMean, ReduceSum, Add and Sqrt up to the Sqrt. A square of |x| > 256 is
///     infinite in float16, and transformers' residual streams hold such values; the
///     standard deviation fits, so the division after it runs in float16. LayerNormalization,
///     Softmax and the fused norms need nothing: onnxruntime's and our float16 kernels
///     accumulate in float32 (onnxruntime on BERT-base with its token embeddings scaled to
///     std 200, max 1150: 3.5e-4 relative error with or without LayerNormalization and
///     Softmax blocked). Counted as `norm-statistics-kept`.
///
/// The pass runs on the main graph only (nodes with subgraphs stay float32, condition 1).
/// Values without a recorded type are typed through the known ops' 'T' slots; run
/// `infer-shapes` first on graphs whose intermediate values carry no types.

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "inferopt/pass/pass.hpp"

namespace inferopt {

class to_fp16 final : public pass {
 public:
  to_fp16();

  [[nodiscard]] std::string_view name() const noexcept override { return "to-fp16"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "convert float32 weights and computation to float16, with Casts at region boundaries";
  }
  bool run(ir::graph& g, pass_context& ctx) override;
  [[nodiscard]] bool runs_on_subgraphs() const noexcept override { return false; }

  /// Keys `keep-io-types` and `keep-norm-statistics` (0/1/true/false), `block-ops` and
  /// `block-nodes` (`;`-separated).
  /// @throws error(errc::invalid_argument) for another key or a malformed value.
  void set_option(std::string_view key, std::string_view value) override;
  [[nodiscard]] std::map<std::string, std::string> options() const override;

  /// The op types blocked without any option.
  [[nodiscard]] static const std::set<std::string, std::less<>>& default_blocked_ops();

 private:
  bool keep_io_types_ = true;
  bool keep_norm_statistics_ = true;
  std::set<std::string, std::less<>> blocked_ops_;    // always holds default_blocked_ops()
  std::set<std::string, std::less<>> extra_blocked_;  // what `block-ops` added, for options()
  std::set<std::string, std::less<>> blocked_nodes_;
};

}  // namespace inferopt
