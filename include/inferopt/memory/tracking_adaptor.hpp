#pragma once
/// Records live allocations so that leaks can be reported.

#include <cstddef>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "inferopt/memory/memory_resource.hpp"

namespace inferopt::memory {

/// Allocations still live through a `tracking_adaptor`.
struct leak_report {
  std::size_t count = 0;                       ///< live allocations
  std::size_t bytes = 0;                       ///< their requested bytes
  std::map<std::size_t, std::size_t> by_size;  ///< requested size -> how many of that size

  [[nodiscard]] bool empty() const noexcept { return count == 0; }

  /// One line per size, largest first: "leaked 2 blocks of 4096 bytes". Empty when no leaks.
  [[nodiscard]] std::string to_string() const {
    std::string out;
    for (auto it = by_size.rbegin(); it != by_size.rend(); ++it) {
      out += "leaked " + std::to_string(it->second) + (it->second == 1 ? " block" : " blocks") + " of " +
             std::to_string(it->first) + " bytes\n";
    }
    if (count > 0) out += "total: " + std::to_string(count) + " leaked, " + std::to_string(bytes) + " bytes\n";
    return out;
  }
};

/// Remembers every live allocation made through it. `report()` lists what is live now; at
/// destruction a non-empty report goes to the sink (by default standard error), so leaks
/// surface in test logs. Memory still live at destruction stays allocated in the upstream.
/// The upstream must outlive the adaptor. Thread-safe.
class tracking_adaptor final : public memory_resource {
 public:
  using report_sink = std::function<void(const leak_report&)>;

  explicit tracking_adaptor(memory_resource& upstream, report_sink sink = print_to_stderr)
      : upstream_(&upstream), sink_(std::move(sink)) {}
  tracking_adaptor(const tracking_adaptor&) = delete;
  tracking_adaptor& operator=(const tracking_adaptor&) = delete;
  ~tracking_adaptor() override {
    leak_report r = report();
    if (!r.empty() && sink_) {
      try {
        sink_(r);
      } catch (...) {  // a destructor must not throw; the report is best effort
      }
    }
  }

  [[nodiscard]] leak_report report() const {
    std::lock_guard lock(mutex_);
    leak_report r;
    for (const auto& [ptr, bytes] : live_) {
      r.count += 1;
      r.bytes += bytes;
      r.by_size[bytes] += 1;
    }
    return r;
  }

  static void print_to_stderr(const leak_report& r) { std::cerr << "tracking_adaptor: " << r.to_string(); }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment, stream_ref stream) override {
    void* ptr = upstream_->allocate(bytes, alignment, stream);
    try {
      std::lock_guard lock(mutex_);
      live_.emplace(ptr, bytes);
    } catch (...) {
      upstream_->deallocate(ptr, bytes, alignment, stream);
      throw;
    }
    return ptr;
  }
  void do_deallocate(void* ptr, std::size_t bytes, std::size_t alignment, stream_ref stream) noexcept override {
    {
      std::lock_guard lock(mutex_);
      live_.erase(ptr);
    }
    upstream_->deallocate(ptr, bytes, alignment, stream);
  }
  [[nodiscard]] bool do_is_equal(const memory_resource& other) const noexcept override { return this == &other; }
  [[nodiscard]] free_space_info do_free_space() const override { return upstream_->free_space(); }

  memory_resource* upstream_;  // never null
  report_sink sink_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> live_;  // pointer -> requested bytes
};

}  // namespace inferopt::memory
