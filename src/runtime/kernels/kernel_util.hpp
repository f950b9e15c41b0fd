#pragma once
// Shared pieces of the kernels: numpy broadcasting, axis handling, dtype dispatch and
// parallel loops. Private to src/runtime (installed only because kernels of later modules
// use them too).

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "inferopt/ir/shape_rules.hpp"
#include "inferopt/runtime/kernel.hpp"

namespace inferopt::runtime::detail {

/// Runs one of the shape rules the executor shares with shape inference (ir/shape_rules.hpp),
/// turning its complaint into this node's error.
template <class Rule>
auto apply_shape_rule(const kernel_context& ctx, Rule&& rule) -> decltype(rule()) {
  try {
    return rule();
  } catch (const error& e) {
    ctx.fail(e.what());
  }
}

/// numpy broadcasting of several shapes. @throws via ctx.fail when they do not broadcast.
inline shape_t broadcast_shapes(const kernel_context& ctx, const std::vector<const shape_t*>& shapes) {
  shape_t out;
  for (const shape_t* s : shapes) {
    try {
      out = ir::shape_rules::broadcast<std::int64_t>(out, *s);
    } catch (const error&) {
      ctx.fail("shapes " + to_string(*shapes.front()) + " and " + to_string(*s) + " do not broadcast");
    }
  }
  return out;
}

/// Element strides of `in` viewed with the output's rank, 0 along broadcast dims.
inline std::vector<std::int64_t> broadcast_strides(const shape_t& in, const shape_t& out) {
  std::vector<std::int64_t> strides(out.size(), 0);
  std::int64_t stride = 1;
  for (std::size_t k = in.size(); k-- > 0;) {
    const std::size_t o = out.size() - in.size() + k;
    strides[o] = in[k] == 1 ? 0 : stride;
    stride *= in[k];
  }
  return strides;
}

/// Row-major strides of a shape.
inline std::vector<std::int64_t> strides_of(const shape_t& shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  for (std::size_t k = shape.size(); k-- > 1;) strides[k - 1] = strides[k] * shape[k];
  return strides;
}

/// Walks an output index space in row-major order while tracking offsets into several
/// broadcast inputs; calls fn(out_index, offsets...) through `visit`.
class broadcast_walker {
 public:
  broadcast_walker(const shape_t& out, std::vector<std::vector<std::int64_t>> input_strides)
      : out_(out), strides_(std::move(input_strides)), index_(out.size(), 0), offsets_(strides_.size(), 0) {}

  [[nodiscard]] const std::vector<std::int64_t>& offsets() const noexcept { return offsets_; }
  void next() {
    for (std::size_t k = out_.size(); k-- > 0;) {
      ++index_[k];
      for (std::size_t i = 0; i < strides_.size(); ++i) offsets_[i] += strides_[i][k];
      if (index_[k] < out_[k]) return;
      for (std::size_t i = 0; i < strides_.size(); ++i) offsets_[i] -= strides_[i][k] * index_[k];
      index_[k] = 0;
    }
  }
  /// Moves to the position of flat output index `flat`.
  void seek(std::int64_t flat) {
    for (std::size_t i = 0; i < offsets_.size(); ++i) offsets_[i] = 0;
    for (std::size_t k = out_.size(); k-- > 0;) {
      const std::int64_t d = out_[k] == 0 ? 1 : out_[k];
      index_[k] = flat % d;
      flat /= d;
      for (std::size_t i = 0; i < strides_.size(); ++i) offsets_[i] += strides_[i][k] * index_[k];
    }
  }

 private:
  shape_t out_;
  std::vector<std::vector<std::int64_t>> strides_;
  std::vector<std::int64_t> index_;
  std::vector<std::int64_t> offsets_;
};

/// Resolves a possibly negative axis against a rank; fails naming the node when out of range.
inline std::size_t normalize_axis(const kernel_context& ctx, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

/// Product of dims [from, to).
inline std::int64_t product(const shape_t& s, std::size_t from = 0, std::size_t to = SIZE_MAX) {
  std::int64_t p = 1;
  for (std::size_t k = from; k < s.size() && k < to; ++k) p *= s[k];
  return p;
}

/// Calls fn(T{}) with T the C++ type of a numeric element type; bool maps to uint8_t storage
/// semantics as `bool`. Fails for types outside `Ts`.
template <class... Ts, class Fn>
void dispatch(const kernel_context& ctx, data_type t, Fn&& fn) {
  bool done = false;
  ((t == ir::data_type_of<Ts>() ? (fn(Ts{}), done = true) : false), ...);
  if (!done) ctx.fail("element type " + std::string(ir::to_string(t)) + " is not supported");
}

/// The numeric types most kernels accept.
#define INFEROPT_NUMERIC_TYPES float, double, std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t, \
                               std::uint32_t, std::int64_t, std::uint64_t

/// Runs fn(begin, end) over [0, n) split across `threads` (OpenMP), serially for small n.
template <class Fn>
void parallel_for(int threads, std::int64_t n, std::int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  const std::int64_t chunks = std::min<std::int64_t>(threads, (n + grain - 1) / std::max<std::int64_t>(grain, 1));
  if (chunks <= 1) {
    fn(std::int64_t{0}, n);
    return;
  }
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t begin = n * c / chunks;
    const std::int64_t end = n * (c + 1) / chunks;
    fn(begin, end);
  }
}

}  // namespace inferopt::runtime::detail
