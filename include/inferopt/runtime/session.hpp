#pragma once
/// The reference CPU executor: runs an ir graph, op by op, following the ONNX specification.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/runtime/kernel.hpp"
#include "inferopt/runtime/tensor.hpp"

namespace inferopt::runtime {

namespace detail {
class buffer_pool;
class session_arena;
struct output_placement;
}

/// Called with every intermediate and output tensor as soon as it is computed. The tensor is
/// only valid during the call; copy what you keep.
using observer = std::function<void(std::string_view value_name, const tensor& value)>;

struct session_options {
  int threads = 0;                      ///< 0: every CPU this process may use; never more
  observer on_value;                    ///< none by default (and then no cost)
  const kernel_registry* kernels = nullptr;  ///< null: builtin_kernels()
  /// Place intermediate tensors by a static plan in one arena: the first run (and the first
  /// after input shapes change) is traced, later runs reuse the plan and the arena. Off:
  /// buffers of dead tensors are pooled and reused when they fit.
  bool memory_plan = true;
  /// Let the session rewrite its own copy of the graph for speed: chains of 2-D convolutions,
  /// pools and elementwise ops run on channel-blocked activations (oneDNN's nChw16c on
  /// AVX-512), reordered only where a chain starts and ends; a GELU after a linear layer runs
  /// in the layer's product; a QDQ model's quantized groups (DequantizeLinear -> Conv / Add /
  /// MaxPool / GlobalAveragePool -> QuantizeLinear, and Gemm) run on int8 kernels.
  /// Results are those of the graph as given (within float rounding; int8 outputs within
  /// one unit, as onnxruntime's int8 kernels give them).
  /// Not done with an observer (it sees every value as the model has it) or another registry.
  bool rewrite_graph = true;
  /// Let go of the outputs `run` returns: the caller then holds each one alone and may keep
  /// it without a copy (Python's arrays take the buffers over), and the next run allocates
  /// its outputs afresh instead of reusing the buffers of outputs the caller dropped.
  bool hand_over_outputs = false;
  /// With the rewrite: 3x3 stride-1 convolutions whose input shape is fixed and whose output
  /// has at least 14 x 14 pixels run oneDNN's Winograd kernel, F(2x2, 3x3), where the CPU has
  /// it (AVX-512): 1.5-2.2x faster than the direct one on ResNet-50's, but their weights take
  /// 16/9 the bytes at batch 1 and 4x at batch 8 (weight_memory() reports them). Off: the
  /// direct kernel everywhere, the smaller footprint.
  bool winograd = true;
};

/// The session's memory plan, for reports (all zero before a plan exists).
struct memory_plan_info {
  bool active = false;                ///< the last run placed tensors by the plan
  std::size_t arena_bytes = 0;        ///< one arena holds every planned intermediate
  std::size_t lower_bound_bytes = 0;  ///< most bytes planned tensors need at one step
  std::size_t naive_bytes = 0;        ///< sum of planned tensor sizes (no reuse)
  std::size_t planned_tensors = 0;
};

/// The weights a session holds, for reports.
struct weight_memory_info {
  /// Constants held as the model stores them (shared with the model while the caller keeps it).
  std::size_t initializer_bytes = 0;
  /// Copies kernels hold in their own layouts (after the first run, the initializers they
  /// replace are released: kernel::holds_own_copy).
  std::size_t kernel_bytes = 0;
};

/// A graph's description as the session sees it.
struct io_info {
  std::string name;
  data_type type = data_type::undefined;
  std::vector<ir::dim> shape;           ///< may hold symbolic dims
  bool has_shape = false;
  bool optional = false;                ///< an input with a default (initializer)
};

using tensor_map = std::map<std::string, tensor, std::less<>>;

/// Built once from a model; `run` may be called many times (not concurrently). Buffers of
/// intermediate tensors are kept between runs and reused when they fit.
class session {
 public:
  /// Copies the graph's structure (weights are shared, not copied) and builds every kernel.
  /// Where a kernel keeps its own reordered copy of a weight (the blocked convolutions), the
  /// session drops its reference to that initializer after the first run: a caller that then
  /// drops its model too holds those weights once.
  /// @throws error(errc::unsupported) listing every op without a kernel (op, domain, opset)
  ///         at once; error(errc::invalid_model) for attributes a kernel refuses.
  explicit session(const ir::model& m, session_options options = {});
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  /// Runs the graph. Inputs are checked by name, element type and rank/static dims; graph
  /// inputs with an initializer may be omitted.
  /// @throws error(errc::invalid_argument) naming the input or node that failed.
  tensor_map run(const tensor_map& inputs);

  /// The checks `run` makes on its inputs, without running: callers that do expensive work
  /// before the run (an optimizer's pipeline) can fail first.
  /// @throws error(errc::invalid_argument) naming the input, as `run` would.
  void check_inputs(const tensor_map& inputs) const;

  [[nodiscard]] const std::vector<io_info>& inputs() const noexcept { return inputs_; }
  [[nodiscard]] const std::vector<io_info>& outputs() const noexcept { return outputs_; }
  [[nodiscard]] int threads() const noexcept { return threads_; }

  [[nodiscard]] memory_plan_info memory_plan() const;
  [[nodiscard]] weight_memory_info weight_memory() const;

  /// Time spent per op type in the last `run` when profiling is on (milliseconds).
  void set_profiling(bool on) { profiling_ = on; }
  [[nodiscard]] const std::map<std::string, double>& profile() const noexcept { return profile_; }
  /// Time spent in each node in the last `run` when profiling is on (milliseconds, keyed by
  /// ir::node::label()): the per-layer latency table of latency-aware pruning.
  [[nodiscard]] const std::map<std::string, double>& node_profile() const noexcept { return node_profile_; }

 private:
  struct step;
  struct run_state;
  void prepare(const ir::graph& g, const kernel_registry& kernels);
  void add_slots(const ir::graph& g);
  /// Builds a step per node; returns, per slot, the last step that reads it (SIZE_MAX: none).
  std::vector<std::size_t> add_steps(const ir::graph& g, const kernel_registry& kernels);
  void bind_inputs(const tensor_map& feeds);
  run_state begin_run();
  void run_step(std::size_t step_index, run_state& r);
  void store_outputs(const step& s, std::vector<tensor>& outs);
  void finish_run(const run_state& r);
  /// The constants (not graph inputs or outputs) steps read, with their readers.
  void find_releasable_constants();
  /// After the first run: drops the session's references to the constants whose readers all
  /// hold their own copy (kernel::holds_own_copy).
  void release_copied_constants();

  std::unique_ptr<ir::graph> graph_;
  std::int64_t opset_ = 0;
  std::map<std::string, std::int64_t> domain_opsets_;
  session_options options_;
  int threads_ = 1;
  std::vector<io_info> inputs_;
  std::vector<io_info> outputs_;
  std::vector<step> steps_;
  std::vector<tensor> slots_;             // one per value
  std::vector<bool> is_constant_slot_;
  std::map<std::string, std::size_t, std::less<>> slot_of_;
  std::vector<std::size_t> output_slots_;
  struct constant_readers {
    std::size_t slot;
    std::string name;
    std::vector<std::pair<std::size_t, std::size_t>> readers;  // (step, input position)
  };
  std::vector<constant_readers> releasable_;  // until the first run ends
  std::unique_ptr<detail::buffer_pool> pool_;
  std::unique_ptr<detail::session_arena> arena_;
  std::unique_ptr<detail::output_placement> placement_;
  bool planned_last_run_ = false;
  bool profiling_ = false;
  std::map<std::string, double> profile_;
  std::map<std::string, double> node_profile_;
};

/// Reads a serialized TensorProto file (`input_0.pb`).
[[nodiscard]] tensor read_tensor_file(const std::string& path, std::string* name = nullptr);
/// Writes a tensor as a serialized TensorProto (atomic).
void write_tensor_file(const std::string& path, const tensor& t, const std::string& name);

}  // namespace inferopt::runtime
