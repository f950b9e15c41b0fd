#pragma once
/// Writing files so that readers never see a partial one: write a temporary file in the
/// target's folder, then rename it over the target (atomic on POSIX file systems).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

#include "inferopt/core/error.hpp"

namespace inferopt {

/// A temporary file beside `target`, removed on destruction unless `commit` renamed it
/// into place. Not copyable; not thread-safe.
class atomic_file {
 public:
  /// @throws error(errc::io) naming the target when its folder is not writable.
  explicit atomic_file(std::filesystem::path target) : target_(std::move(target)) {
    const auto dir = target_.parent_path().empty() ? std::filesystem::path(".") : target_.parent_path();
    std::string pattern = (dir / ("." + target_.filename().string() + ".tmp.XXXXXX")).string();
    fd_ = ::mkstemp(pattern.data());
    if (fd_ < 0) fail();
    path_ = std::move(pattern);
  }
  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;
  ~atomic_file() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !path_.empty()) ::unlink(path_.c_str());
  }

  [[nodiscard]] int fd() const noexcept { return fd_; }

  /// Appends bytes. @throws error(errc::io).
  void write(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail();
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  /// Flushes to disk and renames over the target. @throws error(errc::io).
  void commit() {
    ::fchmod(fd_, 0644);
    const bool synced = ::fsync(fd_) == 0;
    const bool closed = ::close(fd_) == 0;
    fd_ = -1;
    if (!synced || !closed || ::rename(path_.c_str(), target_.c_str()) != 0) fail();
    committed_ = true;
  }

 private:
  [[noreturn]] void fail() const {
    throw error(errc::io, target_.string() + ": cannot write (" + std::strerror(errno) + ")");
  }

  std::filesystem::path target_;
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Writes `content` to `path` through an `atomic_file`.
inline void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  atomic_file f(path);
  f.write(content);
  f.commit();
}

}  // namespace inferopt
