#pragma once
// Runs a program as a child process and captures what it wrote and how it ended, so the CLI
// tests check the binary a user runs (argument parsing, exit codes, stderr) rather than the
// functions behind it.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace inferopt::test {

/// How a child process ended and everything it wrote.
struct process_result {
  int exit_code = -1;   // WEXITSTATUS when it exited; -1 when a signal ended it
  int signal = 0;       // the signal that ended it, or 0
  bool timed_out = false;
  std::string out;      // everything written to stdout
  std::string err;      // everything written to stderr

  [[nodiscard]] bool exited() const { return signal == 0 && !timed_out; }
};

namespace detail {

/// Closes a file descriptor on scope exit.
class fd_guard {
 public:
  explicit fd_guard(int fd = -1) : fd_(fd) {}
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  ~fd_guard() { reset(); }
  [[nodiscard]] int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

/// A pipe whose ends close on exec, so the child inherits only what dup2 hands it.
inline void make_pipe(fd_guard& read_end, fd_guard& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
}

}  // namespace detail

/// Runs `argv[0]` (an absolute path; PATH is not searched) with `argv`, the parent's
/// environment and stdin from /dev/null. Both output streams are drained concurrently with
/// poll, so a child that writes a lot to one of them never blocks. A child still running
/// after `timeout` is killed (SIGKILL) and reported as `timed_out`.
/// @throws std::runtime_error when the child cannot be started.
inline process_result run_process(const std::vector<std::string>& argv,
                                  std::chrono::seconds timeout = std::chrono::seconds(300)) {
  if (argv.empty()) throw std::runtime_error("run_process: empty argv");
  detail::fd_guard out_read, out_write, err_read, err_write;
  detail::make_pipe(out_read, out_write);
  detail::make_pipe(err_read, err_write);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), STDERR_FILENO);

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));  // posix_spawn's signature
  args.push_back(nullptr);

  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(rc));
  out_write.reset();  // the child holds the only write ends now; EOF arrives when it exits
  err_write.reset();

  process_result result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_streams = 2;
  char buffer[1 << 16];
  while (open_streams > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      result.timed_out = true;
      break;
    }
    int n = ::poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || fds[k].revents == 0) continue;
      ssize_t got = ::read(fds[k].fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fds[k].fd = -1;  // poll ignores negative descriptors
        --open_streams;
      } else {
        sinks[k]->append(buffer, static_cast<std::size_t>(got));
      }
    }
  }

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace inferopt::test
