#include "reshape_mapping.hpp"

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/shapes.hpp"
#include "inferopt/ir/value.hpp"

namespace inferopt::prune {
namespace {

ir::sym_dim product(const ir::sym_shape& s, std::size_t from, std::size_t to) {
  ir::sym_dim p = 1;
  for (std::size_t i = from; i < to; ++i) p = p * s[i];
  return p;
}

/// What one target value means: -1 infers, 0 copies (unless allowzero), others are sizes.
std::optional<target_entry> entry_of(std::int64_t value, bool copies_axis, bool allow_zero, target_entry site) {
  if (value == -1 || (value == 0 && !allow_zero && copies_axis)) return target_entry{true};
  if (value <= 0) return std::nullopt;
  return site;
}

}  // namespace

std::optional<reshape_mapping> map_reshape_axis(const ir::sym_shape& in, std::size_t axis, std::int64_t channels,
                                                const ir::sym_shape& out) {
  if (axis >= in.size() || !(in[axis] == ir::sym_dim(channels))) return std::nullopt;
  const ir::sym_dim before = product(in, 0, axis);
  const ir::sym_dim after = product(in, axis + 1, in.size());
  const auto block = after.constant();
  // Axes of size 1 make several readings fit ([1, H, S, D] -> [1, H, S, D] also reads as a
  // split of H into [1, H]): a move or fold is taken before any split, and a split needs
  // several groups.
  for (std::size_t b = 0; b < out.size(); ++b) {
    if (!(product(out, 0, b) == before)) continue;
    if (out[b] == in[axis] && product(out, b + 1, out.size()) == after) return reshape_mapping{reshape_kind::move, b};
    if (block && out[b] == ir::sym_dim(channels * *block) && product(out, b + 1, out.size()).is(1)) {
      return reshape_mapping{reshape_kind::fold, b, *block};
    }
  }
  for (std::size_t b = 0; b + 1 < out.size(); ++b) {
    const auto groups = out[b].constant();
    const auto width = out[b + 1].constant();
    if (product(out, 0, b) == before && groups && width && *groups > 1 && *width > 1 && *groups * *width == channels &&
        product(out, b + 2, out.size()) == after) {
      return reshape_mapping{reshape_kind::split, b, 1, *width};
    }
  }
  return std::nullopt;
}

std::optional<target_entry> reshape_target_entry(const ir::node& n, std::size_t entry, bool copies_axis,
                                                 std::int64_t ir_version) {
  const ir::value* target = n.input(1);
  const bool allow_zero = n.attr_int("allowzero", 0) != 0;
  if (const auto values = ir::constant_ints(target, ir_version)) {
    if (entry >= values->size()) return std::nullopt;
    return entry_of((*values)[entry], copies_axis, allow_zero, target_entry{false, &n, 1, static_cast<std::int64_t>(entry)});
  }
  // torch's exporter with dynamic axes: Concat(Unsqueeze(Gather(Shape(x))), ..., [-1], [64]).
  const ir::node* concat = target ? target->producer() : nullptr;
  if (!concat || !concat->is("Concat") || target->uses().size() != 1 || target->is_graph_output()) return std::nullopt;
  std::size_t start = 0;
  for (std::size_t i = 0; i < concat->inputs().size(); ++i) {
    const auto size = ir::static_dim(concat->input(i), 0);
    if (!size || ir::known_rank(concat->input(i)) != 1) return std::nullopt;
    const std::size_t end = start + static_cast<std::size_t>(*size);
    if (entry < end) {
      const auto piece = ir::constant_ints(concat->input(i), ir_version);
      if (!piece) return std::nullopt;
      const auto index = static_cast<std::int64_t>(entry - start);
      return entry_of((*piece)[static_cast<std::size_t>(index)], copies_axis, allow_zero, target_entry{false, concat, i, index});
    }
    start = end;
  }
  return std::nullopt;
}

}  // namespace inferopt::prune
