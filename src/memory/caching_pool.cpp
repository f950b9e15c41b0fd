#include "inferopt/memory/caching_pool.hpp"

#include <algorithm>
#include <cassert>
#include <string>

#include "inferopt/memory/out_of_memory.hpp"

namespace inferopt::memory {

// A block is a contiguous piece of one segment; the blocks of a segment form an address-
// ordered doubly linked list that exactly tiles the segment.
struct caching_pool::block {
  char* ptr = nullptr;
  std::size_t size = 0;
  segment* seg = nullptr;
  block* prev = nullptr;
  block* next = nullptr;
  bool free = false;
  list_key key;       // meaningful while free
  event_ref event{};  // recorded at the free, only for stream-owned free blocks with hooks
};

struct caching_pool::segment {
  char* ptr = nullptr;
  std::size_t size = 0;
  bool large = false;
  block* first = nullptr;
};

bool caching_pool::by_size::operator()(const block* a, const block* b) const noexcept {
  if (a->size != b->size) return a->size < b->size;
  return std::less<const char*>{}(a->ptr, b->ptr);
}

namespace {

std::size_t round_up(std::size_t n, std::size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

bool is_power_of_two(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }

}  // namespace

caching_pool::caching_pool(memory_resource& upstream, caching_pool_options options, stream_events* events)
    : upstream_(&upstream), options_(options), events_(events) {
  const auto& o = options_;
  expects(is_power_of_two(o.block_granularity) && o.block_granularity >= default_alignment,
          "block_granularity must be a power of two of at least 256");
  expects(o.small_segment_bytes % o.block_granularity == 0, "small_segment_bytes must be a multiple of block_granularity");
  expects(o.large_granularity % o.block_granularity == 0, "large_granularity must be a multiple of block_granularity");
  expects(o.small_request_limit <= o.small_segment_bytes, "small_request_limit must not exceed small_segment_bytes");
  expects(o.min_small_remainder >= o.block_granularity && o.min_large_remainder >= o.block_granularity,
          "minimum split remainders must be at least block_granularity");
}

caching_pool::~caching_pool() {
  for (auto& seg : segments_) {
    for (block* b = seg->first; b != nullptr;) {
      block* next = b->next;
      if (b->event.handle != nullptr) events_->destroy(b->event);
      delete b;
      b = next;
    }
    upstream_->deallocate(seg->ptr, seg->size, default_alignment);
  }
}

std::size_t caching_pool::round_block(std::size_t bytes) const noexcept {
  return round_up(bytes, options_.block_granularity);
}

void* caching_pool::do_allocate(std::size_t bytes, std::size_t alignment, stream_ref stream) {
  expects(alignment <= default_alignment, "caching_pool aligns blocks to at most 256 bytes");
  const bool large = bytes > options_.small_request_limit;
  const std::size_t size = round_block(bytes);
  std::lock_guard lock(mutex_);
  block* b = find_fit(large, stream, size);
  if (b == nullptr && events_ != nullptr && reclaim_completed(large)) b = find_fit(large, stream, size);
  if (b != nullptr) {
    erase_free(b);
  } else {
    b = grow(large, size, stream);
  }
  b->free = false;  // before split, so the rest does not merge back into it
  b = split(b, size, large);
  if (b->event.handle != nullptr) {  // a live block needs no event; the remainder kept its own
    events_->destroy(b->event);
    b->event = {};
  }
  live_.emplace(b->ptr, b);
  allocated_ += b->size;
  return b->ptr;
}

void caching_pool::do_deallocate(void* ptr, std::size_t, std::size_t, stream_ref stream) noexcept {
  std::lock_guard lock(mutex_);
  auto it = live_.find(ptr);
  assert(it != live_.end() && "caching_pool: pointer not allocated here");
  if (it == live_.end()) return;
  block* b = it->second;
  live_.erase(it);
  allocated_ -= b->size;
  b->free = true;
  b->key = list_key{b->seg->large, stream.handle};
  if (events_ != nullptr) {
    // Without an event the block still serves its own stream; others wait for synchronize().
    try {
      b->event = events_->record(stream);
    } catch (...) {
      b->event = {};
    }
  }
  insert_free(b);
}

caching_pool::block* caching_pool::find_fit(bool large, stream_ref stream, std::size_t size) {
  block probe;
  probe.size = size;
  block* best = nullptr;
  for (const list_key& key : {list_key{large, stream.handle}, list_key{large, std::nullopt}}) {
    auto list = free_.find(key);
    if (list == free_.end()) continue;
    auto it = list->second.lower_bound(&probe);
    if (it != list->second.end() && (best == nullptr || (*it)->size < best->size)) best = *it;
  }
  return best;
}

bool caching_pool::reclaim_completed(bool large) {
  std::vector<block*> done;
  for (auto& [key, list] : free_) {
    if (key.large != large || !key.stream.has_value()) continue;
    for (block* b : list) {
      if (b->event.handle != nullptr && events_->has_completed(b->event)) done.push_back(b);
    }
  }
  for (block* b : done) {
    erase_free(b);
    events_->destroy(b->event);
    b->event = {};
    b->key.stream.reset();
    insert_free(b);
  }
  return !done.empty();
}

void caching_pool::synchronize(stream_ref stream) {
  if (events_ != nullptr) events_->synchronize(stream);
  std::lock_guard lock(mutex_);
  for (bool large : {false, true}) {
    auto list = free_.find(list_key{large, stream.handle});
    if (list == free_.end()) continue;
    std::vector<block*> blocks(list->second.begin(), list->second.end());
    free_.erase(list);
    // Blocks still keyed to the stream never merge with shared ones, so none of `blocks`
    // is merged away before its turn.
    for (block* b : blocks) {
      if (b->event.handle != nullptr) events_->destroy(b->event);
      b->event = {};
      b->key.stream.reset();
      insert_free(b);
    }
  }
}

caching_pool::block* caching_pool::grow(bool large, std::size_t size, stream_ref stream) {
  const std::size_t need = large ? round_up(size, options_.large_granularity) : options_.small_segment_bytes;
  std::size_t target = need;
  if (large && options_.geometric_growth) target = std::max(need, round_up(large_reserved_, options_.large_granularity));
  if (options_.max_bytes) {
    const std::size_t max = *options_.max_bytes;
    if (reserved_ + need > max) release_unused(max > need ? max - need : 0);
    if (reserved_ + need > max) {
      throw out_of_memory("caching_pool: cannot reserve " + std::to_string(need) + " bytes: " +
                          std::to_string(reserved_) + " of the maximum " + std::to_string(max) + " are reserved");
    }
    target = std::max(need, std::min(target, (max - reserved_) / options_.large_granularity * options_.large_granularity));
  }
  char* ptr = nullptr;
  // Back off: halve the growth down to what the request needs, then free the cache, then fail.
  while (ptr == nullptr) {
    try {
      ptr = static_cast<char*>(upstream_->allocate(target, default_alignment));
    } catch (const std::bad_alloc&) {
      if (target > need) {
        target = std::max(need, round_up(target / 2, options_.large_granularity));
        continue;
      }
      break;
    }
  }
  if (ptr == nullptr && release_unused(0) > 0) {
    try {
      ptr = static_cast<char*>(upstream_->allocate(need, default_alignment));
      target = need;
    } catch (const std::bad_alloc&) {
    }
  }
  if (ptr == nullptr) {
    throw out_of_memory("caching_pool: upstream cannot provide " + std::to_string(need) + " bytes (" +
                        std::to_string(reserved_) + " reserved)");
  }
  auto seg = std::make_unique<segment>();
  seg->ptr = ptr;
  seg->size = target;
  seg->large = large;
  // A new segment belongs to the requesting stream, so its rest merges with that stream's
  // frees; other streams get it after synchronize (it has no event to wait for).
  auto* b = new block{ptr, target, seg.get(), nullptr, nullptr, true, list_key{large, stream.handle}, {}};
  seg->first = b;
  segments_.push_back(std::move(seg));
  reserved_ += target;
  if (large) large_reserved_ += target;
  return b;
}

caching_pool::block* caching_pool::split(block* b, std::size_t size, bool large) {
  const std::size_t rest = b->size - size;
  if (rest == 0 || rest < (large ? options_.min_large_remainder : options_.min_small_remainder)) return b;
  // The rest keeps the block's owner and free event: its memory was last used where b's was.
  auto* r = new block{b->ptr + size, rest, b->seg, b, b->next, true, b->key, b->event};
  b->event = {};
  if (b->next != nullptr) b->next->prev = r;
  b->next = r;
  b->size = size;
  insert_free(r);
  return b;
}

// Merges b with free neighbours that have the same owner, then files it. b is the most
// recently freed of the three (or event-less), so the merged block keeps b's event: on one
// stream a later event completes only after the earlier ones.
void caching_pool::insert_free(block* b) {
  auto drop_event = [&](block* gone) {
    if (gone->event.handle != nullptr) events_->destroy(gone->event);
    gone->event = {};
  };
  if (block* p = b->prev; p != nullptr && p->free && p->key == b->key) {
    erase_free(p);
    drop_event(p);
    p->event = b->event;
    b->event = {};
    b = merge(p, b);
  }
  if (block* n = b->next; n != nullptr && n->free && n->key == b->key) {
    erase_free(n);
    drop_event(n);
    b = merge(b, n);
  }
  free_[b->key].insert(b);
}

void caching_pool::erase_free(block* b) {
  auto list = free_.find(b->key);
  if (list == free_.end()) return;
  list->second.erase(b);
  if (list->second.empty()) free_.erase(list);
}

// `left` absorbs its address neighbour `right` (already unfiled); returns the merged block.
caching_pool::block* caching_pool::merge(block* left, block* right) {
  left->size += right->size;
  left->next = right->next;
  if (right->next != nullptr) right->next->prev = left;
  delete right;
  return left;
}

// A segment is unused when all its blocks are free, whichever streams freed them: the owner
// only restricts reuse by other streams, not returning memory to the upstream.
std::size_t caching_pool::release_unused(std::size_t target_reserved) {
  std::vector<segment*> unused;
  for (auto& seg : segments_) {
    bool all_free = true;
    for (const block* b = seg->first; b != nullptr && all_free; b = b->next) all_free = b->free;
    if (all_free) unused.push_back(seg.get());
  }
  std::sort(unused.begin(), unused.end(), [](const segment* a, const segment* b) { return a->size > b->size; });
  std::size_t released = 0;
  for (segment* seg : unused) {
    if (reserved_ <= target_reserved) break;
    for (block* b = seg->first; b != nullptr;) {
      block* next = b->next;
      erase_free(b);
      if (b->event.handle != nullptr) events_->destroy(b->event);
      delete b;
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

std::size_t caching_pool::trim(std::size_t target_reserved) {
  std::lock_guard lock(mutex_);
  return release_unused(target_reserved);
}

std::size_t caching_pool::reserved_bytes() const {
  std::lock_guard lock(mutex_);
  return reserved_;
}

std::size_t caching_pool::allocated_bytes() const {
  std::lock_guard lock(mutex_);
  return allocated_;
}

std::size_t caching_pool::segment_count() const {
  std::lock_guard lock(mutex_);
  return segments_.size();
}

free_space_info caching_pool::do_free_space() const {
  std::lock_guard lock(mutex_);
  free_space_info info;
  for (const auto& [key, list] : free_) {
    for (const block* b : list) info.free_bytes += b->size;
    if (!list.empty()) info.largest_block = std::max(info.largest_block, (*list.rbegin())->size);
  }
  return info;
}

}  // namespace inferopt::memory
