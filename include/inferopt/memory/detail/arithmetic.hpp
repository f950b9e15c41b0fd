#pragma once
// Size arithmetic the resources and the planner share.

#include <cstddef>

namespace inferopt::memory::detail {

// n rounded up to a multiple of `multiple` (> 0). Wraps around for n within `multiple` of
// SIZE_MAX; host_resource, which maps what it is asked for, checks for that.
[[nodiscard]] constexpr std::size_t round_up(std::size_t n, std::size_t multiple) noexcept {
  return (n + multiple - 1) / multiple * multiple;
}

[[nodiscard]] constexpr bool is_power_of_two(std::size_t n) noexcept { return n != 0 && (n & (n - 1)) == 0; }

}  // namespace inferopt::memory::detail
