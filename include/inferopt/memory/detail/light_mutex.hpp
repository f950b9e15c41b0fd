#pragma once
// A mutex that costs one compare-and-swap to take and one exchange to give back when nobody
// waits; waiters sleep in the kernel (std::atomic wait/notify, a futex on Linux). The pools
// take a lock per call, and std::mutex's extra bookkeeping was a tenth of an allocation.
// Three states, after Drepper's "Futexes Are Tricky": 0 free, 1 taken, 2 taken with waiters.

#include <atomic>

namespace inferopt::memory::detail {

class light_mutex {
 public:
  void lock() noexcept {
    int expected = 0;
    if (state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed)) return;
    // Announce a waiter (state 2) before sleeping, so that unlock knows to wake someone.
    if (expected != 2) expected = state_.exchange(2, std::memory_order_acquire);
    while (expected != 0) {
      state_.wait(2, std::memory_order_relaxed);
      expected = state_.exchange(2, std::memory_order_acquire);
    }
  }

  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) state_.notify_one();
  }

 private:
  std::atomic<int> state_{0};
};

}  // namespace inferopt::memory::detail
