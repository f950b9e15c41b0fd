// Helpers the subcommands share: checked loading, statistics, atomic writes, formatting.

#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include "commands.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/validate.hpp"

namespace inferopt::cli {

ir::model load_checked(const std::filesystem::path& path) {
  ir::model m = ir::load_model(path);
  try {
    ir::validate(m);
  } catch (const error& e) {
    throw error(e.code(), path.filename().string() + ": " + e.what());
  }
  return m;
}

ir::model_statistics statistics_of(const ir::model& m, ir::shape_inference_report* shapes) {
  ir::model copy = m.clone();
  // MACs need numbers: symbolic dims of the inputs count as 1 (one sample, one token).
  ir::shape_inference_options options;
  for (const std::string& name : ir::symbolic_input_dims(copy.graph())) options.dim_values.emplace(name, 1);
  const ir::shape_inference_report report = ir::infer_shapes(copy, options);
  if (shapes) *shapes = report;
  return ir::compute_statistics(copy);
}

nlohmann::json to_json(const ir::model_statistics& s) {
  return {{"nodes", s.nodes}, {"ops", s.ops},   {"params", s.params}, {"param_bytes", s.param_bytes},
          {"macs", s.macs},   {"macs_unknown_nodes", s.macs_unknown_nodes}};
}

void save_and_announce(ir::model& m, const std::filesystem::path& path, const ir::save_options& options) {
  // Every model we write carries complete value_info, computed afresh after our edits.
  ir::shape_inference_options refresh;
  refresh.declared = ir::shape_inference_options::declared_types::refresh;
  (void)ir::infer_shapes(m, refresh);
  ir::trim_omitted_inputs(m.graph());
  ir::save_model(m, path, options);
  std::cout << "wrote " << path.string() << " ("
            << human_bytes(static_cast<std::int64_t>(std::filesystem::file_size(path))) << ")\n";
}

std::string human_bytes(std::int64_t bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000.0 && u < 4) {
    v /= 1000.0;
    ++u;
  }
  std::ostringstream os;
  os.precision(u == 0 ? 0 : 1);
  os << std::fixed << v << ' ' << units[u];
  return os.str();
}

std::string human_count(std::int64_t n) {
  const char* units[] = {"", " K", " M", " G", " T"};
  double v = static_cast<double>(n);
  int u = 0;
  while (std::fabs(v) >= 1000.0 && u < 4) {
    v /= 1000.0;
    ++u;
  }
  std::ostringstream os;
  os.precision(u == 0 ? 0 : 2);
  os << std::fixed << v << units[u];
  return os.str();
}

void print_progress(std::int64_t done, std::int64_t total) {
  if (!::isatty(STDERR_FILENO)) return;
  const std::int64_t width = 30;
  const std::int64_t filled = total ? done * width / total : width;
  std::cerr << "\r[" << std::string(static_cast<std::size_t>(filled), '#')
            << std::string(static_cast<std::size_t>(width - filled), ' ') << "] " << done << "/" << total << std::flush;
  if (done == total) std::cerr << "\r" << std::string(static_cast<std::size_t>(width + 20), ' ') << "\r";
}

nlohmann::json to_json(const std::vector<runtime::output_difference>& diffs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : diffs) {
    out.push_back({{"name", d.name}, {"max_abs", d.max_abs}, {"max_rel", d.max_rel}, {"within", d.within},
                   {"problem", d.problem}});
  }
  return out;
}

bool print_differences(const std::vector<runtime::output_difference>& diffs, double rtol, double atol) {
  bool ok = true;
  std::cout << std::left << std::setw(28) << "output" << std::right << std::setw(14) << "max abs" << std::setw(14)
            << "max rel" << "  verdict\n";
  for (const auto& d : diffs) {
    ok = ok && d.within;
    std::cout << std::left << std::setw(28) << d.name << std::right << std::scientific << std::setprecision(3)
              << std::setw(14) << d.max_abs << std::setw(14) << d.max_rel << "  "
              << (d.problem.empty() ? (d.within ? "ok" : "OVER TOLERANCE") : d.problem) << "\n";
  }
  std::cout << std::defaultfloat << (ok ? "outputs match" : "outputs differ") << " (rtol " << rtol << ", atol " << atol
            << ")\n";
  return ok;
}

}  // namespace inferopt::cli
