// The dynamic batcher (include/inferopt/serve/batcher.hpp says how batches form).
#include "inferopt/serve/batcher.hpp"

#include <algorithm>
#include <cstring>
#include <deque>

#include "inferopt/core/error.hpp"
#include "inferopt/memory/caching_pool.hpp"
#include "inferopt/memory/host_resource.hpp"

namespace inferopt::serve {

namespace {

using clock = std::chrono::steady_clock;

std::uint64_t microseconds_between(clock::time_point from, clock::time_point to) {
  return static_cast<std::uint64_t>(std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::microseconds>(to - from).count()));
}

void check_options(const batcher_options& o, std::size_t instances) {
  const auto invalid = [](const std::string& what) { throw error(errc::invalid_argument, "batcher: " + what); };
  if (instances == 0) invalid("needs at least one model instance");
  if (o.max_batch < 1) invalid("max_batch must be at least 1");
  for (const std::int64_t p : o.preferred_batch) {
    if (p < 1 || p > o.max_batch) invalid("preferred batch size " + std::to_string(p) + " is outside 1.." + std::to_string(o.max_batch));
  }
  if (o.priority_levels < 1) invalid("priority_levels must be at least 1");
  if (o.max_delay.count() < 0 || o.queue_timeout.count() < 0 || o.max_queue_wait.count() < 0) {
    invalid("max_delay, queue_timeout and max_queue_wait must not be negative");
  }
  for (const std::int64_t p : o.padded_sizes) {
    if (p < 1 || p > o.max_batch) invalid("padded size " + std::to_string(p) + " is outside 1.." + std::to_string(o.max_batch));
  }
  if (!o.padded_sizes.empty() && std::find(o.padded_sizes.begin(), o.padded_sizes.end(), o.max_batch) == o.padded_sizes.end()) {
    invalid("padded sizes must include max_batch, which every batch fits");
  }
}

/// The rows of a batchable request (the first dim every input shares), and its bucket's
/// signature: names, element types and the dims after the first.
std::pair<std::int64_t, std::string> rows_and_signature(const runtime::tensor_map& inputs, std::int64_t max_batch) {
  const auto invalid = [](const std::string& what) { throw error(errc::invalid_argument, what); };
  if (inputs.empty()) invalid("the request has no inputs");
  if (max_batch == 1) return {1, {}};
  std::int64_t rows = -1;
  std::string signature;
  for (const auto& [name, t] : inputs) {
    if (t.rank() == 0) invalid("input '" + name + "' has no batch dimension");
    if (ir::element_size(t.dtype()) == 0) invalid("input '" + name + "' has an element type that cannot be batched");
    if (rows >= 0 && t.dim(0) != rows) invalid("input '" + name + "' has " + std::to_string(t.dim(0)) + " rows, another " + std::to_string(rows));
    rows = t.dim(0);
    signature += name;
    signature += '\0';
    signature += std::to_string(static_cast<int>(t.dtype()));
    for (std::size_t a = 1; a < t.rank(); ++a) signature += ',' + std::to_string(t.dim(a));
    signature += ';';
  }
  if (rows < 1) invalid("the request has no rows");
  if (rows > max_batch) invalid("the request has " + std::to_string(rows) + " rows, more than the batch of " + std::to_string(max_batch));
  return {rows, signature};
}

}  // namespace

std::vector<std::int64_t> powers_of_two_up_to(std::int64_t max_batch) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t p = 1; p < max_batch; p *= 2) sizes.push_back(p);
  sizes.push_back(std::max<std::int64_t>(max_batch, 1));
  return sizes;
}

struct batcher::pending_request {
  runtime::tensor_map inputs;
  std::int64_t rows = 1;
  std::uint64_t arrival = 0;
  clock::time_point enqueued;
  clock::time_point deadline = clock::time_point::max();  // max: none, or already delayed
  std::promise<runtime::tensor_map> promise;
};

// Queues per priority level (0 the highest), then one of delayed requests: each FIFO.
struct batcher::bucket {
  std::vector<std::deque<std::unique_ptr<pending_request>>> queues;
  std::int64_t rows = 0;
  std::size_t count = 0;

  explicit bucket(int levels) : queues(static_cast<std::size_t>(levels) + 1) {}

  /// The index of the first non-empty queue (queues.size() when empty).
  [[nodiscard]] std::size_t first_queue() const {
    std::size_t q = 0;
    while (q < queues.size() && queues[q].empty()) ++q;
    return q;
  }

  [[nodiscard]] clock::time_point oldest() const {
    clock::time_point t = clock::time_point::max();
    for (const auto& q : queues) {
      if (!q.empty()) t = std::min(t, q.front()->enqueued);
    }
    return t;
  }
};

// Batch input buffers: a caching pool over host memory, so steady traffic reuses its blocks.
struct batcher::buffer_pool {
  memory::host_resource host;
  memory::caching_pool pool{host};
};

struct batcher::formed_batch {
  std::vector<std::unique_ptr<pending_request>> requests;
  std::int64_t rows = 0;
};

batcher::batcher(batcher_options options, std::vector<batch_runner> instances)
    : options_(std::move(options)), instances_(std::move(instances)), pool_(std::make_shared<buffer_pool>()) {
  check_options(options_, instances_.size());
  std::sort(options_.preferred_batch.begin(), options_.preferred_batch.end());
  std::sort(options_.padded_sizes.begin(), options_.padded_sizes.end());
  if (options_.max_batch == 1) options_.padded_sizes.clear();  // requests run whole: their first dim need not be a batch
  busy_since_.assign(instances_.size(), clock::time_point::max());
  for (std::size_t i = 0; i < instances_.size(); ++i) workers_.emplace_back([this, i] { work(i); });
}

batcher::~batcher() { stop(); }

std::future<runtime::tensor_map> batcher::submit(inference_request request) {
  const auto [rows, signature] = rows_and_signature(request.inputs, options_.max_batch);
  if (request.priority < 0 || request.priority > options_.priority_levels) {
    throw error(errc::invalid_argument, "priority " + std::to_string(request.priority) + " is outside 1.." + std::to_string(options_.priority_levels));
  }
  if (request.timeout.count() < 0) throw error(errc::invalid_argument, "the request's timeout is negative");
  auto pending = std::make_unique<pending_request>();
  pending->inputs = std::move(request.inputs);
  pending->rows = rows;
  pending->enqueued = clock::now();
  std::chrono::microseconds timeout = options_.queue_timeout;
  if (request.timeout.count() > 0) timeout = timeout.count() > 0 ? std::min(timeout, request.timeout) : request.timeout;
  if (timeout.count() > 0) pending->deadline = pending->enqueued + timeout;
  std::future<runtime::tensor_map> result = pending->promise.get_future();
  const std::size_t level = static_cast<std::size_t>(request.priority == 0 ? options_.priority_levels : request.priority) - 1;
  {
    const std::lock_guard lock(mutex_);
    admit_locked(rows);
    auto& slot = buckets_[signature];
    if (!slot) slot = std::make_unique<bucket>(options_.priority_levels);
    pending->arrival = arrivals_++;
    slot->rows += rows;
    ++slot->count;
    slot->queues[level].push_back(std::move(pending));
    ++pending_;
  }
  metrics_.requests.fetch_add(1, std::memory_order_relaxed);
  wake_.notify_one();
  return result;
}

void batcher::admit(std::int64_t rows) {
  const std::lock_guard lock(mutex_);
  admit_locked(rows);
}

void batcher::admit_locked(std::int64_t rows) {
  if (stopping_) throw rejection(rejection_reason::shutting_down, "the server is shutting down");
  if (options_.max_queue > 0 && pending_ >= options_.max_queue) {
    metrics_.rejected_full.fetch_add(1, std::memory_order_relaxed);
    throw rejection(rejection_reason::queue_full, "the queue is full (" + std::to_string(options_.max_queue) + " requests)");
  }
  // A request that fits in the next batch to form is always taken: refusing it would leave
  // that batch short, and no one's wait grows by it (batcher.hpp).
  if (options_.max_queue_wait.count() == 0 || rounds_ahead_locked(rows) == 0) return;
  const std::chrono::microseconds wait = expected_wait_locked(rows, clock::now());
  if (wait > options_.max_queue_wait) {
    metrics_.rejected_wait.fetch_add(1, std::memory_order_relaxed);
    throw rejection(rejection_reason::expected_wait, "the expected queue wait (" + std::to_string(wait.count()) +
                                                         " us) exceeds the bound (" + std::to_string(options_.max_queue_wait.count()) + " us)");
  }
}

std::chrono::microseconds batcher::expected_wait(std::int64_t rows) const {
  const std::lock_guard lock(mutex_);
  return expected_wait_locked(rows, clock::now());
}

std::chrono::microseconds batcher::recent_batch_time() const {
  const std::lock_guard lock(mutex_);
  return std::chrono::microseconds(static_cast<std::int64_t>(batch_us_));
}

// The time until the first instance frees (a busy one is assumed to take one recent batch
// time), plus a batch time per round of full batches, across the instances, queued ahead of
// the request's last row. Priorities and buckets are ignored: a bound, not a schedule.
std::chrono::microseconds batcher::expected_wait_locked(std::int64_t rows, clock::time_point now) const {
  if (batch_us_ <= 0) return std::chrono::microseconds(0);
  double first_free = batch_us_;
  for (const clock::time_point since : busy_since_) {
    const double remaining = since == clock::time_point::max() ? 0.0 : batch_us_ - static_cast<double>(microseconds_between(since, now));
    first_free = std::min(first_free, std::max(remaining, 0.0));
  }
  return std::chrono::microseconds(static_cast<std::int64_t>(first_free + static_cast<double>(rounds_ahead_locked(rows)) * batch_us_));
}

// Rounds of full batches (max_batch on every instance) queued ahead of the request's last row.
std::int64_t batcher::rounds_ahead_locked(std::int64_t rows) const {
  const std::int64_t per_round = options_.max_batch * static_cast<std::int64_t>(instances_.size());
  std::int64_t queued = 0;  // the buckets' rows: a few buckets, and no counter to keep in step
  for (const auto& [signature, b] : buckets_) queued += b->rows;
  return (queued + rows - 1) / per_round;
}

void batcher::stop() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  std::call_once(joined_, [this] {
    for (std::thread& w : workers_) w.join();
  });
}

std::size_t batcher::pending() const {
  const std::lock_guard lock(mutex_);
  return pending_;
}

void batcher::work(std::size_t instance) {
  std::unique_lock lock(mutex_);
  clock::time_point free_since = clock::time_point::min();
  while (true) {
    const clock::time_point now = clock::now();
    expire(now);
    formed_batch batch;
    if (form(batch, now, free_since)) {
      busy_since_[instance] = now;
      lock.unlock();
      wake_.notify_one();  // another instance may take the next batch
      run(instance, batch);
      lock.lock();
      free_since = clock::now();
      busy_since_[instance] = clock::time_point::max();
      // A moving average over about the last eight batches: it follows a change of load
      // (batch sizes, a neighbour taking the cores) within a few batches.
      const auto took = static_cast<double>(microseconds_between(now, free_since));
      batch_us_ = batch_us_ <= 0 ? took : batch_us_ + (took - batch_us_) / 8.0;
      continue;
    }
    if (stopping_ && pending_ == 0) return;
    const clock::time_point until = next_event(free_since);
    if (until == clock::time_point::max()) {
      wake_.wait(lock);
    } else {
      wake_.wait_until(lock, until);
    }
  }
}

void batcher::expire(clock::time_point now) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    bucket& b = *it->second;
    auto& delayed = b.queues.back();
    for (std::size_t q = 0; q + 1 < b.queues.size(); ++q) {
      auto& queue = b.queues[q];
      const auto late = std::stable_partition(queue.begin(), queue.end(), [&](const auto& r) { return r->deadline > now; });
      for (auto r = late; r != queue.end(); ++r) {
        if (options_.on_timeout == timeout_action::delay) {
          (*r)->deadline = clock::time_point::max();
          delayed.push_back(std::move(*r));
          continue;
        }
        (*r)->promise.set_exception(std::make_exception_ptr(rejection(rejection_reason::timed_out, "the request timed out in the queue")));
        metrics_.timed_out.fetch_add(1, std::memory_order_relaxed);
        b.rows -= (*r)->rows;
        --b.count;
        --pending_;
      }
      queue.erase(late, queue.end());
    }
    it = b.count == 0 ? buckets_.erase(it) : std::next(it);
  }
}

bool batcher::form(formed_batch& out, clock::time_point now, clock::time_point free_since) {
  // The ready bucket whose first request is the most urgent: lowest queue, then earliest.
  bucket* best = nullptr;
  std::string best_signature;
  std::pair<std::size_t, std::uint64_t> best_rank{};
  bool best_waited = false;
  for (auto& [signature, b] : buckets_) {
    const bool waited = stopping_ || now >= delay_ends(*b, free_since);
    const bool preferred = !options_.preferred_batch.empty() && b->rows >= options_.preferred_batch.front();
    if (!waited && !preferred && b->rows < options_.max_batch) continue;
    const std::size_t q = b->first_queue();
    const std::pair<std::size_t, std::uint64_t> rank{q, b->queues[q].front()->arrival};
    if (!best || rank < best_rank) best = b.get(), best_signature = signature, best_rank = rank, best_waited = waited;
  }
  if (!best) return false;
  std::int64_t target = options_.max_batch;
  if (!best_waited && best->rows < options_.max_batch) {
    // A preferred size was reached: the largest one the waiting rows fill.
    for (const std::int64_t p : options_.preferred_batch) {
      if (p <= best->rows) target = p;
    }
  }
  for (auto& queue : best->queues) {
    while (!queue.empty() && (out.rows + queue.front()->rows <= target || out.requests.empty())) {
      out.rows += queue.front()->rows;
      out.requests.push_back(std::move(queue.front()));
      queue.pop_front();
    }
    if (!queue.empty()) break;  // the next request does not fit: keep the order
  }
  best->rows -= out.rows;
  best->count -= out.requests.size();
  pending_ -= out.requests.size();
  if (best->count == 0) buckets_.erase(best_signature);
  return true;
}

batcher::clock::time_point batcher::next_event(clock::time_point free_since) const {
  clock::time_point t = clock::time_point::max();
  for (const auto& [signature, b] : buckets_) {
    t = std::min(t, delay_ends(*b, free_since));
    for (std::size_t q = 0; q + 1 < b->queues.size(); ++q) {
      for (const auto& r : b->queues[q]) t = std::min(t, r->deadline);
    }
  }
  return t;
}

// When a bucket stops waiting for company: max_delay after the later of its oldest request's
// arrival and the moment this instance became free (batcher.hpp says why).
batcher::clock::time_point batcher::delay_ends(const bucket& b, clock::time_point free_since) const {
  return std::max(b.oldest(), free_since) + options_.max_delay;
}

std::int64_t batcher::padded_rows(std::int64_t rows) const noexcept {
  for (const std::int64_t p : options_.padded_sizes) {
    if (p >= rows) return p;
  }
  return rows;
}

void batcher::run(std::size_t instance, formed_batch& batch) {
  const clock::time_point start = clock::now();
  for (const auto& r : batch.requests) metrics_.queue_us.record(microseconds_between(r->enqueued, start));
  metrics_.batch_rows.record(static_cast<std::uint64_t>(batch.rows));
  metrics_.batches.fetch_add(1, std::memory_order_relaxed);
  const std::int64_t rows = padded_rows(batch.rows);
  metrics_.padding_rows.fetch_add(static_cast<std::uint64_t>(rows - batch.rows), std::memory_order_relaxed);
  try {
    if (batch.requests.size() == 1 && rows == batch.rows) {
      runtime::tensor_map outputs = instances_[instance](batch.requests.front()->inputs);
      metrics_.compute_us.record(microseconds_between(start, clock::now()));
      batch.requests.front()->promise.set_value(std::move(outputs));
      return;
    }
    const runtime::tensor_map outputs = instances_[instance](gather(batch, rows));
    metrics_.compute_us.record(microseconds_between(start, clock::now()));
    scatter(batch, outputs, rows);
  } catch (...) {
    metrics_.failed.fetch_add(batch.requests.size(), std::memory_order_relaxed);
    for (auto& r : batch.requests) r->promise.set_exception(std::current_exception());
  }
}

runtime::tensor_map batcher::gather(const formed_batch& batch, std::int64_t padded_rows) {
  runtime::tensor_map inputs;
  for (const auto& [name, first] : batch.requests.front()->inputs) {
    runtime::shape_t shape = first.shape();
    shape[0] = padded_rows;
    const std::size_t row_bytes = first.byte_size() / static_cast<std::size_t>(first.dim(0));
    const std::size_t bytes = row_bytes * static_cast<std::size_t>(padded_rows);
    const std::size_t reserved = std::max<std::size_t>(bytes, 1);
    void* block = pool_->pool.allocate(reserved);
    // The block goes back to the pool when the last tensor over it (an output may be a view
    // of an input) is released; the holder keeps the pool alive until then.
    std::shared_ptr<void> holder(block, [pool = pool_, reserved](void* p) { pool->pool.deallocate(p, reserved); });
    auto* at = static_cast<unsigned char*>(block);
    for (const auto& r : batch.requests) {
      const runtime::tensor& part = r->inputs.at(name);
      std::memcpy(at, part.raw(), part.byte_size());
      at += part.byte_size();
    }
    std::memset(at, 0, row_bytes * static_cast<std::size_t>(padded_rows - batch.rows));  // the padding rows
    inputs.emplace(name, runtime::tensor::over(first.dtype(), std::move(shape), block, reserved, std::move(holder)));
  }
  return inputs;
}

void batcher::scatter(formed_batch& batch, const runtime::tensor_map& outputs, std::int64_t padded_rows) const {
  const auto shared = std::make_shared<const runtime::tensor_map>(outputs);
  std::int64_t row = 0;
  for (auto& r : batch.requests) {
    runtime::tensor_map mine;
    for (const auto& [name, t] : *shared) {
      if (t.rank() == 0 || t.dim(0) != padded_rows) {
        mine.emplace(name, t);  // not batched: every request sees it whole
        continue;
      }
      runtime::shape_t shape = t.shape();
      shape[0] = r->rows;
      const std::size_t row_bytes = t.byte_size() / static_cast<std::size_t>(padded_rows);
      const auto* first_row = static_cast<const unsigned char*>(t.raw()) + static_cast<std::size_t>(row) * row_bytes;
      mine.emplace(name, runtime::tensor::view(t.dtype(), std::move(shape), first_row, shared));
    }
    row += r->rows;
    r->promise.set_value(std::move(mine));
  }
}

}  // namespace inferopt::serve
