#pragma once
/// A FIFO of at most `capacity` items between threads: push waits while it is full (that wait
/// is the back-pressure that keeps a fast stage from piling work before a slow one), pop
/// waits while it is empty. close() wakes everyone: later pushes fail, pops drain what is left
/// and then report the end.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

#include "inferopt/core/error.hpp"

namespace inferopt::serve {

template <class Item>
class bounded_queue {
 public:
  /// @throws error(errc::invalid_argument) for a zero capacity.
  explicit bounded_queue(std::size_t capacity) : capacity_(capacity) {
    if (capacity_ == 0) throw error(errc::invalid_argument, "a bounded queue needs a positive capacity");
  }
  bounded_queue(const bounded_queue&) = delete;
  bounded_queue& operator=(const bounded_queue&) = delete;

  /// Waits for room, then appends; false (and `item` untouched) once the queue is closed.
  bool push(Item& item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    items_.push_back(std::move(item));
    lock.unlock();
    not_empty_.notify_one();
    return true;
  }

  /// Waits for an item; nothing once the queue is closed and empty.
  std::optional<Item> pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    Item item = std::move(items_.front());
    items_.pop_front();
    lock.unlock();
    not_full_.notify_one();
    return item;
  }

  void close() {
    {
      const std::lock_guard lock(mutex_);
      closed_ = true;
    }
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  [[nodiscard]] std::size_t size() const {
    const std::lock_guard lock(mutex_);
    return items_.size();
  }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Item> items_;
  bool closed_ = false;
};

}  // namespace inferopt::serve
