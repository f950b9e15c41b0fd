#pragma once
// What both programs of the command line share: the top-level app, parsing, and the one-line
// error each failure ends as (`inferopt: error: <message>`, with the exit code exit_codes.hpp
// maps its kind to).

#include <array>
#include <string_view>
#include <vector>

#include "commands.hpp"

namespace inferopt::cli {

/// A subcommand's name and its one-line description.
struct command_name {
  std::string_view name;
  std::string_view description;
};

inline constexpr command_name serve_command{"serve", "Serve a model over HTTP (KServe v2) with dynamic batching"};
inline constexpr command_name loadgen_command{"loadgen", "Send load to a KServe v2 server and report throughput and latency"};

/// The commands that speak HTTP. They live in a second program, `inferopt-http`, installed
/// beside `inferopt`, which starts it for them: linking an HTTP library loads OpenSSL into the
/// process (3.6 MiB resident), and `bench` or `run` should not carry it.
inline constexpr std::array<command_name, 2> http_commands{serve_command, loadgen_command};

/// Whether `name` is one of `http_commands`.
[[nodiscard]] bool is_http_command(std::string_view name);

/// Replaces this process by `inferopt-http` beside it, with the same arguments; returns the
/// exit code only when that program cannot be started.
int exec_http_program(char** argv);

/// The app both programs start from: its description, `--version`, one subcommand required.
void configure_app(CLI::App& app);

/// Parses the command line and runs the chosen command: its exit code, or the one of the
/// failure it ends with.
int run_command_line(CLI::App& app, const std::vector<command>& commands, int argc, char** argv);

}  // namespace inferopt::cli
