// `inferopt loadgen`: load for a KServe v2 server (anchor: Triton's perf_analyzer). A closed
// loop of C clients each sending its next request when the last one answered, or Poisson
// arrivals at a rate (open loop: latency counts from the scheduled time, so a slow server
// cannot hide its queue by slowing the sender). Prints throughput, latency percentiles,
// errors by status and the server's batch statistics (its /stats, before and after).

#include <unistd.h>

#include <charconv>
#include <condition_variable>
#include <deque>
#include <iomanip>
#include <iostream>
#include <random>
#include <thread>

#include <httplib.h>

#include "command_line.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/serve/histogram.hpp"
#include "inferopt/serve/kserve.hpp"

namespace inferopt::cli {
namespace {

using clock = std::chrono::steady_clock;
using json = nlohmann::json;

struct loadgen_options {
  std::string url, model, input_dir;
  int concurrency = 0;
  double rate = 0;
  std::size_t requests = 0;
  double duration_s = 0;
  int workers = 256;
  bool unique = false, json_body = false, json_out = false;
  std::uint64_t seed = 0;
};

void declare_loadgen(CLI::App& sub, loadgen_options& o) {
  sub.add_option("url", o.url, "Server, e.g. http://127.0.0.1:8000")->required();
  sub.add_option("--model", o.model, "Model name")->required();
  auto* c = sub.add_option("--concurrency", o.concurrency, "Closed loop: clients each with one request in flight")->check(CLI::Range(1, 4096));
  auto* r = sub.add_option("--rate", o.rate, "Open loop: Poisson arrivals per second")->check(CLI::PositiveNumber);
  c->excludes(r);
  auto* n = sub.add_option("--requests", o.requests, "Requests to send (default 1000 when no --duration)");
  auto* d = sub.add_option("--duration", o.duration_s, "Seconds to send for")->check(CLI::PositiveNumber);
  n->excludes(d);
  sub.add_option("--input-dir", o.input_dir, "input_K.pb TensorProto files for the model's K-th input (default: random)");
  sub.add_option("--workers", o.workers, "Open loop: senders (default 256)")->check(CLI::Range(1, 4096));
  sub.add_flag("--unique", o.unique, "Fresh random inputs for every request (defeats a response cache)");
  sub.add_flag("--json-body", o.json_body, "Send tensors as JSON (default: the binary tensor extension)");
  sub.add_flag("--json", o.json_out, "Print one JSON object");
  sub.add_option("--seed", o.seed, "Seed of the random inputs (default 0)");
}

/// host and port of an http:// URL.
std::pair<std::string, int> parse_url(const std::string& url) {
  const std::string prefix = "http://";
  if (url.rfind(prefix, 0) != 0) throw error(errc::invalid_argument, "the URL must start with http://");
  std::string rest = url.substr(prefix.size());
  if (const auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return {rest, 80};
  int port = 0;
  const auto [end, ec] = std::from_chars(rest.data() + colon + 1, rest.data() + rest.size(), port);
  if (ec != std::errc() || end != rest.data() + rest.size() || port <= 0 || port > 65535) throw error(errc::invalid_argument, "bad port in " + url);
  return {rest.substr(0, colon), port};
}

httplib::Client client_for(const std::pair<std::string, int>& server) {
  httplib::Client c(server.first, server.second);
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);
  c.set_connection_timeout(5);
  c.set_read_timeout(60);
  return c;
}

json get_json(httplib::Client& c, const std::string& path) {
  const auto res = c.Get(path);
  if (!res) throw error(errc::io, "cannot reach the server for GET " + path + ": " + httplib::to_string(res.error()));
  if (res->status != 200) throw error(errc::invalid_argument, "GET " + path + " answered " + std::to_string(res->status) + ": " + res->body);
  json j = json::parse(res->body, nullptr, false);
  if (j.is_discarded()) throw error(errc::io, "GET " + path + " did not answer JSON");
  return j;
}

/// The model's inputs from its metadata, with symbolic dims as 1.
std::vector<runtime::io_info> model_inputs(const json& metadata) {
  std::vector<runtime::io_info> out;
  for (const json& in : metadata.at("inputs")) {
    runtime::io_info info;
    info.name = in.at("name").get<std::string>();
    const std::string datatype = in.at("datatype").get<std::string>();
    const std::optional<ir::data_type> type = serve::kserve_element_type(datatype);
    if (!type) throw error(errc::unsupported, "input '" + info.name + "' is " + datatype + ", which loadgen cannot send");
    info.type = *type;
    for (const json& d : in.at("shape")) info.shape.emplace_back(d.get<std::int64_t>() < 0 ? 1 : d.get<std::int64_t>());
    info.has_shape = true;
    out.push_back(std::move(info));
  }
  return out;
}

/// A request body for `inputs`: binary tensors after a JSON header, or all JSON.
struct request_body {
  std::string body;
  std::optional<std::size_t> header_length;
};

request_body encode_request(const runtime::tensor_map& inputs, bool as_json) {
  json items = json::array();
  std::string binary;
  for (const auto& [name, t] : inputs) {
    json item{{"name", name}, {"datatype", std::string(serve::kserve_datatype(t.dtype()))}, {"shape", t.shape()}};
    if (as_json) {
      const bool real = t.dtype() == ir::data_type::float32 || t.dtype() == ir::data_type::float64 || t.dtype() == ir::data_type::float16;
      item["data"] = real ? json(t.to_float()) : json(t.to_int64());
    } else {
      item["parameters"] = {{"binary_data_size", t.byte_size()}};
      binary.append(static_cast<const char*>(t.raw()), t.byte_size());
    }
    items.push_back(std::move(item));
  }
  request_body r{json{{"inputs", items}}.dump(), std::nullopt};
  if (!as_json) {
    r.header_length = r.body.size();
    r.body += binary;
  }
  return r;
}

/// What the senders share: the request bodies, the counts and the latencies.
struct load_state {
  std::pair<std::string, int> server;
  std::string path;
  const loadgen_options* options = nullptr;
  std::vector<runtime::io_info> inputs;
  request_body fixed;  // used unless --unique
  std::atomic<std::size_t> sent{0}, done{0};
  serve::histogram latency_us, refused_us;  // answers 200, and answers other than 200
  std::mutex mutex;
  std::map<int, std::uint64_t> statuses;  // 0: no answer
  clock::time_point start, deadline = clock::time_point::max();

  /// Claims the next request; false when the run is over.
  bool claim() {
    if (clock::now() >= deadline) return false;
    if (options->requests == 0) return true;
    return sent.fetch_add(1) < options->requests;
  }

  void send(httplib::Client& c, std::mt19937_64& rng, clock::time_point counted_from) {
    request_body unique_body;
    const request_body* body = &fixed;
    if (options->unique) {
      unique_body = encode_request(runtime::random_inputs(inputs, rng()), options->json_body);
      body = &unique_body;
    }
    httplib::Headers headers;
    if (body->header_length) headers.emplace("Inference-Header-Content-Length", std::to_string(*body->header_length));
    const auto res = c.Post(path, headers, body->body, body->header_length ? "application/octet-stream" : "application/json");
    const int status = res ? res->status : 0;
    const auto us = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - counted_from).count());
    if (status == 200) latency_us.record(us);
    if (status != 200 && status != 0) refused_us.record(us);
    {
      const std::lock_guard lock(mutex);
      ++statuses[status];
    }
    ++done;
  }
};

void closed_loop(load_state& s) {
  std::vector<std::thread> clients;
  for (int i = 0; i < s.options->concurrency; ++i) {
    clients.emplace_back([&s, i] {
      httplib::Client c = client_for(s.server);
      std::mt19937_64 rng(s.options->seed + 1000003 * static_cast<std::uint64_t>(i + 1));
      while (s.claim()) s.send(c, rng, clock::now());
    });
  }
  for (std::thread& t : clients) t.join();
}

void open_loop(load_state& s) {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<clock::time_point> due;  // scheduled send times not yet taken
  bool finished = false;
  std::vector<std::thread> senders;
  for (int i = 0; i < s.options->workers; ++i) {
    senders.emplace_back([&, i] {
      httplib::Client c = client_for(s.server);
      std::mt19937_64 rng(s.options->seed + 7919 * static_cast<std::uint64_t>(i + 1));
      while (true) {
        std::unique_lock lock(mutex);
        ready.wait(lock, [&] { return finished || !due.empty(); });
        if (due.empty()) return;
        const clock::time_point when = due.front();
        due.pop_front();
        lock.unlock();
        s.send(c, rng, when);
      }
    });
  }
  std::mt19937_64 rng(s.options->seed);
  std::exponential_distribution<double> gap(s.options->rate);
  clock::time_point next = clock::now();
  while (s.claim()) {
    next += std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(gap(rng)));
    std::this_thread::sleep_until(next);
    {
      const std::lock_guard lock(mutex);
      due.push_back(next);
    }
    ready.notify_one();
  }
  {
    const std::lock_guard lock(mutex);
    finished = true;
  }
  ready.notify_all();
  for (std::thread& t : senders) t.join();
}

/// A progress line on stderr while the load runs, when stderr is a terminal.
void show_progress(const load_state& s, const std::atomic<bool>& running) {
  if (!isatty(STDERR_FILENO)) return;
  while (running) {
    const double elapsed = std::chrono::duration<double>(clock::now() - s.start).count();
    const double fraction = s.options->requests > 0 ? static_cast<double>(s.done) / static_cast<double>(s.options->requests)
                                                    : elapsed / std::max(s.options->duration_s, 1e-9);
    const int filled = static_cast<int>(30 * std::clamp(fraction, 0.0, 1.0));
    std::cerr << "\r[" << std::string(static_cast<std::size_t>(filled), '#') << std::string(static_cast<std::size_t>(30 - filled), ' ') << "] "
              << s.done << " done, " << std::fixed << std::setprecision(0) << (elapsed > 0 ? static_cast<double>(s.done) / elapsed : 0.0)
              << "/s   " << std::flush;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::cerr << "\r" << std::string(70, ' ') << "\r" << std::flush;
}

/// The server's batch sizes run between two /stats snapshots.
json batch_delta(const json& before, const json& after) {
  json sizes = json::object();
  std::uint64_t batches = 0, rows = 0;
  const json earlier_sizes = before.value("batch_sizes", json::object()), later_sizes = after.value("batch_sizes", json::object());
  for (const auto& [size, n] : later_sizes.items()) {
    const std::uint64_t earlier = earlier_sizes.value(size, std::uint64_t{0});
    const std::uint64_t d = n.get<std::uint64_t>() - earlier;
    if (d == 0) continue;
    sizes[size] = d;
    batches += d;
    rows += d * std::stoull(size);
  }
  return {{"batches", batches}, {"mean_batch", batches ? static_cast<double>(rows) / static_cast<double>(batches) : 0.0},
          {"batch_sizes", sizes}, {"max_batch", after.value("max_batch", 0)}};
}

json report(load_state& s, double elapsed, const json& server_batches) {
  json statuses = json::object();
  std::uint64_t ok = 0;
  for (const auto& [status, n] : s.statuses) {
    statuses[status == 0 ? "no answer" : std::to_string(status)] = n;
    if (status == 200) ok = n;
  }
  const auto ms = [](const serve::histogram& h) {
    return json{{"p50", h.percentile(0.5) / 1000.0}, {"p90", h.percentile(0.9) / 1000.0}, {"p99", h.percentile(0.99) / 1000.0},
                {"max", static_cast<double>(h.max()) / 1000.0}};
  };
  return {{"requests", s.done.load()}, {"ok", ok}, {"seconds", elapsed}, {"throughput", static_cast<double>(ok) / elapsed},
          {"latency_ms", ms(s.latency_us)}, {"refused_latency_ms", ms(s.refused_us)}, {"statuses", statuses}, {"server", server_batches}};
}

void print_report(const json& r, const loadgen_options& o) {
  std::cout << std::fixed << std::setprecision(2);
  std::cout << (o.concurrency > 0 ? "closed loop, concurrency " + std::to_string(o.concurrency) : "open loop, rate " + std::to_string(o.rate) + "/s")
            << ": " << r["requests"] << " requests in " << r["seconds"].get<double>() << " s\n";
  std::cout << "throughput: " << r["throughput"].get<double>() << " requests/s\n";
  const json& l = r["latency_ms"];
  std::cout << "latency ms: p50 " << l["p50"].get<double>() << "  p90 " << l["p90"].get<double>() << "  p99 " << l["p99"].get<double>()
            << "  max " << l["max"].get<double>() << "\n";
  if (r["refused_latency_ms"]["max"].get<double>() > 0) {
    const json& f = r["refused_latency_ms"];
    std::cout << "refused (not 200) ms: p50 " << f["p50"].get<double>() << "  p99 " << f["p99"].get<double>() << "  max " << f["max"].get<double>() << "\n";
  }
  std::cout << "responses:";
  for (const auto& [status, n] : r["statuses"].items()) std::cout << "  " << status << ": " << n;
  std::cout << "\nserver batches: " << r["server"]["batches"] << ", mean size " << r["server"]["mean_batch"].get<double>() << " (max "
            << r["server"]["max_batch"] << "), batches by rows (rows:batches)";
  std::map<std::uint64_t, std::uint64_t> sizes;  // numeric order, not the JSON keys' text order
  for (const auto& [size, n] : r["server"]["batch_sizes"].items()) sizes[std::stoull(size)] = n.get<std::uint64_t>();
  for (const auto& [size, n] : sizes) std::cout << " " << size << ":" << n;
  std::cout << "\n";
}

int run_loadgen(const loadgen_options& o) {
  if ((o.concurrency > 0) == (o.rate > 0)) throw error(errc::invalid_argument, "give one of --concurrency and --rate");
  loadgen_options opts = o;
  if (opts.requests == 0 && opts.duration_s == 0) opts.requests = 1000;
  load_state s;
  s.server = parse_url(o.url);
  s.options = &opts;
  s.path = "/v2/models/" + o.model + "/infer";
  httplib::Client control = client_for(s.server);
  s.inputs = model_inputs(get_json(control, "/v2/models/" + o.model));
  runtime::tensor_map first;
  if (!o.input_dir.empty()) {
    for (std::size_t k = 0; k < s.inputs.size(); ++k) {
      first.emplace(s.inputs[k].name, runtime::read_tensor_file(o.input_dir + "/input_" + std::to_string(k) + ".pb"));
    }
  } else {
    first = runtime::random_inputs(s.inputs, o.seed);
  }
  s.fixed = encode_request(first, o.json_body);
  const json before = get_json(control, "/v2/models/" + o.model + "/stats");
  s.start = clock::now();
  if (opts.duration_s > 0) s.deadline = s.start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(opts.duration_s));
  std::atomic<bool> running{true};
  std::thread progress([&] { show_progress(s, running); });
  if (o.concurrency > 0) {
    closed_loop(s);
  } else {
    open_loop(s);
  }
  const double elapsed = std::chrono::duration<double>(clock::now() - s.start).count();
  running = false;
  progress.join();
  const json r = report(s, elapsed, batch_delta(before, get_json(control, "/v2/models/" + o.model + "/stats")));
  if (o.json_out) {
    std::cout << r.dump(2) << "\n";
  } else {
    print_report(r, o);
  }
  return 0;
}

}  // namespace

command add_loadgen(CLI::App& app) {
  return make_command<loadgen_options>(app, std::string(loadgen_command.name), std::string(loadgen_command.description),
                                       declare_loadgen, run_loadgen);
}

}  // namespace inferopt::cli
