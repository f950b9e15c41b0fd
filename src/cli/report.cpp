// Helpers the subcommands share: writing models, formatting, progress.

#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include "commands.hpp"
#include "inferopt/ir/serialize.hpp"

namespace inferopt::cli {

void save_and_announce(ir::model& m, const std::filesystem::path& path, const ir::save_options& options) {
  tooling::prepare_for_writing(m);
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
