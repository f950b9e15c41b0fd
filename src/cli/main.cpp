// inferopt: the command-line front end. The HTTP commands run in inferopt-http, which this
// program starts in its place (command_line.hpp says why).

#include "command_line.hpp"

int main(int argc, char** argv) {
  using namespace inferopt::cli;
  if (argc > 1 && is_http_command(argv[1])) return exec_http_program(argv);
  CLI::App app;
  configure_app(app);
  std::vector<command> commands;
  commands.push_back(add_inspect(app));
  commands.push_back(add_optimize(app));
  commands.push_back(add_passes(app));
  commands.push_back(add_fp16(app));
  commands.push_back(add_quantize(app));
  commands.push_back(add_run(app));
  commands.push_back(add_bench(app));
  commands.push_back(add_compare(app));
  commands.push_back(add_plan(app));
  commands.push_back(add_sparsify(app));
  commands.push_back(add_prune(app));
  commands.push_back(add_convert(app));
  commands.push_back(add_tokenize(app));
  // Listed in --help; never parsed here, since the program was replaced above.
  for (const command_name& c : http_commands) app.add_subcommand(std::string(c.name), std::string(c.description));
  return run_command_line(app, commands, argc, argv);
}
