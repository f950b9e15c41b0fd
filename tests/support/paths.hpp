#pragma once
// Where test data lives. `../shared` sits beside the repository; tests that need it skip
// cleanly when it is absent.

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

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

/// A fresh empty folder in the temp area, removed with everything in it when the owner goes, so
/// that repeated test runs leave nothing behind.
class scratch_folder {
 public:
  explicit scratch_folder(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() / ("inferopt_test_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  scratch_folder(scratch_folder&& other) noexcept : dir_(std::exchange(other.dir_, {})) {}
  scratch_folder(const scratch_folder&) = delete;
  scratch_folder& operator=(const scratch_folder&) = delete;
  scratch_folder& operator=(scratch_folder&&) = delete;
  ~scratch_folder() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

  [[nodiscard]] const std::filesystem::path& path() const { return dir_; }
  [[nodiscard]] std::filesystem::path operator/(const std::string& name) const { return dir_ / name; }

 private:
  std::filesystem::path dir_;
};

}  // namespace inferopt::test
