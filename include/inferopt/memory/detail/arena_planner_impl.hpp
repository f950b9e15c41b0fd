#pragma once
// The definitions of plan_arena and check_plan. Included by arena_planner.hpp; include that
// instead.

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

#include "inferopt/core/error.hpp"
#include "inferopt/memory/arena_planner.hpp"
#include "inferopt/memory/detail/arithmetic.hpp"

namespace inferopt::memory::detail {

inline bool lifetimes_overlap(const tensor_lifetime& a, const tensor_lifetime& b) {
  return a.first_use <= b.last_use && b.first_use <= a.last_use;
}

// Index of each tensor's hinted input when the hint can apply at all (the input dies at the
// step the tensor is born); npos otherwise.
inline constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

inline std::vector<std::size_t> alias_targets(std::span<const tensor_lifetime> tensors) {
  std::unordered_map<std::size_t, std::size_t> index_of;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    expects(index_of.emplace(tensors[i].id, i).second, "tensor ids must be unique");
  }
  std::vector<std::size_t> target(tensors.size(), npos);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& hint = tensors[i].may_alias_input_of;
    if (!hint) continue;
    auto it = index_of.find(*hint);
    expects(it != index_of.end(), "may_alias_input_of names an unknown tensor");
    if (it->second != i && tensors[it->second].last_use == tensors[i].first_use) target[i] = it->second;
  }
  return target;
}

// True when tensor i, at `offset`, would share a byte with a placed tensor whose lifetime
// overlaps; `allowed` (the in-place input) is exempt.
inline bool collides(std::span<const tensor_lifetime> tensors, const std::vector<std::size_t>& sizes,
              const std::vector<std::size_t>& placed, const std::vector<std::size_t>& offsets, std::size_t i,
              std::size_t offset, std::size_t allowed) {
  for (std::size_t j : placed) {
    if (j == allowed || !lifetimes_overlap(tensors[i], tensors[j])) continue;
    if (offset < offsets[j] + sizes[j] && offsets[j] < offset + sizes[i]) return true;
  }
  return false;
}

}  // namespace inferopt::memory::detail

namespace inferopt::memory {

inline arena_plan plan_arena(std::span<const tensor_lifetime> tensors, std::size_t alignment) {
  expects(detail::is_power_of_two(alignment), "alignment must be a power of two");
  for (const auto& t : tensors) expects(t.first_use <= t.last_use, "first_use must not come after last_use");
  const std::vector<std::size_t> alias = detail::alias_targets(tensors);

  const std::size_t n = tensors.size();
  std::vector<std::size_t> sizes(n);
  for (std::size_t i = 0; i < n; ++i) sizes[i] = detail::round_up(tensors[i].size, alignment);

  arena_plan plan;
  plan.offsets.assign(n, 0);
  plan.in_place.assign(n, false);
  plan.naive_bytes = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
  std::map<std::size_t, std::size_t> live_delta;  // step -> change of live bytes
  for (std::size_t i = 0; i < n; ++i) {
    live_delta[tensors[i].first_use] += sizes[i];
    live_delta[tensors[i].last_use + 1] -= sizes[i];  // unsigned wrap-around cancels in the sum
  }
  std::size_t live = 0;
  for (const auto& [step, delta] : live_delta) plan.lower_bound_bytes = std::max(plan.lower_bound_bytes, live += delta);

  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (sizes[a] != sizes[b]) return sizes[a] > sizes[b];
    return tensors[a].first_use < tensors[b].first_use;
  });

  std::vector<std::size_t> placed;  // indices, kept sorted by offset
  std::vector<bool> is_placed(n, false);
  for (std::size_t i : order) {
    std::size_t offset = detail::npos;
    const std::size_t input = alias[i];
    if (input != detail::npos && is_placed[input] && sizes[i] <= sizes[input] &&
        !detail::collides(tensors, sizes, placed, plan.offsets, i, plan.offsets[input], input)) {
      offset = plan.offsets[input];
      plan.in_place[i] = true;
      plan.in_place_count += 1;
    } else {
      // Smallest gap between overlapping neighbours that fits, else above all of them.
      std::size_t gap_start = 0;
      std::size_t best_gap = detail::npos;
      for (std::size_t j : placed) {
        if (!detail::lifetimes_overlap(tensors[i], tensors[j])) continue;
        if (plan.offsets[j] >= gap_start) {
          const std::size_t gap = plan.offsets[j] - gap_start;
          if (gap >= sizes[i] && gap < best_gap) {
            best_gap = gap;
            offset = gap_start;
          }
        }
        gap_start = std::max(gap_start, plan.offsets[j] + sizes[j]);
      }
      if (offset == detail::npos) offset = gap_start;
    }
    plan.offsets[i] = offset;
    is_placed[i] = true;
    auto pos = std::upper_bound(placed.begin(), placed.end(), offset,
                                [&](std::size_t off, std::size_t j) { return off < plan.offsets[j]; });
    placed.insert(pos, i);
    plan.arena_bytes = std::max(plan.arena_bytes, offset + sizes[i]);
  }
  return plan;
}

inline std::vector<std::string> check_plan(std::span<const tensor_lifetime> tensors, const arena_plan& plan,
                                           std::size_t alignment) {
  std::vector<std::string> problems;
  if (plan.offsets.size() != tensors.size() || plan.in_place.size() != tensors.size()) {
    problems.push_back("plan has " + std::to_string(plan.offsets.size()) + " offsets for " +
                       std::to_string(tensors.size()) + " tensors");
    return problems;
  }
  auto name = [&](std::size_t i) { return "tensor " + std::to_string(tensors[i].id); };
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (alignment != 0 && plan.offsets[i] % alignment != 0) {
      problems.push_back(name(i) + ": offset " + std::to_string(plan.offsets[i]) + " is not aligned to " +
                         std::to_string(alignment));
    }
    if (plan.offsets[i] + tensors[i].size > plan.arena_bytes) {
      problems.push_back(name(i) + ": ends past the arena of " + std::to_string(plan.arena_bytes) + " bytes");
    }
  }
  // An in-place tensor may overlap only its hinted input, only at the step the input dies,
  // and only within the input's bytes.
  auto legal_alias = [&](std::size_t a, std::size_t b) {
    if (!plan.in_place[a] || tensors[a].may_alias_input_of != tensors[b].id) return false;
    return tensors[b].last_use == tensors[a].first_use && plan.offsets[a] >= plan.offsets[b] &&
           plan.offsets[a] + tensors[a].size <=
               plan.offsets[b] + detail::round_up(tensors[b].size, std::max<std::size_t>(alignment, 1));
  };
  for (std::size_t a = 0; a < tensors.size(); ++a) {
    for (std::size_t b = a + 1; b < tensors.size(); ++b) {
      if (!detail::lifetimes_overlap(tensors[a], tensors[b])) continue;
      const bool bytes_overlap = plan.offsets[a] < plan.offsets[b] + tensors[b].size &&
                                 plan.offsets[b] < plan.offsets[a] + tensors[a].size;
      if (bytes_overlap && !legal_alias(a, b) && !legal_alias(b, a)) {
        problems.push_back(name(a) + " and " + name(b) + " are live together and overlap in memory");
      }
    }
  }
  return problems;
}

}  // namespace inferopt::memory
