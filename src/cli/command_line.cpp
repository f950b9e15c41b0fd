#include "command_line.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "exit_codes.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/core/printable.hpp"

namespace inferopt::cli {

bool is_http_command(std::string_view name) {
  return std::any_of(http_commands.begin(), http_commands.end(), [name](const command_name& c) { return c.name == name; });
}

int exec_http_program(char** argv) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    std::cerr << "inferopt: error: cannot find this program's folder to start inferopt-http: " << ec.message() << '\n';
    return exit_internal;
  }
  const std::filesystem::path program = self.parent_path() / "inferopt-http";
  // argv[0] stays what the user typed, so that help and messages name `inferopt serve`.
  execv(program.c_str(), argv);
  std::cerr << "inferopt: error: cannot start inferopt-http, which serves the HTTP commands, from this program's folder: "
            << std::strerror(errno) << '\n';
  return exit_internal;
}

void configure_app(CLI::App& app) {
  app.description("inferopt: make ONNX models faster and prove they kept their numbers");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("inferopt ") + INFEROPT_VERSION);
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string(e.what()); });
}

int run_command_line(CLI::App& app, const std::vector<command>& commands, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    std::cerr << "inferopt: error: " << printable(e.what()) << " (see --help)\n";
    return exit_bad_input;
  }
  try {
    for (const auto& c : commands) {
      if (c.sub->parsed()) return c.run();
    }
    return exit_bad_input;
  } catch (const std::exception& e) {
    const error failure = as_error(e);
    std::cerr << "inferopt: error: " << printable(failure.what()) << '\n';
    return exit_code_for(failure.code());
  } catch (...) {
    std::cerr << "inferopt: error: an exception of unknown type\n";
    return exit_internal;
  }
}

}  // namespace inferopt::cli
