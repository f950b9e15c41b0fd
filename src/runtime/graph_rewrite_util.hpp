#pragma once
// Pieces the session's own graph rewrites share (blocked_layout.cpp, int8_groups.cpp; private
// to src/runtime): attribute lists, and the input shape to ask oneDNN with before a run.
#include <cstdint>
#include <vector>

#include "inferopt/ir/graph.hpp"

namespace inferopt::runtime::detail {

// Spatial size assumed for dims unknown before a run, to ask oneDNN which kernel it would pick.
inline constexpr std::int64_t representative_spatial = 56;

/// One attribute as a node_spec's list (attributes move; an initializer list would copy).
inline std::vector<ir::attribute> only(ir::attribute a) {
  std::vector<ir::attribute> list;
  list.push_back(std::move(a));
  return list;
}

/// The static dims of `v` ([N, C, H, W]) with unknown ones replaced by representative values
/// (`channels` for C); empty when `v` is not known to be 4-D.
inline std::vector<std::int64_t> representative_shape(const ir::value& v, std::int64_t channels) {
  if (!v.type() || !v.type()->dims || v.type()->dims->size() != 4) return {};
  const auto& d = *v.type()->dims;
  auto dim_or = [&](std::size_t i, std::int64_t fallback) { return d[i].is_static() ? d[i].value() : fallback; };
  return {dim_or(0, 1), dim_or(1, channels), dim_or(2, representative_spatial), dim_or(3, representative_spatial)};
}

/// The input shape to ask oneDNN about a conv reading `x` of `channels` channels with: x's
/// dims where known, else one image of 56 x 56.
inline std::vector<std::int64_t> probe_shape(const ir::value& x, std::int64_t channels) {
  std::vector<std::int64_t> shape = representative_shape(x, channels);
  if (shape.empty()) shape = {1, channels, representative_spatial, representative_spatial};
  return shape;
}

}  // namespace inferopt::runtime::detail
