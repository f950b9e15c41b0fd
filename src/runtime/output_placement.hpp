#pragma once
// How the session tells a kernel's allocate_output where its outputs go: into the session's
// arena at planned offsets (planned runs), and which outputs the kernel allocated at all
// (traced runs, which the plan is built from); likewise the step's scratch memory.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace inferopt::runtime::detail {

struct output_placement {
  static constexpr std::size_t unplanned = SIZE_MAX;
  std::vector<std::size_t> offsets;     ///< per output of the step: arena offset, or unplanned
  std::vector<std::size_t> capacities;  ///< per output: bytes the plan reserved
  std::byte* arena = nullptr;           ///< null in traced runs
  std::shared_ptr<const void> holder;   ///< keeps the arena alive in the tensors placed there
  std::vector<unsigned char> allocated;  ///< per output: allocate_output ran for it
  bool overflowed = false;              ///< an output or the scratch needed more than the plan reserved
  std::size_t scratch_offset = unplanned;  ///< the step's scratch in the arena, or unplanned
  std::size_t scratch_capacity = 0;        ///< bytes the plan reserved for it
  std::size_t scratch_used = 0;            ///< the most scratch the step asked for (traces)
};

}  // namespace inferopt::runtime::detail
