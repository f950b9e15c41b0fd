// inferopt: the command-line front end. Every failure ends here as one line on stderr,
// `inferopt: error: <message>`, and exit code 2 (3 for a bug of ours).

#include <iostream>

#include "commands.hpp"
#include "inferopt/core/error.hpp"

namespace {

int exit_code(inferopt::errc code) { return code == inferopt::errc::internal ? 3 : 2; }

std::string one_line(std::string s) {
  for (char& c : s) c = (c == '\n' || c == '\r') ? ' ' : c;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"inferopt: make ONNX models faster and prove they kept their numbers"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("inferopt ") + INFEROPT_VERSION);
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string(e.what()); });
  std::vector<inferopt::cli::command> commands;
  commands.push_back(inferopt::cli::add_inspect(app));
  commands.push_back(inferopt::cli::add_optimize(app));
  commands.push_back(inferopt::cli::add_passes(app));
  commands.push_back(inferopt::cli::add_fp16(app));
  commands.push_back(inferopt::cli::add_quantize(app));
  commands.push_back(inferopt::cli::add_run(app));
  commands.push_back(inferopt::cli::add_bench(app));
  commands.push_back(inferopt::cli::add_compare(app));
  commands.push_back(inferopt::cli::add_plan(app));
  commands.push_back(inferopt::cli::add_sparsify(app));
  commands.push_back(inferopt::cli::add_prune(app));
  commands.push_back(inferopt::cli::add_convert(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    std::cerr << "inferopt: error: " << one_line(e.what()) << " (see --help)\n";
    return 2;
  }
  try {
    for (const auto& c : commands) {
      if (c.sub->parsed()) return c.run();
    }
    return 2;
  } catch (const inferopt::error& e) {
    std::cerr << "inferopt: error: " << one_line(e.what()) << '\n';
    return exit_code(e.code());
  } catch (const std::bad_alloc&) {
    std::cerr << "inferopt: error: out of memory\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "inferopt: error: " << one_line(e.what()) << '\n';
    return 3;
  }
}
