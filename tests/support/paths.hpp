#pragma once
// Where test data lives. `../shared` sits beside the repository; tests that need it skip
// cleanly when it is absent.

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include <unistd.h>

namespace inferopt::test {

inline std::filesystem::path source_dir() { return INFEROPT_SOURCE_DIR; }

/// `../shared/models/onnx-light` beside the repository (or $INFEROPT_SHARED_DIR/models/...).
inline std::optional<std::filesystem::path> light_models_dir() {
  std::filesystem::path shared = std::getenv("INFEROPT_SHARED_DIR") ? std::getenv("INFEROPT_SHARED_DIR")
                                                                    : source_dir().parent_path() / "shared";
  auto dir = shared / "models" / "onnx-light";
  if (std::filesystem::is_directory(dir)) return dir;
  return std::nullopt;
}

/// Debian's libonnx-testdata, if installed.
inline std::optional<std::filesystem::path> onnx_testdata_dir() {
  std::filesystem::path dir = "/usr/share/libonnx-testdata/data";
  if (std::filesystem::is_directory(dir)) return dir;
  return std::nullopt;
}

/// A fresh empty folder under the build tree's temp area.
inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("inferopt_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace inferopt::test
