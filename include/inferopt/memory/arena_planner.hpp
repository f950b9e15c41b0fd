#pragma once
/// Static memory planning: offsets for tensors with known lifetimes in one arena.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace inferopt::memory {

/// A tensor to place: `size` bytes, live from step `first_use` to step `last_use` inclusive.
struct tensor_lifetime {
  std::size_t id = 0;  ///< unique among the tensors of one plan
  std::size_t size = 0;
  std::size_t first_use = 0;
  std::size_t last_use = 0;
  /// In-place hint: this tensor may take the memory of tensor `*may_alias_input_of` when
  /// that tensor's last use is this tensor's first use (an elementwise op writing over its
  /// input). Honoured when the size fits and no other live tensor is in the way.
  std::optional<std::size_t> may_alias_input_of;
};

/// Where every tensor goes. Invariant (proved by `check_plan`): two tensors whose lifetimes
/// overlap never share a byte, except a tensor placed in place of its hinted input, which
/// lies within that input's bytes.
struct arena_plan {
  std::vector<std::size_t> offsets;             ///< offsets[i] belongs to tensors[i]
  std::vector<bool> in_place;                   ///< whether tensors[i] took its input's memory
  std::size_t arena_bytes = 0;                  ///< end of the highest placed tensor
  std::size_t naive_bytes = 0;                  ///< sum of aligned sizes (no reuse at all)
  std::size_t lower_bound_bytes = 0;            ///< max over steps of live aligned sizes
  std::size_t in_place_count = 0;
};

/// Plans offsets with the greedy-by-size heuristic of Pisarchyk & Lee (2020).
///
/// Strategy: take tensors from the largest down (ties: earlier first use, then input order).
/// Among the already placed tensors whose lifetimes overlap the current one, walk the gaps
/// in offset order and take the smallest gap that fits; when none fits, go above the highest
/// of them. Sizes and offsets are rounded to `alignment`. A tensor with an in-place hint first
/// tries its input's offset, which costs no new memory. `lower_bound_bytes` ignores in-place
/// reuse, so a plan with honoured hints can fall below it; without hints arena >= bound.
///
/// Preconditions: `alignment` is a power of two; first_use <= last_use; ids are unique and
/// hints name a tensor of the list. @throws inferopt::error(errc::invalid_argument).
/// Time O(n^2) in the number of tensors.
[[nodiscard]] inline arena_plan plan_arena(std::span<const tensor_lifetime> tensors, std::size_t alignment = 64);

/// Everything wrong with `plan` for `tensors`: overlapping live tensors, misaligned offsets,
/// tensors past the arena's end, a wrong number of offsets. Empty when the plan is valid.
[[nodiscard]] inline std::vector<std::string> check_plan(std::span<const tensor_lifetime> tensors,
                                                         const arena_plan& plan, std::size_t alignment = 64);

}  // namespace inferopt::memory

#include "inferopt/memory/detail/arena_planner_impl.hpp"
