// inferopt-http: the commands that speak HTTP (`serve`, `loadgen`), which `inferopt` starts
// in its place; run directly, it takes the same arguments.

#include "command_line.hpp"

int main(int argc, char** argv) {
  using namespace inferopt::cli;
  CLI::App app;
  configure_app(app);
  const std::vector<command> commands{add_serve(app), add_loadgen(app)};
  return run_command_line(app, commands, argc, argv);
}
