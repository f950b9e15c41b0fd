// inferopt: the command-line front end. Every failure ends here as one line on stderr,
// `inferopt: error: <message>`, with the exit code exit_codes.hpp maps its kind to.

#include <iostream>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/core/printable.hpp"

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
  commands.push_back(inferopt::cli::add_tokenize(app));
  commands.push_back(inferopt::cli::add_serve(app));
  commands.push_back(inferopt::cli::add_loadgen(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    std::cerr << "inferopt: error: " << inferopt::printable(e.what()) << " (see --help)\n";
    return inferopt::cli::exit_bad_input;
  }
  try {
    for (const auto& c : commands) {
      if (c.sub->parsed()) return c.run();
    }
    return inferopt::cli::exit_bad_input;
  } catch (const std::exception& e) {
    const inferopt::error failure = inferopt::as_error(e);
    std::cerr << "inferopt: error: " << inferopt::printable(failure.what()) << '\n';
    return inferopt::cli::exit_code_for(failure.code());
  } catch (...) {
    std::cerr << "inferopt: error: an exception of unknown type\n";
    return inferopt::cli::exit_internal;
  }
}
