// `inferopt convert MODEL -o OUT --opset N [--report FILE.json]`: converts the default-domain
// opset up or down (ir::convert_opset) and prints the opsets and how many nodes each adapter
// changed. A node that cannot be converted stops the command before anything is written.

#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "inferopt/ir/convert_opset.hpp"

namespace inferopt::cli {
namespace {

struct convert_options {
  std::string input;
  std::string output;
  std::int64_t opset = 0;
  std::string report;
};

void print_report(const ir::opset_conversion_report& r) {
  if (!r.converted()) {
    std::cout << "opset " << r.from_opset << " already: nothing to convert\n";
    return;
  }
  std::cout << ir::describe(r) << ": " << r.nodes_visited << " nodes, " << r.nodes_changed << " changed; nodes per adapter:\n";
  for (const auto& [name, count] : r.changed_nodes) {
    std::cout << "  " << std::left << std::setw(30) << name << count << "\n";
  }
}

nlohmann::json to_json(const ir::opset_conversion_report& r) {
  return {{"from_opset", r.from_opset},       {"to_opset", r.to_opset},
          {"nodes_visited", r.nodes_visited}, {"nodes_changed", r.nodes_changed},
          {"changed_nodes", r.changed_nodes}};
}

int run_convert(const convert_options& o) {
  refuse_overwrite(o.input, o.output);
  probe_writable({o.output, o.report});
  ir::model m = load_checked(o.input);
  const ir::opset_conversion_report r = ir::convert_opset(m, o.opset);
  print_report(r);
  write_report(o.report, to_json(r));
  save_and_announce(m, o.output);
  return 0;
}

void declare_convert(CLI::App& sub, convert_options& o) {
  add_model_and_output(sub, o.input, o.output);
  sub.add_option("--opset", o.opset, "Target ai.onnx opset (" + std::to_string(ir::oldest_target_opset) + " to " +
                                         std::to_string(ir::newest_target_opset) + ")")
      ->required();
  sub.add_option("--report", o.report, "Write a JSON report (opsets, nodes changed per adapter)");
}

}  // namespace

command add_convert(CLI::App& app) {
  return make_command(app, "convert", "Convert the ai.onnx opset up or down, op by op", declare_convert, run_convert);
}

}  // namespace inferopt::cli
