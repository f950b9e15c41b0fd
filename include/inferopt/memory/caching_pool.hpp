#pragma once
/// A caching, stream-aware pool over any upstream resource.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "inferopt/memory/memory_resource.hpp"
#include "inferopt/memory/stream_events.hpp"

namespace inferopt::memory {

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
/// block (smallest that fits) and splits off the rest when the rest is at least the minimum
/// remainder, which bounds waste per block. Freed blocks merge with free neighbours of the
/// same segment and stream. When no block fits, a new segment is reserved: a large one is
/// as big as the pool has reserved so far (geometric growth), and when the upstream throws
/// `bad_alloc` the pool retries smaller, down to the request, then releases its unused
/// segments and retries once more before throwing `out_of_memory`.
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
  // Free blocks ordered by size, then address: lower_bound(size) is the best fit.
  struct by_size {
    bool operator()(const block* a, const block* b) const noexcept;
  };
  using free_set = std::set<block*, by_size>;
  // A free list belongs to one pool kind (small or large) and one owner: a stream, or none
  // when its blocks are reusable by every stream.
  struct list_key {
    bool large = false;
    std::optional<void*> stream;
    auto operator<=>(const list_key&) const = default;
  };

  void* do_allocate(std::size_t bytes, std::size_t alignment, stream_ref stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, std::size_t alignment, stream_ref stream) noexcept override;
  [[nodiscard]] free_space_info do_free_space() const override;

  [[nodiscard]] std::size_t round_block(std::size_t bytes) const noexcept;
  block* find_fit(bool large, stream_ref stream, std::size_t size);
  bool reclaim_completed(bool large);
  block* grow(bool large, std::size_t size, stream_ref stream);
  void* reserve_from_upstream(std::size_t bytes);
  block* split(block* b, std::size_t size, bool large);
  void insert_free(block* b);
  void erase_free(block* b);
  block* merge(block* left, block* right);
  std::size_t release_unused(std::size_t target_reserved);

  memory_resource* upstream_;  // never null
  caching_pool_options options_;
  stream_events* events_;  // may be null (host pools)

  mutable std::mutex mutex_;
  // Every block lives in exactly one of: live_ (handed out) or one free_ list.
  std::map<list_key, free_set> free_;
  std::unordered_map<void*, block*> live_;
  std::vector<std::unique_ptr<segment>> segments_;
  std::size_t reserved_ = 0;   // sum of segment sizes
  std::size_t allocated_ = 0;  // sum of live block sizes
  std::size_t large_reserved_ = 0;
};

}  // namespace inferopt::memory
