#pragma once
// Pointer -> block lookup for the pools: open addressing with linear probing, so a lookup is
// a hash and a short scan in one array, and inserting never allocates a node (a node-based
// map would call malloc inside the allocator meant to beat it).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace inferopt::memory::detail {

template <class Value>
class address_map {
 public:
  address_map() : slots_(64), shift_(64 - 6) {}

  /// Files `value` under the non-null `key`, which must not be present.
  void insert(const void* key, Value* value) {
    if (2 * (size_ + 1) > slots_.size()) rehash(2 * slots_.size());
    place(key, value);
    ++size_;
  }

  /// Removes `key` and returns its value; null when absent.
  Value* take(const void* key) noexcept {
    std::size_t i = home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == nullptr) return nullptr;
      i = next(i);
    }
    Value* value = slots_[i].value;
    // Backward-shift deletion: pull later entries of the probe run into the hole so that
    // lookups never need tombstones.
    for (std::size_t j = next(i); slots_[j].key != nullptr; j = next(j)) {
      const std::size_t k = home(slots_[j].key);
      const bool reachable_from_hole = i <= j ? (k <= i || k > j) : (k <= i && k > j);
      if (reachable_from_hole) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = {};
    --size_;
    return value;
  }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  struct slot {
    const void* key = nullptr;
    Value* value = nullptr;
  };

  // Fibonacci hashing: the top bits of the product depend on every bit of the address, so
  // blocks that differ only in middle bits (all are 256-byte aligned) still spread.
  [[nodiscard]] std::size_t home(const void* key) const noexcept {
    const auto x = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(key));
    return static_cast<std::size_t>((x * 0x9e3779b97f4a7c15ULL) >> shift_);
  }
  [[nodiscard]] std::size_t next(std::size_t i) const noexcept { return (i + 1) & (slots_.size() - 1); }

  void place(const void* key, Value* value) noexcept {
    std::size_t i = home(key);
    while (slots_[i].key != nullptr) i = next(i);
    slots_[i] = {key, value};
  }

  void rehash(std::size_t capacity) {
    std::vector<slot> old(capacity);
    old.swap(slots_);
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(capacity));
    for (const slot& s : old) {
      if (s.key != nullptr) place(s.key, s.value);
    }
  }

  std::vector<slot> slots_;  // size is a power of two, at most half full
  unsigned shift_;  // 64 - log2(slots_.size())
  std::size_t size_ = 0;
};

}  // namespace inferopt::memory::detail
