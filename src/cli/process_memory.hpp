#pragma once
// The process's resident memory and its high-water mark, for `bench` and `serve` (Linux /proc;
// absent elsewhere).

#include <cstddef>
#include <fstream>
#include <optional>
#include <string>

namespace inferopt::cli {

/// A field of /proc/self/status given in kB (VmHWM, VmRSS), in bytes, or nothing.
inline std::optional<std::size_t> status_bytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == field) {
      std::size_t kib = 0;
      if (status >> kib) return kib * 1024;
      return std::nullopt;
    }
    status.ignore(1 << 20, '\n');
  }
  return std::nullopt;
}

/// Peak resident set size (VmHWM) in bytes, or nothing where /proc does not tell.
inline std::optional<std::size_t> peak_rss_bytes() { return status_bytes("VmHWM:"); }

/// Resident set size now (VmRSS) in bytes, or nothing where /proc does not tell.
inline std::optional<std::size_t> rss_bytes() { return status_bytes("VmRSS:"); }

/// Restarts the high-water mark at the current RSS (Linux: "5" into clear_refs), so that a
/// later peak_rss_bytes() covers only what ran since. False when the kernel refuses.
inline bool reset_peak_rss() {
  std::ofstream refs("/proc/self/clear_refs");
  refs << "5";
  refs.flush();
  return static_cast<bool>(refs);
}

}  // namespace inferopt::cli
