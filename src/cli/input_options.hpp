#pragma once
// Where a command's feeds come from: TensorProto files, a folder, or seeded random values.

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "inferopt/core/error.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::cli {

/// Where feeds come from; random with seed 0 when nothing is given.
struct input_options {
  std::vector<std::string> files;  // NAME=FILE.pb
  std::string dir;
  std::uint64_t seed = 0;
  bool seed_given = false;

  void add_to(CLI::App& sub) {
    sub.add_option("--input", files, "NAME=FILE.pb: a TensorProto file for one input (repeatable)");
    sub.add_option("--input-dir", dir, "A folder with input_0.pb, input_1.pb, ...");
    sub.add_option("--random-inputs", seed, "Seeded random inputs (the default, seed 0)")
        ->each([this](const std::string&) { seed_given = true; });
  }

  /// For reports: `random inputs (seed 0)`, `inputs from DIR`, `N input files`.
  [[nodiscard]] std::string describe() const {
    if (!dir.empty()) return "inputs from " + dir;
    if (!files.empty()) return std::to_string(files.size()) + " input file(s)";
    return "random inputs (seed " + std::to_string(seed) + ")";
  }

  runtime::tensor_map gather(const runtime::session& s) const {
    if (seed_given && (!dir.empty() || !files.empty())) {
      throw error(errc::invalid_argument, "give --random-inputs or input files, not both");
    }
    runtime::tensor_map feeds = dir.empty() ? runtime::tensor_map{} : runtime::inputs_from_dir(s, dir);
    for (const std::string& spec : files) {
      auto eq = spec.find('=');
      if (eq == std::string::npos || eq == 0) throw error(errc::invalid_argument, "--input expects NAME=FILE.pb, got '" + spec + "'");
      feeds[spec.substr(0, eq)] = runtime::read_tensor_file(spec.substr(eq + 1));
    }
    if (dir.empty() && files.empty()) feeds = runtime::random_inputs(s, seed);
    return feeds;
  }
};

}  // namespace inferopt::cli
