#include "inferopt/core/cpu_count.hpp"
#include "inferopt/quant/calibrate.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "inferopt/core/error.hpp"

namespace inferopt::quant {

namespace {

/// Everything the workers share; each worker writes only its own state and error slot.
struct shared_run {
  const ir::model& model;
  std::span<const runtime::tensor_map> batches;
  const calibrate_options& options;
  const tensor_filter& filter;
  std::atomic<bool> failed{false};
  std::mutex progress_mutex;
  std::size_t done = 0;
};

void calibrate_slice(shared_run& run, std::size_t begin, std::size_t end, calibration_state& state) {
  runtime::session_options session_options;
  session_options.threads = 1;
  session_options.on_value = [&](std::string_view name, const runtime::tensor& value) {
    if (run.filter(name, value.dtype())) state.observe(name, value);
  };
  runtime::session session(run.model, session_options);
  for (std::size_t b = begin; b < end && !run.failed.load(); ++b) {
    // The observer sees node outputs only; graph inputs come straight from the feed.
    for (const auto& [name, value] : run.batches[b]) {
      if (run.filter(name, value.dtype())) state.observe(name, value);
    }
    (void)session.run(run.batches[b]);
    if (run.options.on_progress) {
      const std::lock_guard<std::mutex> lock(run.progress_mutex);
      run.options.on_progress(++run.done, run.batches.size());
    }
  }
}

}  // namespace

calibration_result calibrate(const ir::model& model, std::span<const runtime::tensor_map> batches,
                             const calibrate_options& options) {
  expects(!batches.empty(), "calibration needs at least one batch");
  const tensor_filter filter = options.filter ? options.filter : tensor_filter(is_floating_tensor);
  std::size_t threads = static_cast<std::size_t>(options.threads > 0 ? std::min(options.threads, usable_cpu_count())
                                                                      : usable_cpu_count());
  threads = std::min(threads, batches.size());

  shared_run run{model, batches, options, filter};
  std::vector<calibration_state> states(threads, calibration_state(options.statistics));
  std::vector<std::exception_ptr> errors(threads);
  const auto slice_begin = [&](std::size_t t) { return batches.size() * t / threads; };
  const auto work = [&](std::size_t t) {
    try {
      calibrate_slice(run, slice_begin(t), slice_begin(t + 1), states[t]);
    } catch (...) {
      errors[t] = std::current_exception();
      run.failed.store(true);
    }
  };
  if (threads == 1) {
    work(0);
  } else {
    std::vector<std::jthread> workers;
    workers.reserve(threads);
    for (std::size_t t = 0; t < threads; ++t) workers.emplace_back(work, t);
  }  // jthreads join here
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }

  calibration_result result{std::move(states[0]), {}};
  for (std::size_t t = 1; t < threads; ++t) result.state.merge(states[t]);
  result.ranges = compute_ranges(result.state, options.calibrator);
  return result;
}

}  // namespace inferopt::quant
