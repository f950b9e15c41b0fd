#pragma once
// Helpers shared by the IR tests: catching our error type, and whole-file reads and writes.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "inferopt/core/error.hpp"

namespace inferopt::test {

/// The `inferopt::error` that `f` throws, or nullopt when it returns normally. Any other
/// exception escapes, failing the test that called it.
template <class F>
std::optional<inferopt::error> error_from(F&& f) {
  try {
    f();
  } catch (const inferopt::error& e) {
    return e;
  }
  return std::nullopt;
}

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Every entry of a folder, by file name.
inline std::vector<std::string> folder_entries(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace inferopt::test
