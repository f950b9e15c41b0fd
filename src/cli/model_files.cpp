// What every command that reads a model and writes files does the same way: the model and
// -o options, never writing over the input, failing on an unwritable path before the work,
// and atomic reports.

#include "commands.hpp"
#include "inferopt/core/atomic_file.hpp"

namespace inferopt::cli {

namespace fs = std::filesystem;

void add_model_and_output(CLI::App& sub, std::string& input, std::string& output, const std::string& input_help,
                          const std::string& output_help) {
  sub.add_option("model", input, input_help)->required();
  sub.add_option("-o,--output", output, output_help)->required();
}

bool is_same_file(const fs::path& input, const fs::path& output) {
  std::error_code ec;
  return fs::exists(output, ec) && fs::equivalent(input, output, ec);
}

void refuse_overwrite(const fs::path& input, const fs::path& output) {
  if (is_same_file(input, output)) throw error(errc::invalid_argument, output.string() + ": output would overwrite the input");
}

void probe_writable(std::initializer_list<fs::path> paths) {
  for (const fs::path& p : paths) {
    if (!p.empty()) { atomic_file probe(p); }
  }
}

void write_report(const fs::path& path, const nlohmann::json& report) {
  if (!path.empty()) write_file_atomically(path, report.dump(2) + "\n");
}

}  // namespace inferopt::cli
