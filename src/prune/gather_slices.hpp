#pragma once
// Rebuilding a constant along one axis from its own slices: what cutting channels (fewer
// slices) and reordering units (the same slices, moved) both do to weights and biases.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/tensor.hpp"

namespace inferopt::prune {

/// `t` with `count` slices along `axis`: for each outer index o, `sources_of(o)` lists the
/// slices of `t` to take, in order. Works on raw bytes, so any fixed-size element type is fine.
template <class SourcesOf>
ir::tensor gather_slices(const ir::tensor& t, std::int64_t axis, std::int64_t count, SourcesOf sources_of) {
  const auto a = static_cast<std::size_t>(axis);
  std::int64_t inner = 1;
  for (std::size_t i = a + 1; i < t.dims.size(); ++i) inner *= t.dims[i];
  const std::int64_t slices = t.dims[a] * inner;
  const std::int64_t outer = slices > 0 ? t.element_count() / slices : 0;
  const std::size_t element = t.element_count() > 0 ? t.byte_size() / static_cast<std::size_t>(t.element_count()) : 0;
  const std::size_t slice_bytes = static_cast<std::size_t>(inner) * element;
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(outer * count) * slice_bytes);
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t c : sources_of(o)) bytes.append(t.bytes->data() + (o * t.dims[a] + c) * slice_bytes, slice_bytes);
  }
  expects(bytes.size() == static_cast<std::size_t>(outer * count) * slice_bytes, "every outer index takes as many slices");
  ir::tensor out = t;
  out.dims[a] = count;
  out.storage = ir::tensor_storage::raw;
  out.bytes = std::make_shared<const std::string>(std::move(bytes));
  return out;
}

}  // namespace inferopt::prune
