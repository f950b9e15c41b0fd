#pragma once
/// A caching, stream-aware pool over any upstream resource.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "inferopt/memory/detail/light_mutex.hpp"
#include "inferopt/memory/memory_resource.hpp"
#include "inferopt/memory/stream_events.hpp"

namespace inferopt::memory {

namespace detail {
template <class Value>
class address_map;
}

/// Settings of a `caching_pool`; the defaults follow PyTorch's CUDA caching allocator.
struct caching_pool_options {
  std::size_t small_request_limit = std::size_t{1} << 20;  ///< requests up to this share small segments
  std::size_t small_segment_bytes = std::size_t{2} << 20;  ///< size of every small segment
  std::size_t large_granularity = std::size_t{2} << 20;    ///< large segments are multiples of this
  std::size_t block_granularity = 512;                     ///< every block size is a multiple of this
  std::size_t min_small_remainder = 512;                   ///< do not split off smaller small-pool rests
  std::size_t min_large_remainder = std::size_t{1} << 20;  ///< do not split off smaller large-pool rests
  std::optional<std::size_t> max_bytes;                    ///< cap on memory reserved from upstream
  bool geometric_growth = true;  ///< large segments grow with the pool (doubling), backing off on failure
};

/// Caches memory from an upstream resource in segments and hands out blocks of them.
///
/// Strategy. Requests up to `small_request_limit` are served from fixed small segments,
/// larger ones from large segments (rounded to `large_granularity`); the two never mix, so a
/// stream of small requests cannot pin a large segment. A request takes the best-fitting free
/// block and splits off the rest when the rest is at least the minimum remainder, which bounds
/// waste per block. Free blocks are filed in size classes (16 per octave, with a bitmap of the
/// non-empty ones), so the fit is found in constant time: exact best fit below 16 granules,
/// and the smallest of at most 32 candidates of the first fitting class above. Free
/// neighbours of the same segment and stream are merged, but lazily, as dlmalloc does for its
/// fast bins: a free only files the block, and merging runs when a request finds no fit (and
/// before the pool grows). When no block fits even then, a new segment is reserved: a large one is as big as the pool has reserved so far (geometric
/// growth), and when the upstream throws `bad_alloc` the pool retries smaller, down to the
/// request, then releases its unused segments and retries once more before throwing
/// `out_of_memory`.
///
/// Streams. Each stream has its own free lists: a block freed on stream A (and the unused rest
/// of a segment grown for A) is reused at once by later requests on A. Another stream gets it
/// only after `synchronize(A)`, or, when the pool has `stream_events` hooks (the device pool),
/// once the event recorded at the free completed. `release` and `trim` return segments whose
/// blocks are all free, whichever streams freed them.
///
/// Alignment: blocks are aligned to `default_alignment` (256); larger alignments are refused.
/// Thread-safe (one mutex). The upstream (and hooks) must outlive the pool; the destructor
/// returns every segment to the upstream, including ones still holding live blocks.
class caching_pool final : public memory_resource {
 public:
  /// @throws inferopt::error(errc::invalid_argument) naming the inconsistent option.
  explicit caching_pool(memory_resource& upstream, caching_pool_options options = {},
                        stream_events* events = nullptr);
  caching_pool(const caching_pool&) = delete;
  caching_pool& operator=(const caching_pool&) = delete;
  ~caching_pool() override;

  /// Makes every block freed on `stream` reusable by all streams. With hooks, first waits
  /// for the stream; without, the caller promises the stream's work is done.
  void synchronize(stream_ref stream);

  /// Returns fully unused segments to the upstream until at most `target_reserved` bytes stay
  /// reserved (or none are left unused). Returns the bytes given back.
  std::size_t trim(std::size_t target_reserved);
  /// Returns every fully unused segment to the upstream; the bytes given back.
  std::size_t release() { return trim(0); }

  [[nodiscard]] std::size_t reserved_bytes() const;   ///< held from the upstream
  [[nodiscard]] std::size_t allocated_bytes() const;  ///< in live blocks (rounded sizes)
  [[nodiscard]] std::size_t segment_count() const;
  [[nodiscard]] const caching_pool_options& options() const noexcept { return options_; }

 private:
  struct segment;
  struct block;
  struct free_lists;

  void* do_allocate(std::size_t bytes, std::size_t alignment, stream_ref stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, std::size_t alignment, stream_ref stream) noexcept override;
  [[nodiscard]] free_space_info do_free_space() const override;

  [[nodiscard]] std::size_t round_block(std::size_t bytes) const noexcept;
  free_lists* find_lists(bool large, std::optional<void*> owner) const noexcept;
  free_lists& lists_for(bool large, std::optional<void*> owner);
  block* find_fit(free_lists& own, std::size_t size);
  bool reclaim_completed(bool large);
  void share(block* b);
  struct upstream_block {  // memory from the upstream, not yet a segment
    char* ptr;
    std::size_t size;
  };

  block* grow(bool large, std::size_t size, free_lists& owner);
  std::size_t room_under_cap(std::size_t need);
  [[nodiscard]] std::size_t size_to_grow(bool large, std::size_t need, std::size_t large_reserved,
                                         std::size_t room) const noexcept;
  upstream_block try_to_expand(std::size_t target, std::size_t need);
  char* block_from_upstream(std::size_t bytes);
  block* add_segment(upstream_block memory, bool large, free_lists& owner);
  block* split(block* b, std::size_t size, bool large, free_lists& owner);
  void file(block* b, free_lists& owner) noexcept;
  bool coalesce(bool large);
  block* merge(block* left, block* right);
  block* new_block();
  void recycle(block* b) noexcept;
  std::size_t release_unused(std::size_t target_reserved);

  memory_resource* upstream_;  // never null
  caching_pool_options options_;
  stream_events* events_;  // may be null (host pools)

  mutable detail::light_mutex mutex_;
  // Every block is either live (in live_) or free (filed in exactly one owner's lists).
  std::vector<std::unique_ptr<free_lists>> lists_;  // per (kind, stream) and per kind shared
  free_lists* shared_[2] = {nullptr, nullptr};      // lists_'s shared ones, by kind (large = 1)
  mutable free_lists* recent_[2] = {nullptr, nullptr};      // the stream lists used last, by kind
  std::unique_ptr<detail::address_map<block>> live_;
  std::vector<block*> spare_blocks_;  // block records kept for reuse: no malloc per split
  std::vector<std::unique_ptr<segment>> segments_;
  std::size_t reserved_ = 0;   // sum of segment sizes
  std::size_t allocated_ = 0;  // sum of live block sizes
  std::size_t large_reserved_ = 0;
  std::uint64_t frees_ = 0;  // counts frees: orders the events of blocks that merge
};

}  // namespace inferopt::memory

#include "inferopt/memory/detail/caching_pool_impl.hpp"
