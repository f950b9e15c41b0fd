// `inferopt run`, `inferopt bench` and `inferopt compare`: the executor from the command line.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <unistd.h>

#include "commands.hpp"
#include "input_options.hpp"
#include "process_memory.hpp"
#include "inferopt/runtime/compare.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::cli {
namespace {

namespace fs = std::filesystem;

double checksum(const runtime::tensor& t) {
  double sum = 0.0;
  if (t.dtype() == ir::data_type::float32 || t.dtype() == ir::data_type::float64 || t.dtype() == ir::data_type::float16) {
    for (float v : t.to_float()) sum += v;
  } else {
    for (std::int64_t v : t.to_int64()) sum += static_cast<double>(v);
  }
  return sum;
}

struct run_options {
  std::string model;
  input_options inputs;
  std::string output_dir;
  int threads = 0;
};

int run_model(const run_options& o) {
  ir::model m = load_checked(o.model);
  runtime::session s(m, runtime::session_options{.threads = o.threads});
  const runtime::tensor_map outputs = s.run(o.inputs.gather(s));
  if (!o.output_dir.empty()) fs::create_directories(o.output_dir);
  for (std::size_t k = 0; k < s.outputs().size(); ++k) {
    const auto& name = s.outputs()[k].name;
    const runtime::tensor& t = outputs.at(name);
    std::cout << name << "  " << ir::to_string(t.dtype()) << runtime::to_string(t.shape()) << "  sum="
              << std::setprecision(9) << checksum(t) << "\n";
    if (!o.output_dir.empty()) {
      runtime::write_tensor_file((fs::path(o.output_dir) / ("output_" + std::to_string(k) + ".pb")).string(), t, name);
    }
  }
  return 0;
}

double percentile(std::vector<double> sorted, double p) {
  if (sorted.empty()) return 0.0;
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

struct bench_options {
  std::string model;
  input_options inputs;
  int warmup = 5;
  int iters = 50;
  int threads = 0;
  bool json = false;
  bool profile = false;
  int slowest_nodes = 0;
  bool memory_plan = true;
  bool winograd = true;
};

/// The timed runs, sorted, and the mean time per op type and per node over them (when profiling).
struct timings {
  std::vector<double> ms;
  std::map<std::string, double> profile;
  std::map<std::string, double> node_profile;
};

timings time_runs(runtime::session& s, const runtime::tensor_map& feeds, int iters) {
  timings t;
  for (int k = 0; k < iters; ++k) {
    const auto start = std::chrono::steady_clock::now();
    (void)s.run(feeds);
    t.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    for (const auto& [op, ms] : s.profile()) t.profile[op] += ms / iters;
    for (const auto& [node, ms] : s.node_profile()) t.node_profile[node] += ms / iters;
    print_progress(k + 1, iters);
  }
  std::sort(t.ms.begin(), t.ms.end());
  return t;
}

nlohmann::json bench_json(const bench_options& o, const timings& t, const runtime::session& s) {
  const std::vector<double>& ms = t.ms;
  double total = 0.0;
  for (double v : ms) total += v;
  nlohmann::json j = {{"min_ms", ms.front()},
                      {"p50_ms", percentile(ms, 50)},
                      {"p90_ms", percentile(ms, 90)},
                      {"p99_ms", percentile(ms, 99)},
                      {"max_ms", ms.back()},
                      {"mean_ms", total / static_cast<double>(ms.size())},
                      {"throughput_per_s", 1000.0 * static_cast<double>(ms.size()) / total},
                      {"iterations", o.iters},
                      {"threads", s.threads()}};
  if (o.profile) j["profile_ms"] = t.profile;
  if (o.slowest_nodes > 0) j["node_profile_ms"] = t.node_profile;
  const runtime::memory_plan_info plan = s.memory_plan();
  j["memory_plan"] = {{"active", plan.active},
                      {"arena_bytes", plan.arena_bytes},
                      {"lower_bound_bytes", plan.lower_bound_bytes},
                      {"naive_bytes", plan.naive_bytes},
                      {"planned_tensors", plan.planned_tensors}};
  const runtime::weight_memory_info weights = s.weight_memory();
  j["weights"] = {{"initializer_bytes", weights.initializer_bytes}, {"kernel_bytes", weights.kernel_bytes}};
  return j;
}

/// The `limit` largest entries of `profile`, slowest first, with their share of the total.
void print_profile(const std::string& title, const std::map<std::string, double>& profile, std::size_t limit) {
  std::vector<std::pair<double, std::string>> rows;
  double sum = 0.0;
  for (const auto& [op, t] : profile) {
    rows.emplace_back(t, op);
    sum += t;
  }
  std::sort(rows.rbegin(), rows.rend());
  rows.resize(std::min(rows.size(), limit));
  std::cout << title << " (ms per run):\n";
  for (const auto& [t, op] : rows) {
    std::cout << "  " << std::left << std::setw(24) << op << std::right << std::setw(10) << std::setprecision(3) << t
              << std::setw(8) << std::setprecision(1) << (sum > 0 ? 100.0 * t / sum : 0.0) << "%\n";
  }
}

void print_bench(const bench_options& o, const timings& t, const nlohmann::json& j, const runtime::session& s,
                 std::optional<std::size_t> steady_peak) {
  const std::vector<double>& ms = t.ms;
  std::cout << std::fixed << std::setprecision(3) << "latency ms: min " << ms.front() << "  p50 " << percentile(ms, 50)
            << "  p90 " << percentile(ms, 90) << "  p99 " << percentile(ms, 99) << "  max " << ms.back() << "\n"
            << "throughput: " << std::setprecision(1) << j["throughput_per_s"].get<double>() << " runs/s ("
            << s.threads() << " threads, " << o.iters << " iterations)\n";
  const auto mib = [](std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); };
  std::cout << std::setprecision(1);
  const runtime::memory_plan_info plan = s.memory_plan();
  if (plan.active) {
    std::cout << "memory plan: arena " << mib(plan.arena_bytes) << " MiB for " << plan.planned_tensors
              << " intermediates (lower bound " << mib(plan.lower_bound_bytes) << " MiB, no reuse "
              << mib(plan.naive_bytes) << " MiB)\n";
  } else {
    std::cout << "memory plan: off (dead buffers are pooled)\n";
  }
  const runtime::weight_memory_info weights = s.weight_memory();
  std::cout << "weights held: " << mib(weights.initializer_bytes + weights.kernel_bytes) << " MiB ("
            << mib(weights.kernel_bytes) << " MiB in the kernels' own layouts)\n";
  if (steady_peak) std::cout << "peak RSS over the timed runs: " << mib(*steady_peak) << " MiB\n";
  if (o.profile) print_profile("time per op type", t.profile, t.profile.size());
  if (o.slowest_nodes > 0) print_profile("slowest nodes", t.node_profile, static_cast<std::size_t>(o.slowest_nodes));
}

int bench_model(const bench_options& o) {
  if (o.iters < 1 || o.warmup < 0 || o.slowest_nodes < 0) {
    throw error(errc::invalid_argument, "--iters must be >= 1, --warmup and --slowest-nodes >= 0");
  }
  // The model goes once the session is built: the session shares its weights, and releases
  // those its kernels copy into their own layout, so they are then held once.
  std::unique_ptr<runtime::session> session;
  {
    const ir::model m = load_checked(o.model);
    session = std::make_unique<runtime::session>(
        m, runtime::session_options{.threads = o.threads, .memory_plan = o.memory_plan, .winograd = o.winograd});
  }
  runtime::session& s = *session;
  s.set_profiling(o.profile || o.slowest_nodes > 0);
  const runtime::tensor_map feeds = o.inputs.gather(s);
  for (int k = 0; k < o.warmup; ++k) (void)s.run(feeds);
  // The steady-state peak covers the timed runs only: not loading, not the traced first run.
  const bool reset = reset_peak_rss();
  const timings t = time_runs(s, feeds, o.iters);
  nlohmann::json j = bench_json(o, t, s);
  const std::optional<std::size_t> peak = peak_rss_bytes();
  const std::optional<std::size_t> steady_peak = reset ? peak : std::nullopt;
  if (steady_peak) j["steady_peak_rss_bytes"] = *steady_peak;
  if (o.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  print_bench(o, t, j, s, steady_peak);
  return 0;
}

struct compare_options {
  std::string a;
  std::string b;
  input_options inputs;
  double rtol = 1e-4;
  double atol = 1e-5;
  int threads = 0;
};

int compare_models(const compare_options& o) {
  ir::model ma = load_checked(o.a);
  ir::model mb = load_checked(o.b);
  runtime::session sa(ma, runtime::session_options{.threads = o.threads});
  runtime::session sb(mb, runtime::session_options{.threads = o.threads});
  const runtime::tensor_map feeds = o.inputs.gather(sa);
  const auto diffs = runtime::compare_outputs(sa, sa.run(feeds), sb, sb.run(feeds), o.rtol, o.atol);
  const bool ok = print_differences(diffs, o.rtol, o.atol);
  return ok ? 0 : 1;
}

void declare_run(CLI::App& sub, run_options& o) {
  sub.add_option("model", o.model, "ONNX model")->required();
  o.inputs.add_to(sub);
  sub.add_option("--output-dir", o.output_dir, "Save outputs as output_K.pb TensorProto files");
  sub.add_option("--threads", o.threads, "Threads (default: all cores)");
}

void declare_bench(CLI::App& sub, bench_options& o) {
  sub.add_option("model", o.model, "ONNX model")->required();
  o.inputs.add_to(sub);
  sub.add_option("--warmup", o.warmup, "Untimed runs first (default 5)");
  sub.add_option("--iters", o.iters, "Timed runs (default 50)");
  sub.add_option("--threads", o.threads, "Threads (default: all cores)");
  sub.add_flag("--json", o.json, "Print one JSON object");
  sub.add_flag("!--no-memory-plan", o.memory_plan, "Pool dead buffers instead of planning intermediates into one arena");
  sub.add_flag("!--no-winograd", o.winograd, "Run 3x3 convolutions with the direct kernel only (smaller weights, slower)");
  sub.add_flag("--profile", o.profile, "Also report time per op type");
  sub.add_option("--slowest-nodes", o.slowest_nodes, "Also report the N slowest nodes (their time per run)");
}

void declare_compare(CLI::App& sub, compare_options& o) {
  sub.add_option("a", o.a, "Reference model")->required();
  sub.add_option("b", o.b, "Model to check")->required();
  o.inputs.add_to(sub);
  sub.add_option("--rtol", o.rtol, "Relative tolerance (default 1e-4)");
  sub.add_option("--atol", o.atol, "Absolute tolerance (default 1e-5)");
  sub.add_option("--threads", o.threads, "Threads (default: all cores)");
}

}  // namespace

command add_run(CLI::App& app) {
  return make_command(app, "run", "Run a model with the reference executor; print output shapes and checksums",
                      declare_run, run_model);
}

command add_bench(CLI::App& app) {
  return make_command(app, "bench", "Measure latency percentiles and throughput of a model", declare_bench, bench_model);
}

command add_compare(CLI::App& app) {
  return make_command(app, "compare",
                      "Run two models on the same inputs and compare their outputs (exit 1 when over tolerance)",
                      declare_compare, compare_models);
}

}  // namespace inferopt::cli
