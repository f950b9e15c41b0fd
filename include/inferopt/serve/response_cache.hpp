#pragma once
/// A response cache for inference: outputs kept by request (request_key.hpp), bounded in bytes,
/// with a time to live and least-recently-used eviction.
///
/// Strategy: entries sit in one list, most recently used first; an index maps each key's
/// 64-bit hash to its list nodes. A lookup hashes the request, walks the (almost always one)
/// nodes under that hash comparing bytes, and splices a hit to the front; eviction pops the
/// back. Every step is O(1) in the number of entries (Triton's LRU searched its list linearly
/// on each hit, which users saw take BERT from 600 to 100 requests/s, triton-inference-server
/// issue #4379). An entry costs its key's bytes, its outputs' bytes and a fixed allowance for
/// the bookkeeping; the total never exceeds the capacity.
///
/// Thread-safe: one mutex guards the whole cache; a lookup holds it while comparing bytes.

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "inferopt/core/error.hpp"
#include "inferopt/serve/request_key.hpp"

namespace inferopt::serve {

struct response_cache_options {
  std::size_t capacity_bytes = std::size_t{64} << 20;
  /// How long an entry answers after it was stored; zero: until evicted.
  std::chrono::steady_clock::duration ttl{};
  /// How many low bits of each key's 64-bit hash the index uses. Lower it only to test that
  /// colliding keys are told apart by their bytes (1000 keys in 16 slots, say).
  unsigned index_bits = 64;
  /// Admission (TinyLFU's doorkeeper): a request is stored only when it misses a second
  /// time, so a stream of distinct requests costs a hash and a set lookup each instead of a
  /// copy of its inputs and outputs and an eviction. The doorkeeper remembers at most
  /// `doorkeeper_size` hashes and forgets them all when full.
  bool admit_on_second_miss = false;
  std::size_t doorkeeper_size = 1 << 16;
};

/// Counters since the cache was made, and its size now.
struct response_cache_stats {
  std::uint64_t hits = 0, misses = 0, insertions = 0, evictions = 0, expirations = 0, too_large = 0;
  std::uint64_t not_admitted = 0;  ///< inserts refused as first misses (admit_on_second_miss)
  std::size_t bytes = 0, entries = 0;
};

class response_cache {
 public:
  using clock = std::chrono::steady_clock;
  /// Bookkeeping charged per entry and per output tensor, beyond the bytes themselves.
  static constexpr std::size_t entry_overhead = 256, tensor_overhead = 128;

  /// @throws error(errc::invalid_argument) for a zero capacity or a negative time to live.
  explicit response_cache(response_cache_options options) : options_(options) {
    if (options_.capacity_bytes == 0) throw error(errc::invalid_argument, "response cache capacity must be positive");
    if (options_.ttl < clock::duration::zero()) throw error(errc::invalid_argument, "response cache ttl must not be negative");
    if (options_.index_bits == 0 || options_.index_bits > 64) throw error(errc::invalid_argument, "response cache index_bits must be 1 to 64");
  }
  response_cache(const response_cache&) = delete;
  response_cache& operator=(const response_cache&) = delete;

  /// The outputs stored for exactly this request, or nothing (a miss, or an entry older than
  /// the time to live, which is dropped). The tensors are read-only views of the cache's copy
  /// and keep it alive after an eviction.
  [[nodiscard]] std::optional<runtime::tensor_map> find(const request_key& key, clock::time_point now = clock::now()) {
    const std::lock_guard lock(mutex_);
    const auto found = locate(key);
    if (!found) {
      ++stats_.misses;
      return std::nullopt;
    }
    const auto node = *found;
    if (expired(*node, now)) {
      erase(node);
      ++stats_.expirations;
      ++stats_.misses;
      return std::nullopt;
    }
    lru_.splice(lru_.begin(), lru_, node);
    ++stats_.hits;
    return views_of(node->outputs);
  }

  /// Stores deep copies of `outputs` for this request (replacing an entry with the same key),
  /// then evicts least recently used entries until the total fits. An entry larger than the
  /// whole capacity, or a first miss under admit_on_second_miss, is not stored; returns
  /// whether it was.
  bool insert(const request_key& key, const runtime::tensor_map& outputs, clock::time_point now = clock::now()) {
    if (options_.admit_on_second_miss && !admitted(key.hash())) return false;
    std::size_t cost = entry_overhead + key.size();
    for (const auto& [name, t] : outputs) cost += tensor_overhead + name.size() + t.byte_size();
    if (cost > options_.capacity_bytes) {
      const std::lock_guard lock(mutex_);
      ++stats_.too_large;
      return false;
    }
    auto copies = std::make_shared<runtime::tensor_map>();  // copied before locking: lookups wait less
    for (const auto& [name, t] : outputs) copies->emplace(name, t.clone());
    const std::lock_guard lock(mutex_);
    if (const auto found = locate(key)) erase(*found);
    lru_.push_front(entry{slot(key.hash()), key.bytes(), std::move(copies), cost, now});
    index_.emplace(slot(key.hash()), lru_.begin());
    stats_.bytes += cost;
    ++stats_.insertions;
    while (stats_.bytes > options_.capacity_bytes) {
      erase(std::prev(lru_.end()));
      ++stats_.evictions;
    }
    return true;
  }

  [[nodiscard]] response_cache_stats stats() const {
    const std::lock_guard lock(mutex_);
    response_cache_stats s = stats_;
    s.entries = lru_.size();
    return s;
  }

  [[nodiscard]] const response_cache_options& options() const noexcept { return options_; }

 private:
  struct entry {
    std::uint64_t slot;  // the index key: the hash's low index_bits
    std::string key;
    std::shared_ptr<const runtime::tensor_map> outputs;
    std::size_t cost;
    clock::time_point stored;
  };
  using node_t = std::list<entry>::iterator;

  /// Whether this hash missed before (then it is admitted and forgotten); else it is noted.
  bool admitted(std::uint64_t hash) {
    const std::lock_guard lock(mutex_);
    if (doorkeeper_.erase(hash) != 0) return true;
    if (doorkeeper_.size() >= options_.doorkeeper_size) doorkeeper_.clear();
    doorkeeper_.insert(hash);
    ++stats_.not_admitted;
    return false;
  }

  [[nodiscard]] std::uint64_t slot(std::uint64_t hash) const noexcept {
    return options_.index_bits >= 64 ? hash : hash & ((std::uint64_t{1} << options_.index_bits) - 1);
  }

  [[nodiscard]] std::optional<node_t> locate(const request_key& key) const {
    const auto [first, last] = index_.equal_range(slot(key.hash()));
    for (auto it = first; it != last; ++it) {
      if (key.matches(it->second->key)) return it->second;
    }
    return std::nullopt;
  }

  [[nodiscard]] bool expired(const entry& e, clock::time_point now) const noexcept {
    return options_.ttl != clock::duration::zero() && now - e.stored >= options_.ttl;
  }

  void erase(node_t node) {
    const auto [first, last] = index_.equal_range(node->slot);
    for (auto it = first; it != last; ++it) {
      if (it->second == node) {
        index_.erase(it);
        break;
      }
    }
    stats_.bytes -= node->cost;
    lru_.erase(node);
  }

  [[nodiscard]] static runtime::tensor_map views_of(const std::shared_ptr<const runtime::tensor_map>& outputs) {
    runtime::tensor_map views;
    for (const auto& [name, t] : *outputs) views.emplace(name, runtime::tensor::view(t.dtype(), t.shape(), t.raw(), outputs));
    return views;
  }

  response_cache_options options_;
  mutable std::mutex mutex_;
  std::list<entry> lru_;  // most recently used first
  std::unordered_multimap<std::uint64_t, node_t> index_;  // every node of lru_, once, under its slot
  response_cache_stats stats_;
  std::unordered_set<std::uint64_t> doorkeeper_;  // hashes of requests that missed once
};

}  // namespace inferopt::serve
