#pragma once
// The definitions of caching_pool. Included by caching_pool.hpp; include that instead.

#include <algorithm>
#include <bit>
#include <cassert>
#include <limits>
#include <string>

#include "inferopt/memory/caching_pool.hpp"
#include "inferopt/memory/detail/address_map.hpp"
#include "inferopt/memory/detail/arithmetic.hpp"
#include "inferopt/memory/detail/size_class_bins.hpp"
#include "inferopt/memory/out_of_memory.hpp"

namespace inferopt::memory {

// A block is a contiguous piece of one segment; the blocks of a segment form an address-
// ordered doubly linked list that exactly tiles the segment.
struct caching_pool::block {
  char* ptr = nullptr;
  std::size_t size = 0;
  segment* seg = nullptr;
  block* prev = nullptr;  // address neighbours
  block* next = nullptr;
  block* bin_prev = nullptr;  // links in the owner's size class while free
  block* bin_next = nullptr;
  free_lists* owner = nullptr;  // the lists holding the block while free; null while live
  event_ref event{};            // recorded at the free, only for stream-owned free blocks with hooks
  std::uint64_t freed_at = 0;   // value of frees_ when filed: the later of two events wins
};

struct caching_pool::segment {
  char* ptr = nullptr;
  std::size_t size = 0;
  bool large = false;
  block* first = nullptr;
};

// The free blocks of one pool kind (small or large) and one owner: a stream, or none when
// they are reusable by every stream.
struct caching_pool::free_lists {
  free_lists(bool large_, std::optional<void*> stream_, unsigned granularity_log2)
      : large(large_), stream(stream_), bins(granularity_log2) {}
  bool large;
  std::optional<void*> stream;
  detail::size_class_bins<block> bins;
};

inline caching_pool::caching_pool(memory_resource& upstream, caching_pool_options options, stream_events* events)
    : upstream_(&upstream), options_(options), events_(events), live_(std::make_unique<detail::address_map<block>>()) {
  const auto& o = options_;
  expects(detail::is_power_of_two(o.block_granularity) && o.block_granularity >= default_alignment,
          "block_granularity must be a power of two of at least 256");
  expects(o.small_segment_bytes % o.block_granularity == 0, "small_segment_bytes must be a multiple of block_granularity");
  expects(o.large_granularity % o.block_granularity == 0, "large_granularity must be a multiple of block_granularity");
  expects(o.small_request_limit <= o.small_segment_bytes, "small_request_limit must not exceed small_segment_bytes");
  expects(o.min_small_remainder >= o.block_granularity && o.min_large_remainder >= o.block_granularity,
          "minimum split remainders must be at least block_granularity");
  // The shared lists exist from the start; stream lists appear with their stream's first use.
  lists_for(false, std::nullopt);
  lists_for(true, std::nullopt);
}

inline caching_pool::~caching_pool() {
  for (auto& seg : segments_) {
    for (block* b = seg->first; b != nullptr;) {
      block* next = b->next;
      if (b->event.handle != nullptr) events_->destroy(b->event);
      delete b;
      b = next;
    }
    upstream_->deallocate(seg->ptr, seg->size, default_alignment);
  }
  for (block* b : spare_blocks_) delete b;
}

inline std::size_t caching_pool::round_block(std::size_t bytes) const noexcept {
  return detail::round_up(bytes, options_.block_granularity);
}

// Pools serve few streams, and mostly the one used last: a cached pointer, then a short scan.
inline caching_pool::free_lists* caching_pool::find_lists(bool large, std::optional<void*> owner) const noexcept {
  if (!owner.has_value()) return shared_[large];
  if (free_lists* r = recent_[large]; r != nullptr && r->stream == owner) return r;
  for (const auto& l : lists_) {
    if (l->large == large && l->stream == owner) return recent_[large] = l.get();
  }
  return nullptr;
}

inline caching_pool::free_lists& caching_pool::lists_for(bool large, std::optional<void*> owner) {
  if (free_lists* l = find_lists(large, owner)) return *l;
  const auto log2 = static_cast<unsigned>(std::countr_zero(options_.block_granularity));
  free_lists* l = lists_.emplace_back(std::make_unique<free_lists>(large, owner, log2)).get();
  if (!owner.has_value()) shared_[large] = l;
  return *l;
}

inline caching_pool::block* caching_pool::new_block() {
  if (spare_blocks_.empty()) return new block;
  block* b = spare_blocks_.back();
  spare_blocks_.pop_back();
  *b = block{};
  return b;
}

inline void caching_pool::recycle(block* b) noexcept {
  try {
    spare_blocks_.push_back(b);
  } catch (...) {
    delete b;
  }
}

inline void* caching_pool::do_allocate(std::size_t bytes, std::size_t alignment, stream_ref stream) {
  expects(alignment <= default_alignment, "caching_pool aligns blocks to at most 256 bytes");
  const bool large = bytes > options_.small_request_limit;
  const std::size_t size = round_block(bytes);
  std::lock_guard lock(mutex_);
  // Created here, where throwing is allowed, so that a free on this stream never has to.
  free_lists& own = lists_for(large, stream.handle);
  block* b = find_fit(own, size);
  if (b == nullptr && events_ != nullptr && reclaim_completed(large)) b = find_fit(own, size);
  if (b == nullptr && coalesce(large)) b = find_fit(own, size);
  if (b != nullptr) {
    b->owner->bins.erase(b);
  } else {
    b = grow(large, size, own);
  }
  free_lists& owner = *b->owner;
  b->owner = nullptr;  // live before the split, so the rest does not merge back into it
  b = split(b, size, large, owner);
  if (b->event.handle != nullptr) {  // a live block needs no event; the remainder kept its own
    events_->destroy(b->event);
    b->event = {};
  }
  live_->insert(b->ptr, b);
  allocated_ += b->size;
  return b->ptr;
}

inline void caching_pool::do_deallocate(void* ptr, std::size_t, std::size_t, stream_ref stream) noexcept {
  std::lock_guard lock(mutex_);
  block* b = live_->take(ptr);
  assert(b != nullptr && "caching_pool: pointer not allocated here");
  if (b == nullptr) return;
  allocated_ -= b->size;
  free_lists* owner = find_lists(b->seg->large, stream.handle);
  if (owner == nullptr) {
    // Freed on a stream that never allocated here: its lists must be made, which may fail.
    try {
      owner = &lists_for(b->seg->large, stream.handle);
    } catch (...) {
      return;  // the block stays out of use until the pool is destroyed
    }
  }
  if (events_ != nullptr) {
    // Without an event the block still serves its own stream; others wait for synchronize().
    try {
      b->event = events_->record(stream);
    } catch (...) {
      b->event = {};
    }
  }
  file(b, *owner);
}

// The better of the stream's own free block and a shared one.
inline caching_pool::block* caching_pool::find_fit(free_lists& own, std::size_t size) {
  block* best = own.bins.best_fit(size);
  block* shared = shared_[own.large]->bins.best_fit(size);
  if (shared != nullptr && (best == nullptr || shared->size < best->size)) best = shared;
  return best;
}

// Moves a stream-owned free block to the shared lists, dropping its event.
inline void caching_pool::share(block* b) {
  b->owner->bins.erase(b);
  if (b->event.handle != nullptr) events_->destroy(b->event);
  b->event = {};
  file(b, *shared_[b->seg->large]);
}

// Blocks still owned by their stream never merge with shared ones, so none of the collected
// blocks is merged away before its turn.
inline bool caching_pool::reclaim_completed(bool large) {
  std::vector<block*> done;
  for (const auto& l : lists_) {
    if (l->large != large || !l->stream.has_value()) continue;
    l->bins.for_each([&](block* b) {
      if (b->event.handle != nullptr && events_->has_completed(b->event)) done.push_back(b);
    });
  }
  for (block* b : done) share(b);
  return !done.empty();
}

inline void caching_pool::synchronize(stream_ref stream) {
  if (events_ != nullptr) events_->synchronize(stream);
  std::lock_guard lock(mutex_);
  for (bool large : {false, true}) {
    free_lists* l = find_lists(large, stream.handle);
    if (l == nullptr) continue;
    std::vector<block*> blocks;
    l->bins.for_each([&](block* b) { blocks.push_back(b); });
    for (block* b : blocks) share(b);
  }
}

// Reserves a segment for a request of `size` and returns it as one free block owned by
// `owner` (the requesting stream), not yet filed: its rest merges with that stream's frees,
// and other streams get it after synchronize (it has no event to wait for).
//
// Three steps, as RMM's pool_memory_resource grows: size_to_grow decides how much to reserve
// (a pure policy), try_to_expand backs off while the upstream refuses, and block_from_upstream
// is the one call that allocates from the upstream.
inline caching_pool::block* caching_pool::grow(bool large, std::size_t size, free_lists& owner) {
  const std::size_t need = large ? detail::round_up(size, options_.large_granularity) : options_.small_segment_bytes;
  const std::size_t grown = large_reserved_;  // the growth follows what was reserved before any room is made
  const std::size_t room = room_under_cap(need);
  const upstream_block memory = try_to_expand(size_to_grow(large, need, grown, room), need);
  return add_segment(memory, large, owner);
}

// Bytes that max_bytes leaves for a new segment of `need` bytes, after returning unused
// segments if it would not fit otherwise; SIZE_MAX without a cap.
// @throws out_of_memory when the segment does not fit even then.
inline std::size_t caching_pool::room_under_cap(std::size_t need) {
  if (!options_.max_bytes) return std::numeric_limits<std::size_t>::max();
  const std::size_t max = *options_.max_bytes;
  if (reserved_ + need > max) release_unused(max > need ? max - need : 0);
  if (reserved_ + need > max) {
    throw out_of_memory("caching_pool: cannot reserve " + std::to_string(need) + " bytes: " +
                        std::to_string(reserved_) + " of the maximum " + std::to_string(max) + " are reserved");
  }
  return max - reserved_;
}

// The growth policy: the bytes to reserve for a request whose segment needs `need` bytes.
// Small segments all have one size. A large segment is as big as all large segments reserved
// so far (`large_reserved`, in whole granules): the pool doubles, so a footprint of F granules
// takes about log2(F) segments, which bounds the upstream calls and the segments that coalesce
// and trim walk. Without geometric growth it is just `need`. Under a cap it shrinks to the whole
// granules of `room`, never below `need`.
inline std::size_t caching_pool::size_to_grow(bool large, std::size_t need, std::size_t large_reserved,
                                              std::size_t room) const noexcept {
  const std::size_t granule = options_.large_granularity;
  std::size_t target = need;
  if (large && options_.geometric_growth) target = std::max(need, detail::round_up(large_reserved, granule));
  return std::max(need, std::min(target, room / granule * granule));
}

// The back-off: asks for `target` bytes, halving (in whole granules) down to `need` while the
// upstream refuses; then returns every unused segment to the upstream and asks for `need` once
// more. @throws out_of_memory when even that fails.
inline caching_pool::upstream_block caching_pool::try_to_expand(std::size_t target, std::size_t need) {
  while (true) {
    if (char* ptr = block_from_upstream(target)) return {ptr, target};
    if (target <= need) break;
    target = std::max(need, detail::round_up(target / 2, options_.large_granularity));
  }
  if (release_unused(0) > 0) {
    if (char* ptr = block_from_upstream(need)) return {ptr, need};
  }
  throw out_of_memory("caching_pool: upstream cannot provide " + std::to_string(need) + " bytes (" +
                      std::to_string(reserved_) + " reserved)");
}

// The one allocation from the upstream: `bytes` at the default alignment, or null when the
// upstream throws bad_alloc (which the back-off answers); anything else it throws passes on.
inline char* caching_pool::block_from_upstream(std::size_t bytes) {
  try {
    return static_cast<char*>(upstream_->allocate(bytes, default_alignment));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

// Files the upstream memory as a new segment of one free block owned by `owner`; gives the
// memory back when the records for it cannot be allocated.
inline caching_pool::block* caching_pool::add_segment(upstream_block memory, bool large, free_lists& owner) {
  std::unique_ptr<segment> seg;
  block* b = nullptr;
  try {
    seg = std::make_unique<segment>();
    b = new_block();
    segments_.reserve(segments_.size() + 1);
  } catch (...) {
    delete b;
    upstream_->deallocate(memory.ptr, memory.size, default_alignment);
    throw;
  }
  seg->ptr = memory.ptr;
  seg->size = memory.size;
  seg->large = large;
  b->ptr = memory.ptr;
  b->size = memory.size;
  b->seg = seg.get();
  b->owner = &owner;
  seg->first = b;
  segments_.push_back(std::move(seg));
  reserved_ += memory.size;
  if (large) large_reserved_ += memory.size;
  return b;
}

// Cuts the live block b down to `size` when the rest is worth keeping; the rest is filed
// with b's former owner and free event: its memory was last used where b's was.
inline caching_pool::block* caching_pool::split(block* b, std::size_t size, bool large, free_lists& owner) {
  const std::size_t rest = b->size - size;
  if (rest == 0 || rest < (large ? options_.min_large_remainder : options_.min_small_remainder)) return b;
  block* r = nullptr;
  try {
    r = new_block();
  } catch (...) {
    return b;  // no record for the rest: hand out the whole block
  }
  r->ptr = b->ptr + size;
  r->size = rest;
  r->seg = b->seg;
  r->prev = b;
  r->next = b->next;
  r->event = b->event;
  b->event = {};
  if (b->next != nullptr) b->next->prev = r;
  b->next = r;
  b->size = size;
  file(r, owner);
  r->freed_at = b->freed_at;  // with b's event goes b's place in the order of frees
  return b;
}

// Files the free block b with `owner`; merging with its neighbours waits for coalesce().
inline void caching_pool::file(block* b, free_lists& owner) noexcept {
  b->owner = &owner;
  b->freed_at = ++frees_;
  owner.bins.insert(b);
}

// Merges every run of free neighbours with one owner in the segments of one kind; true when
// anything merged. A merged block keeps the event of its most recently freed part: on one
// stream a later event completes only after the earlier ones.
inline bool caching_pool::coalesce(bool large) {
  bool merged = false;
  for (const auto& seg : segments_) {
    if (seg->large != large) continue;
    for (block* b = seg->first; b != nullptr; b = b->next) {
      if (b->owner == nullptr) continue;
      free_lists& owner = *b->owner;
      if (b->next == nullptr || b->next->owner != &owner) continue;
      owner.bins.erase(b);
      while (b->next != nullptr && b->next->owner == &owner) {
        block* n = b->next;
        owner.bins.erase(n);
        block* older = n->freed_at < b->freed_at ? n : b;
        block* newer = older == n ? b : n;
        if (older->event.handle != nullptr) events_->destroy(older->event);
        b->event = newer->event;
        b->freed_at = newer->freed_at;
        n->event = {};
        b = merge(b, n);
      }
      owner.bins.insert(b);
      merged = true;
    }
  }
  return merged;
}

// `left` absorbs its address neighbour `right` (already unfiled); returns the merged block.
inline caching_pool::block* caching_pool::merge(block* left, block* right) {
  left->size += right->size;
  left->next = right->next;
  if (right->next != nullptr) right->next->prev = left;
  recycle(right);
  return left;
}

// A segment is unused when all its blocks are free, whichever streams freed them: the owner
// only restricts reuse by other streams, not returning memory to the upstream.
inline std::size_t caching_pool::release_unused(std::size_t target_reserved) {
  std::vector<segment*> unused;
  for (auto& seg : segments_) {
    bool all_free = true;
    for (const block* b = seg->first; b != nullptr && all_free; b = b->next) all_free = b->owner != nullptr;
    if (all_free) unused.push_back(seg.get());
  }
  std::sort(unused.begin(), unused.end(), [](const segment* a, const segment* b) { return a->size > b->size; });
  std::size_t released = 0;
  for (segment* seg : unused) {
    if (reserved_ <= target_reserved) break;
    for (block* b = seg->first; b != nullptr;) {
      block* next = b->next;
      b->owner->bins.erase(b);
      if (b->event.handle != nullptr) events_->destroy(b->event);
      recycle(b);
      b = next;
    }
    upstream_->deallocate(seg->ptr, seg->size, default_alignment);
    reserved_ -= seg->size;
    if (seg->large) large_reserved_ -= seg->size;
    released += seg->size;
    std::erase_if(segments_, [&](const std::unique_ptr<segment>& s) { return s.get() == seg; });
  }
  return released;
}

inline std::size_t caching_pool::trim(std::size_t target_reserved) {
  std::lock_guard lock(mutex_);
  return release_unused(target_reserved);
}

inline std::size_t caching_pool::reserved_bytes() const {
  std::lock_guard lock(mutex_);
  return reserved_;
}

inline std::size_t caching_pool::allocated_bytes() const {
  std::lock_guard lock(mutex_);
  return allocated_;
}

inline std::size_t caching_pool::segment_count() const {
  std::lock_guard lock(mutex_);
  return segments_.size();
}

// Free neighbours count as one block, as they will be once coalesced.
inline free_space_info caching_pool::do_free_space() const {
  std::lock_guard lock(mutex_);
  free_space_info info;
  for (const auto& seg : segments_) {
    std::size_t run = 0;
    const free_lists* run_owner = nullptr;
    for (const block* b = seg->first; b != nullptr; b = b->next) {
      if (b->owner == nullptr) {
        run_owner = nullptr;
        continue;
      }
      info.free_bytes += b->size;
      run = b->owner == run_owner ? run + b->size : b->size;
      run_owner = b->owner;
      info.largest_block = std::max(info.largest_block, run);
    }
  }
  return info;
}

}  // namespace inferopt::memory
