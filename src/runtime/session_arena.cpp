#include "session_arena.hpp"

#include <algorithm>

#include "inferopt/memory/arena_planner.hpp"
#include "inferopt/memory/host_resource.hpp"

namespace inferopt::runtime::detail {

namespace {
constexpr std::size_t arena_alignment = 64;  // what every kernel may assume of a tensor
}

session_arena::session_arena(std::vector<std::size_t> last_read, std::vector<bool> keep, std::vector<std::size_t> in_place_of)
    : last_read_(std::move(last_read)), keep_(std::move(keep)), in_place_of_(std::move(in_place_of)) {
  in_place_of_.resize(last_read_.size(), none);
}

bool session_arena::select(const std::vector<shape_t>& input_shapes) {
  const auto found = std::find_if(plans_.begin(), plans_.end(), [&](const plan& p) { return p.input_shapes == input_shapes; });
  if (found == plans_.end()) return false;
  std::rotate(plans_.begin(), found, std::next(found));
  return true;
}

void session_arena::invalidate() noexcept {
  if (!plans_.empty()) plans_.erase(plans_.begin());
}

void session_arena::begin_trace(std::vector<shape_t> input_shapes) {
  const std::size_t n = last_read_.size();
  group_of_.assign(n, none);
  bytes_.assign(n, 0);
  first_.assign(n, 0);
  last_.assign(n, 0);
  plannable_.assign(n, false);
  scratch_.clear();
  traced_shapes_ = std::move(input_shapes);
}

void session_arena::trace_step(std::size_t step, std::span<const std::size_t> input_slots,
                               std::span<const tensor* const> inputs, std::span<const std::size_t> output_slots,
                               std::span<const tensor> outputs, std::span<const unsigned char> allocated,
                               std::size_t scratch_bytes) {
  if (scratch_bytes > 0) scratch_.emplace_back(step, scratch_bytes);
  for (std::size_t k = 0; k < output_slots.size(); ++k) {
    const std::size_t s = output_slots[k];
    if (s == none || outputs[k].empty()) continue;
    const std::size_t last = last_read_[s] == none ? step : std::max(step, last_read_[s]);
    // A view of an input joins that input's group (or, for a view of a constant or a graph
    // input, of nothing we plan).
    std::size_t base = none;
    bool is_view = false;
    for (std::size_t j = 0; j < inputs.size(); ++j) {
      if (inputs[j] != nullptr && outputs[k].shares_storage_with(*inputs[j])) {
        is_view = true;
        base = input_slots[j] == none ? none : group_of_[input_slots[j]];
        break;
      }
    }
    if (is_view) {
      group_of_[s] = base;
      if (base != none) {
        last_[base] = std::max(last_[base], last);
        if (keep_[s]) plannable_[base] = false;  // the caller would get memory we reuse
      }
      continue;
    }
    if (k >= allocated.size() || !allocated[k]) continue;  // not ours to place (a constant)
    group_of_[s] = s;
    bytes_[s] = outputs[k].byte_size();
    first_[s] = step;
    last_[s] = last;
    plannable_[s] = !keep_[s] && bytes_[s] > 0;
  }
}

std::optional<std::size_t> session_arena::in_place_hint(std::size_t s) const {
  const std::size_t input = in_place_of_[s];
  const std::size_t group = input == none ? none : group_of_[input];
  // The input's whole group must die where s is made; a view of it read later keeps it alive.
  if (group == none || !plannable_[group] || last_[group] != first_[s]) return std::nullopt;
  return group;
}

void session_arena::finish_trace() {
  std::vector<memory::tensor_lifetime> tensors;
  for (std::size_t s = 0; s < group_of_.size(); ++s) {
    if (group_of_[s] == s && plannable_[s]) tensors.push_back({s, bytes_[s], first_[s], last_[s], in_place_hint(s)});
  }
  const std::size_t slot_tensors = tensors.size();
  // Scratch ids follow the slots' ids, so that every id is unique.
  for (std::size_t k = 0; k < scratch_.size(); ++k) {
    const auto [step, bytes] = scratch_[k];
    tensors.push_back({group_of_.size() + k, bytes, step, step, std::nullopt});
  }
  const memory::arena_plan planned = memory::plan_arena(tensors, arena_alignment);
  plan made{std::move(traced_shapes_), std::vector<std::size_t>(group_of_.size(), none), std::vector<std::size_t>(group_of_.size(), 0),
            {}, {}, {planned.arena_bytes, planned.lower_bound_bytes, planned.naive_bytes, slot_tensors}};
  for (std::size_t i = 0; i < slot_tensors; ++i) {
    made.offset[tensors[i].id] = planned.offsets[i];
    made.capacity[tensors[i].id] = tensors[i].size;
  }
  if (!scratch_.empty()) {
    made.scratch_offset.assign(scratch_.back().first + 1, none);
    made.scratch_capacity.assign(scratch_.back().first + 1, 0);
  }
  for (std::size_t i = slot_tensors; i < tensors.size(); ++i) {
    made.scratch_offset[tensors[i].first_use] = planned.offsets[i];
    made.scratch_capacity[tensors[i].first_use] = tensors[i].size;
  }
  if (planned.arena_bytes > arena_capacity_) {
    arena_.reset();  // tensors of earlier runs that still hold it keep it alive
    auto resource = std::make_shared<memory::host_resource>();
    const std::size_t bytes = planned.arena_bytes;
    void* p = resource->allocate(bytes, arena_alignment);
    arena_ = std::shared_ptr<void>(p, [resource, bytes](void* q) { resource->deallocate(q, bytes, arena_alignment); });
    arena_capacity_ = bytes;
  }
  std::erase_if(plans_, [&](const plan& p) { return p.input_shapes == made.input_shapes; });
  if (plans_.size() == max_plans) plans_.pop_back();
  plans_.insert(plans_.begin(), std::move(made));
}

void session_arena::place(std::size_t step, std::span<const std::size_t> output_slots,
                          output_placement& placement) const {
  const plan& current = plans_.front();
  const std::size_t n = output_slots.size();
  placement.offsets.assign(n, output_placement::unplanned);
  placement.capacities.assign(n, 0);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t s = output_slots[k];
    if (s == none || current.offset[s] == none) continue;
    placement.offsets[k] = current.offset[s];
    placement.capacities[k] = current.capacity[s];
  }
  const bool has_scratch = step < current.scratch_offset.size();
  placement.scratch_offset = has_scratch ? current.scratch_offset[step] : output_placement::unplanned;
  placement.scratch_capacity = has_scratch ? current.scratch_capacity[step] : 0;
}

}  // namespace inferopt::runtime::detail
