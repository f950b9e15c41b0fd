// Load + save of a ResNet-50-sized model: ir::load_model + ir::save_model against plain
// protobuf over the same file, in the same run.
//
// Baseline: onnx::ModelProto::ParseFromIstream + SerializeToOstream, i.e. what a tool that
// edits the protobuf message in place pays. Candidate: ir::load_model + ir::save_model (parse,
// move the weights into the IR, rebuild a message, write it through a temporary file that is
// fsync'ed and renamed into place). The model is make_resnet50(seed 1): about 25.6 M float
// parameters stored as raw_data, ~100 MB on disk, generated once into a temporary folder.
//
// BM_ir_load_save and BM_ir_load time both sides every iteration and alternate which runs
// first, so page-cache state and clock drift do not favour one side. The reported time is the
// candidate's; `speedup_vs_protobuf` is baseline time / candidate time and
// `ratio_vs_protobuf` its inverse (the acceptance goal is ratio <= 1.5). Each timed region
// covers opening the file through destroying the in-memory model, on both sides.
//
// BM_load_peak_rss measures peak RSS while loading in a fresh process (this program
// re-executed with --inferopt-peak-rss-child), so memory that this process's allocator kept
// from earlier benchmarks cannot hide the allocations of the load. `peak_rss_over_file` is
// (VmHWM after loading - VmRSS before loading) / file size (goal: <= 2.2).

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <onnx/onnx_pb.h>

#include "inferopt/ir/sample_models.hpp"
#include "inferopt/ir/serialize.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace inferopt;

constexpr std::string_view peak_rss_child_flag = "--inferopt-peak-rss-child";

template <class F>
double seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Writes back every dirty page of the file system holding `dir` (untimed, before each timed
/// side). Without it, the baseline's ~100 MB of unwritten output is still being written back
/// while the candidate runs, and the candidate's fsync waits for it on ext4 (ordered mode).
void flush_file_system(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::syncfs(fd);
  ::close(fd);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---- baseline: plain protobuf ------------------------------------------------------------

void protobuf_load(const fs::path& in, onnx::ModelProto& mp) {
  std::ifstream is(in, std::ios::binary);
  if (!is || !mp.ParseFromIstream(&is)) throw std::runtime_error(in.string() + ": protobuf cannot parse the model");
}

void protobuf_save(const onnx::ModelProto& mp, const fs::path& out) {
  std::ofstream os(out, std::ios::binary | std::ios::trunc);
  if (!mp.SerializeToOstream(&os) || !os.flush()) throw std::runtime_error(out.string() + ": cannot write");
}

void protobuf_load_save(const fs::path& in, const fs::path& out) {
  onnx::ModelProto mp;
  protobuf_load(in, mp);
  protobuf_save(mp, out);
}

// ---- candidate: the IR -------------------------------------------------------------------

void ir_load_save(const fs::path& in, const fs::path& out) {
  ir::model m = ir::load_model(in);
  ir::save_model(m, out);
}

// ---- the generated model -----------------------------------------------------------------

struct sample_model {
  fs::path dir;  // temporary folder, removed when the program ends
  fs::path file;
  std::size_t file_bytes = 0;
  std::string problem;  // why the benchmarks cannot run; empty when they can
};

/// Writes make_resnet50 to a temporary folder and checks once that the candidate and the
/// baseline both write back the same model (under canonical protobuf comparison).
sample_model generate() {
  sample_model s;
  try {
    std::string pattern = (fs::temp_directory_path() / "inferopt_bench_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a temporary folder");
    s.dir = pattern;
    s.file = s.dir / "resnet50.onnx";
    ir::save_model(ir::make_resnet50(1), s.file);
    s.file_bytes = static_cast<std::size_t>(fs::file_size(s.file));

    const fs::path ours = s.dir / "check_ir.onnx";
    const fs::path theirs = s.dir / "check_protobuf.onnx";
    ir_load_save(s.file, ours);
    protobuf_load_save(s.file, theirs);
    const std::string original = ir::canonicalize_model_bytes(read_file(s.file));
    if (ir::canonicalize_model_bytes(read_file(ours)) != original) {
      s.problem = "ir::load_model + ir::save_model changed the model";
    } else if (ir::canonicalize_model_bytes(read_file(theirs)) != original) {
      s.problem = "the protobuf round trip changed the model";
    }
    fs::remove(ours);
    fs::remove(theirs);
  } catch (const std::exception& e) {
    s.problem = std::string("setup failed: ") + e.what();
  }
  return s;
}

std::optional<sample_model>& sample_slot() {
  static std::optional<sample_model> slot;  // generated on first use, so --benchmark_list_tests is fast
  return slot;
}

const sample_model& sample() {
  auto& slot = sample_slot();
  if (!slot) slot = generate();
  return *slot;
}

void remove_sample() {
  auto& slot = sample_slot();
  std::error_code ec;
  if (slot && !slot->dir.empty()) fs::remove_all(slot->dir, ec);
}

class resnet50_file : public benchmark::Fixture {
 public:
  using benchmark::Fixture::SetUp;
  void SetUp(benchmark::State& state) override {
    const sample_model& s = sample();
    if (!s.problem.empty()) {
      state.SkipWithError(s.problem.c_str());
      return;
    }
    file_ = s.file;
    dir_ = s.dir;
    bytes_ = s.file_bytes;
  }

 protected:
  fs::path file_;
  fs::path dir_;
  std::size_t bytes_ = 0;
};

/// Times `candidate` and `baseline` once each per iteration, alternating which goes first, and
/// reports the candidate's time with the ratio counters.
template <class Candidate, class Baseline>
void run_paired(benchmark::State& state, const fs::path& dir, std::size_t bytes, Candidate candidate_body,
                Baseline baseline_body) {
  auto candidate = [&] {
    flush_file_system(dir);
    return seconds(candidate_body);
  };
  auto baseline = [&] {
    flush_file_system(dir);
    return seconds(baseline_body);
  };
  double candidate_total = 0;
  double baseline_total = 0;
  std::int64_t k = 0;
  for (auto _ : state) {
    try {
      double c = 0;
      double b = 0;
      if (k++ % 2 == 0) {
        c = candidate();
        b = baseline();
      } else {
        b = baseline();
        c = candidate();
      }
      state.SetIterationTime(c);
      candidate_total += c;
      baseline_total += b;
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
  if (state.error_occurred() || candidate_total <= 0 || baseline_total <= 0) return;
  const double n = static_cast<double>(state.iterations());
  state.counters["speedup_vs_protobuf"] = baseline_total / candidate_total;
  state.counters["ratio_vs_protobuf"] = candidate_total / baseline_total;
  state.counters["protobuf_ms"] = baseline_total / n * 1e3;
  state.counters["model_MB"] = static_cast<double>(bytes) / 1e6;
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
}

// ---- load + save, and load alone ---------------------------------------------------------

BENCHMARK_DEFINE_F(resnet50_file, BM_ir_load_save)(benchmark::State& state) {
  const fs::path ours = dir_ / "out_ir.onnx";
  const fs::path theirs = dir_ / "out_protobuf.onnx";
  run_paired(
      state, dir_, bytes_, [&] { ir_load_save(file_, ours); }, [&] { protobuf_load_save(file_, theirs); });
}
BENCHMARK_REGISTER_F(resnet50_file, BM_ir_load_save)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(10);

BENCHMARK_DEFINE_F(resnet50_file, BM_ir_load)(benchmark::State& state) {
  run_paired(
      state, dir_, bytes_,
      [&] {
        ir::model m = ir::load_model(file_);
        benchmark::DoNotOptimize(m);
      },
      [&] {
        onnx::ModelProto mp;
        protobuf_load(file_, mp);
        benchmark::DoNotOptimize(mp);
      });
}
BENCHMARK_REGISTER_F(resnet50_file, BM_ir_load)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(10);

// ---- peak RSS while loading --------------------------------------------------------------

struct memory_status {
  std::size_t rss_kib = 0;  // VmRSS
  std::size_t hwm_kib = 0;  // VmHWM: peak RSS of the process so far
};

memory_status read_memory_status() {
  memory_status m;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) m.rss_kib = std::stoull(line.substr(6));
    if (line.rfind("VmHWM:", 0) == 0) m.hwm_kib = std::stoull(line.substr(6));
  }
  return m;
}

/// Child side: loads `file` once with `which` ("ir" or "protobuf") and prints
/// "<VmRSS before KiB> <VmHWM after KiB> <VmRSS after KiB> <load seconds>".
int peak_rss_child(std::string_view which, const fs::path& file) {
  try {
    const memory_status before = read_memory_status();
    memory_status after;
    double s = 0;
    if (which == "ir") {
      std::optional<ir::model> m;
      s = seconds([&] { m.emplace(ir::load_model(file)); });
      after = read_memory_status();
      benchmark::DoNotOptimize(m);
    } else if (which == "protobuf") {
      onnx::ModelProto mp;
      s = seconds([&] { protobuf_load(file, mp); });
      after = read_memory_status();
      benchmark::DoNotOptimize(mp);
    } else {
      std::fprintf(stderr, "unknown loader '%.*s'\n", static_cast<int>(which.size()), which.data());
      return 2;
    }
    std::printf("%zu %zu %zu %.9f\n", before.rss_kib, after.hwm_kib, after.rss_kib, s);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

struct child_result {
  double rss_before = 0;  // bytes
  double hwm = 0;         // bytes
  double rss_after = 0;   // bytes
  double seconds = 0;
};

/// Parent side: re-executes this program as a peak-RSS child and reads its report.
child_result measure_in_child(const char* which, const fs::path& file) {
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string flag(peak_rss_child_flag);
  std::string loader(which);
  std::string path = file.string();
  std::array<char*, 5> argv{self.data(), flag.data(), loader.data(), path.data(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw std::runtime_error("cannot start the peak-RSS child");
  }
  std::string report;
  std::array<char, 256> buf{};
  for (ssize_t n; (n = ::read(fds[0], buf.data(), buf.size())) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    report.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(std::string("the peak-RSS child (") + which + ") failed");
  }
  std::istringstream in(report);
  std::size_t rss_before = 0;
  std::size_t hwm = 0;
  std::size_t rss_after = 0;
  child_result r;
  if (!(in >> rss_before >> hwm >> rss_after >> r.seconds)) {
    throw std::runtime_error("cannot read the peak-RSS child's report: " + report);
  }
  r.rss_before = static_cast<double>(rss_before) * 1024;
  r.hwm = static_cast<double>(hwm) * 1024;
  r.rss_after = static_cast<double>(rss_after) * 1024;
  return r;
}

BENCHMARK_DEFINE_F(resnet50_file, BM_load_peak_rss)(benchmark::State& state) {
  child_result ours;
  child_result theirs;
  for (auto _ : state) {
    try {
      ours = measure_in_child("ir", file_);
      theirs = measure_in_child("protobuf", file_);
      state.SetIterationTime(ours.seconds);
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
  if (state.error_occurred()) return;
  const double bytes = static_cast<double>(bytes_);
  state.counters["peak_rss_over_file"] = (ours.hwm - ours.rss_before) / bytes;
  state.counters["protobuf_peak_rss_over_file"] = (theirs.hwm - theirs.rss_before) / bytes;
  state.counters["peak_rss_vs_protobuf"] = (ours.hwm - ours.rss_before) / (theirs.hwm - theirs.rss_before);
  state.counters["hwm_MB"] = ours.hwm / 1e6;
  state.counters["rss_before_MB"] = ours.rss_before / 1e6;
  state.counters["protobuf_hwm_MB"] = theirs.hwm / 1e6;
  state.counters["protobuf_rss_before_MB"] = theirs.rss_before / 1e6;
  state.counters["model_MB"] = bytes / 1e6;
}
BENCHMARK_REGISTER_F(resnet50_file, BM_load_peak_rss)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && argv[1] == peak_rss_child_flag) return peak_rss_child(argv[2], argv[3]);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  remove_sample();
  return 0;
}
