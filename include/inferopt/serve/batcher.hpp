#pragma once
/// A dynamic batcher: requests that arrive close together run as one batch along the first
/// (batch) dimension, on one of several model instances, and each request gets its own rows
/// of the outputs back through a future. Anchor: Triton's dynamic batcher.
///
/// Strategy:
/// - Requests batch only with requests of the same input names, element types and non-batch
///   dims (one bucket per such signature). In a bucket they wait in one FIFO per priority
///   level (1 is the highest), then those whose queue timeout passed under
///   timeout_action::delay.
/// - An idle instance takes a batch from the bucket whose first request is the most urgent
///   (priority, then arrival) among the buckets that are ready: rows reach max_batch or one of
///   the preferred sizes, or the oldest request has waited max_delay, or the batcher is
///   stopping. It takes requests in that order while they fit: a preferred size's worth when
///   one is reached, max_batch's otherwise.
/// - max_delay counts from the later of the oldest request's arrival and the moment the
///   instance became free: time spent queued behind a running batch is not time spent waiting
///   for company. Under a closed loop of C clients and one instance this is what lets batches
///   fill: the clients of the batch that just finished send again within a moment, and
///   counting from arrival would start the C/2 that queued meanwhile at once, so two half
///   batches would alternate for ever.
/// - Inputs are copied into batch buffers from a caching pool (memory/caching_pool.hpp), so
///   steady traffic reuses the same blocks; outputs whose first dim is the batch's rows are
///   handed back as views of each request's rows (no copy), others whole. With padded_sizes,
///   zero rows fill a batch up to the next size, and their outputs are dropped.
/// - max_queue bounds the requests waiting: a submit beyond it fails at once
///   (rejection_reason::queue_full). With max_batch 1 nothing is batched: each request runs
///   as it came, whatever its shapes (for models without a batch dimension).
/// - max_queue_wait bounds the wait instead of the count: a submit fails at once
///   (rejection_reason::expected_wait) when the request would wait longer than that before
///   its batch starts. The estimate is the time until the first instance frees plus one
///   recent batch time per round of full batches queued ahead. Under overload a count bound
///   is a latency floor (64 queued in batches of 16 wait four batches); a bound on the wait
///   keeps the accepted requests' latency near what they see unloaded, and refuses the
///   excess at arrival, where a queue timeout would refuse it only after the timeout. A
///   request that fits in the next batch to form is always taken, whatever the estimate:
///   when the model's batches slow down (a neighbour takes the cores) a bound below one
///   batch time would otherwise refuse the rows that fill batches, and the server would
///   answer less exactly when it is short of CPU.
/// Thread-safe; the destructor stops the batcher, which first runs every queued request.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "inferopt/runtime/session.hpp"
#include "inferopt/serve/histogram.hpp"
#include "inferopt/serve/rejection.hpp"

namespace inferopt::serve {

enum class timeout_action {
  reject,  ///< fail the request (rejection_reason::timed_out)
  delay,   ///< keep it, behind every request that has not timed out
};

struct batcher_options {
  std::int64_t max_batch = 8;                  ///< rows in a batch; 1 runs requests as they come
  std::vector<std::int64_t> preferred_batch;   ///< sizes at which a batch forms without waiting
  std::chrono::microseconds max_delay{0};      ///< how long a batch waits for more rows once an instance is free
  std::size_t max_queue = 0;                   ///< waiting requests beyond which submit fails; 0: no bound
  std::chrono::microseconds max_queue_wait{0}; ///< expected queue wait beyond which submit fails; 0: no bound
  int priority_levels = 1;                     ///< request priorities 1 (highest) .. this
  std::chrono::microseconds queue_timeout{0};  ///< the default queue timeout; 0: none
  timeout_action on_timeout = timeout_action::reject;
  /// Batch shapes: a batch is padded with zero rows up to the smallest of these sizes that
  /// holds it, so the model sees a few batch sizes only (oneDNN compiles a primitive, and the
  /// executor plans memory, once per size). Empty: batches run at their own size.
  std::vector<std::int64_t> padded_sizes;
};

/// 1, 2, 4, ... up to max_batch, and max_batch itself: at most twice the rows computed, and
/// log2(max_batch) + 1 shapes.
[[nodiscard]] std::vector<std::int64_t> powers_of_two_up_to(std::int64_t max_batch);

struct inference_request {
  runtime::tensor_map inputs;
  int priority = 0;                       ///< 1 (highest) .. priority_levels; 0: the lowest
  std::chrono::microseconds timeout{0};   ///< lowers the default queue timeout; 0: the default
};

/// Runs one batch on one model instance (a session, usually); called from one thread at a time
/// per instance.
using batch_runner = std::function<runtime::tensor_map(const runtime::tensor_map& batch)>;

/// What the batcher has done, for metrics. Histograms in microseconds and rows.
struct batcher_metrics {
  histogram queue_us, compute_us, batch_rows;
  std::atomic<std::uint64_t> batches{0}, requests{0}, rejected_full{0}, rejected_wait{0}, timed_out{0}, failed{0};
  std::atomic<std::uint64_t> padding_rows{0};  ///< zero rows added to reach a padded size
};

class batcher {
 public:
  /// One worker thread per runner. @throws error(errc::invalid_argument) for no runners,
  /// max_batch below 1, a preferred size outside [1, max_batch], fewer than 1 priority level
  /// or a negative delay or timeout.
  batcher(batcher_options options, std::vector<batch_runner> instances);
  ~batcher();
  batcher(const batcher&) = delete;
  batcher& operator=(const batcher&) = delete;

  /// Queues a request. The future holds its outputs, or the runner's exception, or a
  /// rejection. @throws error(errc::invalid_argument) for a request that cannot be batched
  /// (no inputs, inputs of different first dims, more rows than max_batch, a priority out of
  /// range); @throws rejection when the queue is full, the expected wait is too long or the
  /// batcher has stopped.
  [[nodiscard]] std::future<runtime::tensor_map> submit(inference_request request);

  /// @throws rejection when a request of these rows would be refused now: a cheap check
  /// before the work of decoding one (submit checks again, and its check is the one that
  /// holds under races).
  void admit(std::int64_t rows = 1);

  /// How long a request of these rows would wait now before its batch starts; zero until a
  /// batch has run (nothing is known of the model's speed before).
  [[nodiscard]] std::chrono::microseconds expected_wait(std::int64_t rows = 1) const;

  /// The moving average of recent batch times that expected_wait uses; zero before the first.
  [[nodiscard]] std::chrono::microseconds recent_batch_time() const;

  /// Stops accepting requests, runs every queued one, and joins the workers. Idempotent.
  void stop();

  [[nodiscard]] std::size_t pending() const;
  [[nodiscard]] const batcher_metrics& metrics() const noexcept { return metrics_; }
  [[nodiscard]] const batcher_options& options() const noexcept { return options_; }

 private:
  using clock = std::chrono::steady_clock;
  struct pending_request;
  struct bucket;
  struct formed_batch;
  struct buffer_pool;

  void work(std::size_t instance);
  [[nodiscard]] bool form(formed_batch& out, clock::time_point now, clock::time_point free_since);
  [[nodiscard]] clock::time_point next_event(clock::time_point free_since) const;
  [[nodiscard]] clock::time_point delay_ends(const bucket& b, clock::time_point free_since) const;
  void expire(clock::time_point now);
  void admit_locked(std::int64_t rows);
  [[nodiscard]] std::chrono::microseconds expected_wait_locked(std::int64_t rows, clock::time_point now) const;
  [[nodiscard]] std::int64_t rounds_ahead_locked(std::int64_t rows) const;
  void run(std::size_t instance, formed_batch& batch);
  [[nodiscard]] runtime::tensor_map gather(const formed_batch& batch, std::int64_t padded_rows);
  [[nodiscard]] std::int64_t padded_rows(std::int64_t rows) const noexcept;
  void scatter(formed_batch& batch, const runtime::tensor_map& outputs, std::int64_t padded_rows) const;

  batcher_options options_;
  std::vector<batch_runner> instances_;
  std::shared_ptr<buffer_pool> pool_;  // shared with the batch inputs' holders, which may outlive the batcher
  batcher_metrics metrics_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, std::unique_ptr<bucket>> buckets_;  // by signature
  std::size_t pending_ = 0;
  std::vector<clock::time_point> busy_since_;  // per instance: when its running batch started; max: idle
  double batch_us_ = 0;                        // recent batch time, a moving average; 0: none run yet
  std::uint64_t arrivals_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  std::once_flag joined_;
};

}  // namespace inferopt::serve
