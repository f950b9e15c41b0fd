#pragma once
// The executor's static memory plan. One run is traced: which outputs each kernel allocated,
// how many bytes, and which outputs are views of an input (Reshape and friends share their
// input's storage). Views join their input's group, so a group lives from the step that
// allocated it to the last read of any member. The groups are planned into one arena with the
// memory module's greedy-by-size planner, and later runs with the same input shapes place
// every planned output at its offset. Groups that reach a graph output (the caller keeps
// those), and outputs a kernel did not allocate (constants), stay on the heap. A step's
// scratch memory (kernel_context::scratch) is planned as a tensor living for that step only.
//
// A plan is kept per set of input shapes, the `max_plans` most recently used: a server's
// batches come in a few sizes, and one plan for all would trace again at every change of
// size. The plans share one arena, as large as the largest needs.

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "inferopt/runtime/tensor.hpp"
#include "output_placement.hpp"

namespace inferopt::runtime::detail {

/// Sizes of the current plan, for reports.
struct arena_stats {
  std::size_t arena_bytes = 0;
  std::size_t lower_bound_bytes = 0;
  std::size_t naive_bytes = 0;
  std::size_t planned_tensors = 0;
};

class session_arena {
 public:
  /// `last_read[s]`: the last step reading slot s (or SIZE_MAX); `keep[s]`: slot s is a graph
  /// output or constant, never planned; `in_place_of[s]` (empty, or SIZE_MAX per slot for
  /// none): the input slot whose memory slot s may take when that input dies where s is made.
  session_arena(std::vector<std::size_t> last_read, std::vector<bool> keep, std::vector<std::size_t> in_place_of = {});

  static constexpr std::size_t max_plans = 8;

  /// Makes the plan for these input shapes the current one; false when there is none.
  [[nodiscard]] bool select(const std::vector<shape_t>& input_shapes);

  void begin_trace(std::vector<shape_t> input_shapes);
  /// Records step `step` once its kernel ran, with the scratch bytes it asked for.
  void trace_step(std::size_t step, std::span<const std::size_t> input_slots, std::span<const tensor* const> inputs,
                  std::span<const std::size_t> output_slots, std::span<const tensor> outputs,
                  std::span<const unsigned char> allocated, std::size_t scratch_bytes);
  /// Plans the traced groups and makes sure the arena is large enough.
  void finish_trace();
  /// Drops the current plan (an output outgrew its place); the next run traces again.
  void invalidate() noexcept;

  /// The arena's memory (valid while a plan is) and what keeps it alive.
  [[nodiscard]] std::byte* base() const noexcept { return static_cast<std::byte*>(arena_.get()); }
  [[nodiscard]] const std::shared_ptr<void>& holder() const noexcept { return arena_; }
  /// Fills `placement`'s offsets for step `step` of a planned run.
  void place(std::size_t step, std::span<const std::size_t> output_slots, output_placement& placement) const;

  /// The current plan's sizes (zeros before the first).
  [[nodiscard]] const arena_stats& stats() const noexcept { return plans_.empty() ? no_plan_ : plans_.front().stats; }

 private:
  struct plan {
    std::vector<shape_t> input_shapes;
    // Per slot, offset and capacity (none for slots that stay on the heap).
    std::vector<std::size_t> offset, capacity;
    // Per step (up to the last that asked for scratch), its scratch's offset and capacity.
    std::vector<std::size_t> scratch_offset, scratch_capacity;
    arena_stats stats;
  };

  static constexpr std::size_t none = SIZE_MAX;

  /// The group whose memory slot s may take: its in_place_of input's, when that dies at s's step.
  [[nodiscard]] std::optional<std::size_t> in_place_hint(std::size_t s) const;
  std::vector<std::size_t> last_read_;
  std::vector<bool> keep_;
  std::vector<std::size_t> in_place_of_;
  // Trace: per slot, the slot whose allocation it lives in (itself for an allocation), or none.
  std::vector<std::size_t> group_of_;
  std::vector<std::size_t> bytes_;   // per group root: bytes allocated
  std::vector<std::size_t> first_;   // per group root: allocating step
  std::vector<std::size_t> last_;    // per group root: last step any member is read
  std::vector<bool> plannable_;      // per group root
  std::vector<std::pair<std::size_t, std::size_t>> scratch_;  // (step, bytes) of steps that asked
  std::vector<shape_t> traced_shapes_;
  std::vector<plan> plans_;  // the current one first, then by last use
  std::shared_ptr<void> arena_;
  std::size_t arena_capacity_ = 0;
  arena_stats no_plan_;
};

}  // namespace inferopt::runtime::detail
