// `inferopt serve`: one model behind the KServe v2 HTTP protocol (http_server.hpp), with the serve
// module's dynamic batcher, response cache and metrics. Stateless: replicas behind any HTTP
// load balancer (or KServe) scale it out.

#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <charconv>
#include <filesystem>
#include <set>
#include <iostream>
#include <sstream>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "command_line.hpp"
#include "http_server.hpp"
#include "process_memory.hpp"
#include "inferopt/serve.hpp"
#include "inferopt/serve/kserve.hpp"

namespace inferopt::cli {
namespace {

using clock = std::chrono::steady_clock;
using json = nlohmann::json;

struct serve_options {
  std::string model, name, host = "127.0.0.1";
  int port = 8000;
  std::int64_t max_batch = 8, max_delay_us = 0;
  std::vector<std::int64_t> preferred_batch;
  std::size_t max_queue = 0;
  std::int64_t queue_timeout_ms = 0, max_queue_wait_ms = 0;
  std::string timeout_action = "reject";
  int priority_levels = 1, instances = 1, threads = 1, http_threads = 256, max_connections = 1024, compute_nice = 5;
  std::size_t cache_mb = 0, cache_ttl_s = 0, max_request_mb = 64, keep_alive_requests = 100000;
  bool pad_batches = true, cache_admission = true;
};

void declare_serve(CLI::App& sub, serve_options& o) {
  sub.add_option("model", o.model, "ONNX model")->required();
  sub.add_option("--name", o.name, "Model name in the URL (default: the file's stem)");
  sub.add_option("--host", o.host, "Address to bind (default 127.0.0.1)");
  sub.add_option("--port", o.port, "Port (default 8000; 0 picks a free one)")->check(CLI::Range(0, 65535));
  sub.add_option("--max-batch", o.max_batch, "Rows per batch (default 8; 1 disables batching)")->check(CLI::Range(1, 4096));
  sub.add_option("--max-delay-us", o.max_delay_us, "How long a batch waits for more rows once an instance is free (default 0)")->check(CLI::NonNegativeNumber);
  sub.add_option("--preferred-batch", o.preferred_batch, "Batch sizes formed without waiting, e.g. 4,8")->delimiter(',');
  sub.add_option("--max-queue", o.max_queue, "Waiting requests beyond which requests get 503 (default 0: no bound)");
  sub.add_option("--max-queue-wait-ms", o.max_queue_wait_ms,
                 "Requests that would wait longer than this for a batch get 503 at once (default 0: no bound)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--queue-timeout-ms", o.queue_timeout_ms, "Queue timeout (default 0: none)")->check(CLI::NonNegativeNumber);
  sub.add_option("--timeout-action", o.timeout_action, "reject (503) or delay a timed-out request")->check(CLI::IsMember({"reject", "delay"}));
  sub.add_option("--priority-levels", o.priority_levels, "Priority levels, 1 highest (default 1)")->check(CLI::Range(1, 16));
  sub.add_option("--instances", o.instances, "Model instances running batches at once (default 1)")->check(CLI::Range(1, 64));
  sub.add_option("--threads", o.threads, "Threads per instance (default 1)")->check(CLI::Range(1, 256));
  sub.add_option("--http-threads", o.http_threads, "Threads that decode admitted requests and wait for their batches (default 256)")
      ->check(CLI::Range(1, 4096));
  sub.add_option("--max-connections", o.max_connections, "Open connections beyond which new ones wait to be accepted (default 1024)")
      ->check(CLI::Range(1, 1 << 20));
  sub.add_option("--compute-nice", o.compute_nice,
                 "Run the batches at a nice value N above the HTTP event loop's, so that under overload requests are read "
                 "and refused as fast as they arrive (default 5; 0: same priority)")
      ->check(CLI::Range(0, 19));
  sub.add_option("--keep-alive-requests", o.keep_alive_requests,
                 "Requests a connection serves before the server closes it (default 100000; 1: one request per connection)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40));
  sub.add_option("--cache-mb", o.cache_mb, "Response cache size in MiB (default 0: off)");
  sub.add_option("--cache-ttl-s", o.cache_ttl_s, "Response cache time to live in seconds (default 0: none)");
  sub.add_flag("!--cache-every-miss", o.cache_admission, "Cache every answer, not only those of requests that missed twice");
  sub.add_option("--max-request-mb", o.max_request_mb, "Largest request body in MiB (default 64)")->check(CLI::Range(1, 4096));
  sub.add_flag("!--no-batch-padding", o.pad_batches,
               "Run batches at their own size instead of padding them to a power of two (or a preferred size)");
}

/// Powers of two up to max_batch and the preferred sizes, ascending, when padding is on.
std::vector<std::int64_t> padded_sizes(const serve_options& o) {
  if (!o.pad_batches) return {};
  std::vector<std::int64_t> sizes = serve::powers_of_two_up_to(o.max_batch);
  sizes.insert(sizes.end(), o.preferred_batch.begin(), o.preferred_batch.end());
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

/// Whether every input has a symbolic first dim, along which requests can be batched.
bool batches_along_first_dim(const runtime::session& s) {
  for (const runtime::io_info& in : s.inputs()) {
    if (!in.has_shape || in.shape.empty() || in.shape.front().is_static()) return false;
  }
  return !s.inputs().empty();
}

std::optional<std::size_t> header_length(const http::request& req) {
  const std::optional<std::string_view> text = req.header("Inference-Header-Content-Length");
  if (!text) return std::nullopt;
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (ec != std::errc() || end != text->data() + text->size()) throw error(errc::invalid_argument, "Inference-Header-Content-Length is not a number");
  return n;
}

std::uint64_t microseconds_since(clock::time_point start) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - start).count());
}

/// Ids of this process's threads now (Linux: /proc/self/task).
std::set<long> thread_ids() {
  std::set<long> ids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) ids.insert(std::atol(entry.path().filename().c_str()));
  return ids;
}

/// Raises the nice value of the threads started since `before` (Linux sets nice per thread,
/// and a process may always lower its own threads' priority). Best effort.
void lower_priority_of_threads_since(const std::set<long>& before, int by) {
  for (const long tid : thread_ids()) {
    if (before.count(tid)) continue;
    const auto id = static_cast<id_t>(tid);
    (void)setpriority(PRIO_PROCESS, id, std::min(getpriority(PRIO_PROCESS, id) + by, 19));
  }
}

/// What the server counts beside the batcher's and the cache's own metrics.
struct server_counters {
  serve::histogram request_us, cache_hit_us;
  std::mutex mutex;
  std::map<int, std::uint64_t> responses;  // by HTTP status

  void count(int status) {
    const std::lock_guard lock(mutex);
    ++responses[status];
  }
  std::map<int, std::uint64_t> snapshot() {
    const std::lock_guard lock(mutex);
    return responses;
  }
};

class model_server {
 public:
  explicit model_server(const serve_options& o) : waiters_(static_cast<std::size_t>(o.http_threads)) {
    const ir::model m = load_checked(o.model);
    for (int i = 0; i < o.instances; ++i) sessions_.push_back(std::make_unique<runtime::session>(m, runtime::session_options{.threads = o.threads}));
    signature_ = {o.name, sessions_.front()->inputs(), sessions_.front()->outputs()};
    batching_ = o.max_batch > 1 && batches_along_first_dim(*sessions_.front());
    std::vector<serve::batch_runner> runners;
    for (auto& s : sessions_) runners.push_back([session = s.get()](const runtime::tensor_map& in) { return session->run(in); });
    batcher_ = std::make_unique<serve::batcher>(batcher_options(o), std::move(runners));
    if (o.cache_mb > 0) {
      cache_.emplace(serve::response_cache_options{.capacity_bytes = o.cache_mb << 20,
                                                   .ttl = std::chrono::seconds(o.cache_ttl_s),
                                                   .admit_on_second_miss = o.cache_admission});
    }
    if (batching_) warm_up(batcher_->options().padded_sizes);
  }

  [[nodiscard]] bool batching() const noexcept { return batching_; }
  void set_ready(bool ready) noexcept { ready_ = ready; }
  void stop() { batcher_->stop(); }

  /// Answers one request; called on the HTTP event loop, so an inference, which waits for
  /// its batch, goes to a waiting thread once the batcher has admitted it.
  void handle(http::request&& req, const http::responder& respond) {
    const std::string model_path = "/v2/models/" + signature_.name;
    const auto get = [&](std::string_view path) { return req.method == "GET" && req.path == path; };
    if (req.method == "POST" && req.path == model_path + "/infer") return infer(std::move(req), respond);
    if (get("/v2/health/live")) return respond(json_answer(200, "{}"));
    if (get("/v2/health/ready") || get(model_path + "/ready")) {
      return respond(ready_ ? json_answer(200, "{}") : json_answer(503, serve::error_json("the server is shutting down")));
    }
    if (get("/v2")) {
      return respond(json_answer(200, json{{"name", "inferopt"}, {"version", INFEROPT_VERSION}, {"extensions", {"binary_tensor_data", "statistics"}}}.dump()));
    }
    if (get(model_path)) return respond(json_answer(200, serve::model_metadata_json(signature_)));
    if (get(model_path + "/stats")) return respond(json_answer(200, stats_json()));
    if (get("/metrics")) return respond(http::response{.content_type = "text/plain; version=0.0.4", .body = metrics_text()});
    respond(json_answer(404, serve::error_json("no endpoint " + req.method + " " + req.path)));
  }

 private:
  static serve::batcher_options batcher_options(const serve_options& o) {
    return serve::batcher_options{.max_batch = o.max_batch,
                                  .preferred_batch = o.preferred_batch,
                                  .max_delay = std::chrono::microseconds(o.max_delay_us),
                                  .max_queue = o.max_queue,
                                  .max_queue_wait = std::chrono::milliseconds(o.max_queue_wait_ms),
                                  .priority_levels = o.priority_levels,
                                  .queue_timeout = std::chrono::milliseconds(o.queue_timeout_ms),
                                  .on_timeout = o.timeout_action == "delay" ? serve::timeout_action::delay : serve::timeout_action::reject,
                                  .padded_sizes = padded_sizes(o)};
  }

  /// Runs every instance once at each padded batch size on zeros, before the first request:
  /// oneDNN compiles its primitives and the executor plans memory per size, which would
  /// otherwise land on the first requests of each size (Triton calls this model warmup).
  /// Skipped when an input has a symbolic dim besides the batch.
  void warm_up(const std::vector<std::int64_t>& sizes) {
    for (const runtime::io_info& in : signature_.inputs) {
      for (std::size_t a = 1; a < in.shape.size(); ++a) {
        if (!in.shape[a].is_static()) return;
      }
    }
    for (const std::int64_t rows : sizes) {
      runtime::tensor_map zeros;
      for (const runtime::io_info& in : signature_.inputs) {
        runtime::shape_t shape{rows};
        for (std::size_t a = 1; a < in.shape.size(); ++a) shape.push_back(in.shape[a].value());
        zeros.emplace(in.name, runtime::tensor::zeros(in.type, shape));
      }
      try {
        for (auto& s : sessions_) (void)s->run(zeros);
      } catch (const std::exception& e) {  // a model that refuses zeros still serves real inputs
        std::cerr << "inferopt: warm-up at batch " << rows << " skipped: " << e.what() << "\n";
        return;
      }
    }
  }

  static http::response json_answer(int status, std::string body) { return http::response{.status = status, .body = std::move(body)}; }

  void infer(http::request&& req, const http::responder& respond) {
    try {
      // Refused here, before decoding and on the event loop, so that under overload a 503
      // costs little (the batcher's own check, at submit, is the one that holds under races).
      batcher_->admit();
    } catch (const serve::rejection& e) {
      counters_.count(503);
      return respond(json_answer(503, serve::error_json(e.what())));
    }
    boost::asio::post(waiters_, [this, req = std::move(req), respond] { respond(answer_infer(req)); });
  }

  http::response answer_infer(const http::request& req) {
    const clock::time_point start = req.received;  // the wait for a decoding thread counts
    http::response res;
    try {
      res = answer(req);
    } catch (const serve::rejection& e) {
      res = json_answer(503, serve::error_json(e.what()));
    } catch (const error& e) {
      res = json_answer(e.code() == errc::internal ? 500 : 400, serve::error_json(e.what()));
    } catch (const std::exception& e) {
      res = json_answer(500, serve::error_json(e.what()));
    }
    counters_.count(res.status);
    if (res.status == 200) counters_.request_us.record(microseconds_since(start));
    return res;
  }

  /// Decodes, looks in the cache, runs through the batcher, encodes.
  http::response answer(const http::request& req) {
    const clock::time_point start = clock::now();
    serve::decoded_request request = serve::decode_infer_request(req.body, header_length(req), signature_);
    std::optional<serve::request_key> key;
    if (cache_) {
      key.emplace(signature_.name, request.inputs);
      if (const auto hit = cache_->find(*key)) {
        http::response res = encoded(serve::encode_infer_response(signature_, request, *hit));
        counters_.cache_hit_us.record(microseconds_since(start));
        return res;
      }
    }
    std::future<runtime::tensor_map> pending = batcher_->submit(serve::inference_request{request.inputs, request.priority, request.timeout});
    const runtime::tensor_map outputs = pending.get();
    if (cache_) cache_->insert(*key, outputs);
    return encoded(serve::encode_infer_response(signature_, request, outputs));
  }

  static http::response encoded(serve::encoded_response&& encoded) {
    if (!encoded.header_length) return json_answer(200, std::move(encoded.body));
    return http::response{.content_type = "application/octet-stream",
                          .body = std::move(encoded.body),
                          .headers = {{"Inference-Header-Content-Length", std::to_string(*encoded.header_length)}}};
  }

  [[nodiscard]] json batch_sizes() const {
    json sizes = json::object();
    for (const auto& [rows, n] : batcher_->metrics().batch_rows.nonzero_buckets()) sizes[std::to_string(rows)] = n;
    return sizes;
  }

  [[nodiscard]] std::string stats_json() {
    const serve::batcher_metrics& b = batcher_->metrics();
    const auto percentiles = [](const serve::histogram& h) {
      return json{{"count", h.count()}, {"mean", h.mean()}, {"p50", h.percentile(0.5)}, {"p90", h.percentile(0.9)}, {"p99", h.percentile(0.99)}, {"max", h.max()}};
    };
    json responses = json::object();
    for (const auto& [status, n] : counters_.snapshot()) responses[std::to_string(status)] = n;
    json out{{"name", signature_.name}, {"batching", batching_}, {"max_batch", batcher_->options().max_batch},
             {"inference_count", b.requests.load()}, {"execution_count", b.batches.load()}, {"batch_sizes", batch_sizes()},
             {"queue_us", percentiles(b.queue_us)}, {"compute_us", percentiles(b.compute_us)},
             {"request_us", percentiles(counters_.request_us)}, {"responses", responses},
             {"rejected_queue_full", b.rejected_full.load()}, {"rejected_expected_wait", b.rejected_wait.load()},
             {"expected_wait_us", batcher_->expected_wait().count()}, {"timed_out", b.timed_out.load()}, {"pending", batcher_->pending()},
             {"padding_rows", b.padding_rows.load()}};
    if (cache_) {
      const serve::response_cache_stats c = cache_->stats();
      out["cache"] = {{"hits", c.hits}, {"misses", c.misses}, {"evictions", c.evictions}, {"expirations", c.expirations}, {"not_admitted", c.not_admitted},
                      {"entries", c.entries}, {"bytes", c.bytes}, {"hit_us", percentiles(counters_.cache_hit_us)}};
    }
    if (const auto rss = rss_bytes()) out["rss_bytes"] = *rss;
    if (const auto peak = peak_rss_bytes()) out["peak_rss_bytes"] = *peak;
    return out.dump();
  }

  [[nodiscard]] std::string metrics_text() {
    const serve::batcher_metrics& b = batcher_->metrics();
    const std::string model = "model=\"" + signature_.name + "\"";
    static constexpr std::uint64_t latency_bounds[] = {100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000};
    static constexpr double quantiles[] = {0.5, 0.9, 0.99};
    std::vector<std::uint64_t> batch_bounds;
    for (std::uint64_t rows = 1; rows <= static_cast<std::uint64_t>(batcher_->options().max_batch); rows *= 2) batch_bounds.push_back(rows);
    serve::prometheus_text out;
    for (const auto& [status, n] : counters_.snapshot()) {
      out.counter("inferopt_responses_total", "HTTP infer responses by status.", n, model + ",status=\"" + std::to_string(status) + "\"");
    }
    out.counter("inferopt_inference_count", "Requests the batcher accepted.", b.requests.load(), model);
    out.counter("inferopt_execution_count", "Batches the model ran.", b.batches.load(), model);
    out.counter("inferopt_rejected_queue_full", "Requests refused because the queue was full.", b.rejected_full.load(), model);
    out.counter("inferopt_rejected_expected_wait", "Requests refused because they would have waited longer than --max-queue-wait-ms.",
                b.rejected_wait.load(), model);
    out.counter("inferopt_queue_timeouts", "Requests that timed out in the queue.", b.timed_out.load(), model);
    out.counter("inferopt_padding_rows", "Zero rows added to batches to reach a padded size.", b.padding_rows.load(), model);
    out.gauge("inferopt_pending_requests", "Requests waiting for a batch now.", static_cast<double>(batcher_->pending()), model);
    out.histogram("inferopt_request_duration_us", "Infer request latency in the server, microseconds.", counters_.request_us, latency_bounds, model);
    out.summary("inferopt_request_latency_us", "Infer request latency percentiles, microseconds.", counters_.request_us, quantiles, model);
    out.histogram("inferopt_queue_duration_us", "Time requests waited for a batch, microseconds.", b.queue_us, latency_bounds, model);
    out.histogram("inferopt_compute_duration_us", "Time batches ran in the model, microseconds.", b.compute_us, latency_bounds, model);
    out.histogram("inferopt_batch_size", "Rows per batch run.", b.batch_rows, batch_bounds, model);
    if (cache_) {
      const serve::response_cache_stats c = cache_->stats();
      out.counter("inferopt_cache_hits", "Requests answered from the response cache.", c.hits, model);
      out.counter("inferopt_cache_misses", "Requests the cache did not hold.", c.misses, model);
      out.counter("inferopt_cache_evictions", "Entries evicted to stay within the cache's size.", c.evictions, model);
      out.gauge("inferopt_cache_bytes", "Bytes the response cache holds.", static_cast<double>(c.bytes), model);
    }
    if (const auto rss = rss_bytes()) out.gauge("inferopt_process_resident_bytes", "Resident memory of the server now.", static_cast<double>(*rss));
    if (const auto peak = peak_rss_bytes()) out.gauge("inferopt_process_peak_resident_bytes", "Peak resident memory of the server.", static_cast<double>(*peak));
    return out.str();
  }

  serve::model_signature signature_;
  std::vector<std::unique_ptr<runtime::session>> sessions_;
  std::unique_ptr<serve::batcher> batcher_;
  std::optional<serve::response_cache> cache_;
  server_counters counters_;
  bool batching_ = false;
  std::atomic<bool> ready_{false};
  boost::asio::thread_pool waiters_;  // the admitted requests' decode, wait for the batch, encode
};

int run_serve(serve_options o) {
  // Two malloc arenas instead of glibc's 8 per core: with a thread per connection, freed
  // request bodies stayed in many arenas. MobileNetV3-Small at 2x saturation (256
  // connections, 600 KB bodies): RSS 506 -> 840 MiB with the default, 185 -> 481 MiB with 2,
  // and more requests answered (docs/BENCHMARKS.md, "Serving").
  mallopt(M_ARENA_MAX, 2);
  if (o.name.empty()) o.name = std::filesystem::path(o.model).stem().string();
  if (o.name.empty() || o.name.find_first_of("/?#% ") != std::string::npos) throw error(errc::invalid_argument, "--name must be a plain URL segment");
  // SIGTERM and SIGINT are taken by one thread (sigwait) that stops the server: blocked here,
  // before any thread starts, so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // Under overload the event loop must read and refuse requests as fast as they arrive, or
  // they queue in the kernel where no bound holds; --compute-nice lets it take the CPU
  // before the threads the model server starts (batcher, executor, decode-and-wait).
  const std::set<long> threads_before = thread_ids();
  model_server server(o);
  if (o.compute_nice > 0) lower_priority_of_threads_since(threads_before, o.compute_nice);
  http::server web(http::server_options{.max_body_bytes = o.max_request_mb << 20,
                                        .keep_alive_requests = o.keep_alive_requests,
                                        .max_connections = static_cast<std::size_t>(o.max_connections),
                                        .error_body = [](const std::string& message) { return serve::error_json(message); },
                                        .body_too_large_message = "the request body is larger than " + std::to_string(o.max_request_mb) +
                                                                  " MiB (--max-request-mb)"},
                   [&server](http::request&& req, http::responder respond) { server.handle(std::move(req), respond); });
  int port = 0;
  try {
    port = web.listen(o.host, o.port);
  } catch (const std::exception& e) {
    throw error(errc::io, "cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " + e.what());
  }
  std::cout << "listening on http://" << o.host << ":" << port << std::endl;
  if (!server.batching()) {
    std::cout << "model " << o.name << (o.max_batch > 1 ? " has no symbolic batch dimension: serving without batching" : ": batching off (--max-batch 1)")
              << std::endl;
  }
  std::thread signal_waiter([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    server.set_ready(false);
    web.stop();  // stops accepting; connections with a request in flight answer it, then close
  });
  server.set_ready(true);
  web.run();  // returns once stopped and drained
  signal_waiter.join();
  server.stop();  // every accepted request has been answered; nothing is queued
  std::cout << "stopped" << std::endl;
  return 0;
}

}  // namespace

command add_serve(CLI::App& app) {
  return make_command<serve_options>(app, std::string(serve_command.name), std::string(serve_command.description), declare_serve,
                                     [](const serve_options& o) { return run_serve(o); });
}

}  // namespace inferopt::cli
