#pragma once
/// What makes two inference requests the same: the model, and every input's name, element
/// type, shape and bytes. A request_key views the request's tensors (it copies only the small
/// header), hashes them to 64 bits for the cache's index, and compares them byte for byte with
/// a stored key, so that a hash collision can never answer one request with another's
/// outputs (Triton's response cache trusts its 64-bit hash alone).

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/runtime/session.hpp"

namespace inferopt::serve {

namespace detail {

/// A 64-bit hash of `size` bytes, eight at a time in four independent lanes (so a 600 KB
/// image hashes at memory speed, not at FNV's byte a cycle), then mixed. Not cryptographic:
/// the cache confirms every hit by comparing bytes, so a collision costs a comparison only.
[[nodiscard]] inline std::uint64_t hash_bytes(const void* data, std::size_t size, std::uint64_t seed) noexcept {
  constexpr std::uint64_t k1 = 0x9e3779b97f4a7c15ULL, k2 = 0xbf58476d1ce4e5b9ULL, k3 = 0x94d049bb133111ebULL;
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t lane[4] = {seed ^ k1, seed ^ k2, seed ^ k3, seed + size};
  const auto mix = [&](std::uint64_t& h, std::uint64_t word) { h = std::rotl(h ^ (word * k2), 29) * k1; };
  std::size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (int l = 0; l < 4; ++l) {
      std::uint64_t word;
      std::memcpy(&word, p + i + 8 * l, 8);
      mix(lane[l], word);
    }
  }
  for (; i + 8 <= size; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, p + i, 8);
    mix(lane[0], word);
  }
  if (i < size) {
    std::uint64_t word = 0;
    std::memcpy(&word, p + i, size - i);
    mix(lane[1], word ^ (size - i));
  }
  std::uint64_t h = lane[0] ^ std::rotl(lane[1], 17) ^ std::rotl(lane[2], 31) ^ std::rotl(lane[3], 47);
  h ^= h >> 31;
  h *= k3;
  h ^= h >> 29;
  return h;
}

}  // namespace detail

/// A request seen as one byte string: a header (model name, then per input in name order its
/// name, element type, rank, dims and byte count, every field length-prefixed) followed by the
/// inputs' bytes in the same order. The header fixes every length, so two requests are the
/// same exactly when their byte strings are equal. The key shares the tensors' storage (it
/// holds their handles, not copies of their bytes), so it stays valid on its own.
class request_key {
 public:
  request_key(std::string_view model, const runtime::tensor_map& inputs) {
    put_text(model);
    put_number(inputs.size());
    for (const auto& [name, t] : inputs) {
      put_text(name);
      put_number(static_cast<std::uint64_t>(t.dtype()));
      put_number(t.rank());
      for (const std::int64_t d : t.shape()) put_number(static_cast<std::uint64_t>(d));
      put_number(t.byte_size());
      data_.emplace_back(static_cast<const char*>(t.raw()), t.byte_size());
      held_.push_back(t);
    }
    size_ = header_.size();
    for (const std::string_view piece : data_) size_ += piece.size();
    hash_ = detail::hash_bytes(header_.data(), header_.size(), 0);
    for (const std::string_view piece : data_) hash_ = detail::hash_bytes(piece.data(), piece.size(), hash_);
  }

  [[nodiscard]] std::uint64_t hash() const noexcept { return hash_; }

  /// Bytes of the whole string: what storing the key costs.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// The whole string, copied: what the cache stores beside an entry.
  [[nodiscard]] std::string bytes() const {
    std::string out;
    out.reserve(size());
    out += header_;
    for (const std::string_view piece : data_) out += piece;
    return out;
  }

  /// True when `stored` (an earlier key's bytes()) is this request, byte for byte.
  [[nodiscard]] bool matches(std::string_view stored) const noexcept {
    if (stored.size() != size() || stored.substr(0, header_.size()) != header_) return false;
    std::size_t at = header_.size();
    for (const std::string_view piece : data_) {
      if (stored.substr(at, piece.size()) != piece) return false;
      at += piece.size();
    }
    return true;
  }

 private:
  void put_number(std::uint64_t v) { header_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void put_text(std::string_view s) {
    put_number(s.size());
    header_.append(s);
  }

  std::string header_;
  std::vector<std::string_view> data_;  // views of held_'s bytes
  std::vector<runtime::tensor> held_;
  std::size_t size_ = 0;
  std::uint64_t hash_ = 0;
};

}  // namespace inferopt::serve
