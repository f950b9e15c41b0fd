#pragma once
// Free blocks filed by size class so that a fitting block is found in constant time: the
// two-level scheme of TLSF (Masmano et al.), an octave and then 16 equal steps inside it, with
// a bitmap of the non-empty classes. Lists are intrusive: the block carries its links.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace inferopt::memory::detail {

/// `Block` has `std::size_t size` (a multiple of the granularity) and `Block* bin_prev,
/// *bin_next`, owned by this container while the block is filed here.
template <class Block>
class size_class_bins {
 public:
  explicit size_class_bins(unsigned granularity_log2) noexcept : shift_(granularity_log2) {}

  void insert(Block* b) noexcept {
    const std::size_t c = class_of(b->size);
    b->bin_prev = nullptr;
    b->bin_next = heads_[c];
    if (heads_[c] != nullptr) heads_[c]->bin_prev = b;
    heads_[c] = b;
    nonempty_[c / 64] |= bit(c);
    nonempty_words_ |= bit(c / 64);
    bytes_ += b->size;
  }

  void erase(Block* b) noexcept {
    const std::size_t c = class_of(b->size);
    if (b->bin_prev != nullptr) {
      b->bin_prev->bin_next = b->bin_next;
    } else {
      heads_[c] = b->bin_next;
    }
    if (b->bin_next != nullptr) b->bin_next->bin_prev = b->bin_prev;
    if (heads_[c] == nullptr && (nonempty_[c / 64] &= ~bit(c)) == 0) nonempty_words_ &= ~bit(c / 64);
    bytes_ -= b->size;
  }

  /// The smallest block of at least `size` bytes. Exact below 16 granules, where a class holds
  /// one size; above, the search looks at `scan_limit` blocks of a class at most, so a long
  /// list of equal-class blocks cannot make it slow.
  [[nodiscard]] Block* best_fit(std::size_t size) const noexcept {
    std::size_t c = class_of(size);
    if (Block* b = smallest_at_least(heads_[c], size)) return b;
    c = next_nonempty(c + 1);
    return c == class_count ? nullptr : smallest_at_least(heads_[c], size);  // every block there fits
  }

  /// Calls f(block) for every filed block; f must not insert or erase.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t c = next_nonempty(0); c < class_count; c = next_nonempty(c + 1)) {
      for (Block* b = heads_[c]; b != nullptr; b = b->bin_next) f(b);
    }
  }

  [[nodiscard]] bool empty() const noexcept { return bytes_ == 0; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::size_t largest() const noexcept {
    for (std::size_t w = words; w-- > 0;) {
      if (nonempty_[w] == 0) continue;
      const std::size_t c = w * 64 + 63 - static_cast<std::size_t>(std::countl_zero(nonempty_[w]));
      std::size_t best = 0;
      for (Block* b = heads_[c]; b != nullptr; b = b->bin_next) best = b->size > best ? b->size : best;
      return best;
    }
    return 0;
  }

 private:
  static constexpr unsigned steps_log2 = 4;
  static constexpr std::size_t class_count = std::size_t{64} << steps_log2;
  static constexpr std::size_t words = class_count / 64;
  static constexpr std::size_t scan_limit = 32;

  static constexpr std::uint64_t bit(std::size_t c) noexcept { return std::uint64_t{1} << (c % 64); }

  // Sizes below 16 granules get a class each; above, a class spans 1/16 of an octave.
  [[nodiscard]] std::size_t class_of(std::size_t size) const noexcept {
    const std::size_t units = size >> shift_;
    if (units < (std::size_t{1} << steps_log2)) return units;
    const auto octave = static_cast<unsigned>(std::bit_width(units) - 1);
    const std::size_t step = (units >> (octave - steps_log2)) & ((std::size_t{1} << steps_log2) - 1);
    return (static_cast<std::size_t>(octave - steps_log2 + 1) << steps_log2) + step;
  }

  // Two bitmap levels (classes, then words of classes) make this a few instructions.
  [[nodiscard]] std::size_t next_nonempty(std::size_t from) const noexcept {
    if (from >= class_count) return class_count;
    const std::size_t w = from / 64;
    if (const std::uint64_t bits = nonempty_[w] & (~std::uint64_t{0} << (from % 64)); bits != 0) {
      return w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
    }
    const std::uint64_t later_words = w + 1 < 64 ? nonempty_words_ & (~std::uint64_t{0} << (w + 1)) : 0;
    if (later_words == 0) return class_count;
    const auto next_word = static_cast<std::size_t>(std::countr_zero(later_words));
    return next_word * 64 + static_cast<std::size_t>(std::countr_zero(nonempty_[next_word]));
  }

  static Block* smallest_at_least(Block* head, std::size_t size) noexcept {
    Block* best = nullptr;
    std::size_t looked = 0;
    for (Block* b = head; b != nullptr && looked < scan_limit; b = b->bin_next, ++looked) {
      if (b->size < size || (best != nullptr && b->size >= best->size)) continue;
      best = b;
      if (b->size == size) break;
    }
    return best;
  }

  unsigned shift_;
  std::size_t bytes_ = 0;
  std::array<Block*, class_count> heads_{};
  std::array<std::uint64_t, words> nonempty_{};
  std::uint64_t nonempty_words_ = 0;  // bit w: nonempty_[w] != 0
  static_assert(words <= 64);
};

}  // namespace inferopt::memory::detail
