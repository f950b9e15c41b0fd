#pragma once
/// A stage pipeline: each stage (CPU pre-processing, the model, post-processing) runs on its
/// own thread and hands its item to the next through a bounded queue, so the stages overlap
/// and the pipeline's throughput is that of its slowest stage, 1 / max(t_i), instead of
/// 1 / sum(t_i). The queues bound the work in flight: a producer faster than the slowest
/// stage waits in submit() (back-pressure) instead of growing memory.
///
/// Each stage's busy time per item is recorded in nanoseconds (stage_metrics); predicted_throughput() is
/// 1 / the largest mean. An exception in a stage skips the later stages and reaches that
/// item's future. Items leave in the order they came.

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/serve/bounded_queue.hpp"
#include "inferopt/serve/histogram.hpp"

namespace inferopt::serve {

template <class Item>
class pipeline {
 public:
  struct stage {
    std::string name;
    std::function<void(Item&)> work;  // transforms the item in place
  };

  struct stage_metrics {
    std::string name;
    histogram busy_ns;  // per item, in nanoseconds
  };

  /// `queue_capacity` items may wait before each stage. @throws error(errc::invalid_argument)
  /// for no stages, a stage without work, or a zero capacity.
  explicit pipeline(std::vector<stage> stages, std::size_t queue_capacity = 4) : stages_(std::move(stages)) {
    if (stages_.empty()) throw error(errc::invalid_argument, "a pipeline needs at least one stage");
    for (const stage& s : stages_) {
      if (!s.work) throw error(errc::invalid_argument, "pipeline stage '" + s.name + "' has no work");
    }
    for (std::size_t i = 0; i < stages_.size(); ++i) {
      queues_.push_back(std::make_unique<bounded_queue<envelope>>(queue_capacity));
      metrics_.push_back(std::make_unique<stage_metrics>());
      metrics_.back()->name = stages_[i].name;
    }
    for (std::size_t i = 0; i < stages_.size(); ++i) threads_.emplace_back([this, i] { run_stage(i); });
  }
  ~pipeline() { close(); }
  pipeline(const pipeline&) = delete;
  pipeline& operator=(const pipeline&) = delete;

  /// Queues an item for the first stage, waiting while its queue is full. The future holds
  /// the item after the last stage, or a stage's exception.
  /// @throws error(errc::invalid_argument) after close().
  [[nodiscard]] std::future<Item> submit(Item item) {
    envelope e{std::move(item), {}, nullptr};
    std::future<Item> done = e.done.get_future();
    if (!queues_.front()->push(e)) throw error(errc::invalid_argument, "the pipeline is closed");
    return done;
  }

  /// Finishes every submitted item, then stops the stages. Idempotent.
  void close() {
    std::call_once(closed_, [this] {
      queues_.front()->close();
      for (std::thread& t : threads_) t.join();
    });
  }

  [[nodiscard]] const stage_metrics& metrics(std::size_t stage_index) const { return *metrics_.at(stage_index); }
  [[nodiscard]] std::size_t stage_count() const noexcept { return stages_.size(); }

  /// Items per second the slowest stage allows, from the mean busy times so far (0 before
  /// any item).
  [[nodiscard]] double predicted_throughput() const {
    double slowest = 0;
    for (const auto& m : metrics_) slowest = std::max(slowest, m->busy_ns.mean());
    return slowest > 0 ? 1e9 / slowest : 0.0;
  }

 private:
  struct envelope {
    Item item;
    std::promise<Item> done;
    std::exception_ptr failure;
  };

  void run_stage(std::size_t i) {
    bounded_queue<envelope>* next = i + 1 < queues_.size() ? queues_[i + 1].get() : nullptr;
    while (std::optional<envelope> e = queues_[i]->pop()) {
      if (!e->failure) {
        const auto start = std::chrono::steady_clock::now();
        try {
          stages_[i].work(e->item);
        } catch (...) {
          e->failure = std::current_exception();
        }
        const auto busy = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
        metrics_[i]->busy_ns.record(static_cast<std::uint64_t>(busy.count()));
      }
      if (next) {
        next->push(*e);  // the next stage closes only after this one ends: the push succeeds
      } else if (e->failure) {
        e->done.set_exception(e->failure);
      } else {
        e->done.set_value(std::move(e->item));
      }
    }
    if (next) next->close();  // this stage drained: the next one may end after its queue
  }

  std::vector<stage> stages_;
  std::vector<std::unique_ptr<bounded_queue<envelope>>> queues_;  // queues_[i] feeds stage i
  std::vector<std::unique_ptr<stage_metrics>> metrics_;
  std::vector<std::thread> threads_;
  std::once_flag closed_;
};

}  // namespace inferopt::serve
