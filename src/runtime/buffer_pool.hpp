#pragma once
// Buffers of intermediate tensors that died, kept for reuse within a run and across runs.
// A stand-in until the memory module's static arena planner drives the executor.

#include <map>

#include "inferopt/runtime/tensor.hpp"

namespace inferopt::runtime::detail {

class buffer_pool {
 public:
  /// Keeps `t`'s buffer if nobody else references it.
  void give(tensor&& t) {
    if (!t.owns_storage_alone() || t.capacity() == 0) return;
    free_.emplace(t.capacity(), std::move(t));
  }
  /// A tensor of this type and shape on a pooled buffer at most twice the size needed, or
  /// a fresh allocation.
  tensor take(data_type type, const shape_t& shape) {
    const std::int64_t n = element_count_checked(shape);
    const std::size_t bytes = static_cast<std::size_t>(n) * ir::element_size(type);
    auto it = free_.lower_bound(std::max<std::size_t>(bytes, 1));
    if (it != free_.end() && it->first <= 2 * std::max<std::size_t>(bytes, 64)) {
      tensor t = std::move(it->second);
      free_.erase(it);
      if (t.try_reuse(type, shape)) return t;
    }
    return tensor(type, shape);
  }
  void clear() { free_.clear(); }

 private:
  std::multimap<std::size_t, tensor> free_;  // capacity -> tensor owning that buffer alone
};

}  // namespace inferopt::runtime::detail
