// `inferopt inspect MODEL [--json]`: versions, interface, op histogram, parameters, MACs.

#include <algorithm>
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/shape_inference.hpp"

namespace inferopt::cli {
namespace {

void print_text(const nlohmann::json& j) {
  std::cout << "graph      " << j["graph"].get<std::string>() << "\n";
  std::cout << "ir_version " << j["ir_version"] << "\n";
  std::cout << "opsets    ";
  for (const auto& [domain, version] : j["opsets"].items()) std::cout << ' ' << domain << '=' << version;
  std::cout << "\nproducer   " << j["producer"].get<std::string>() << "\n";
  for (const char* side : {"inputs", "outputs"}) {
    std::cout << side << ":\n";
    for (const auto& v : j[side]) {
      std::cout << "  " << v["name"].get<std::string>() << "  " << v["type"].get<std::string>() << '['
                << v["shape"].get<std::string>() << "]\n";
    }
  }
  std::cout << "nodes      " << j["nodes"] << "\n";
  std::cout << "params     " << human_count(j["params"]) << " (" << human_bytes(j["param_bytes"]) << ")\n";
  std::cout << "MACs       " << human_count(j["macs"]);
  if (j["macs_unknown_nodes"].get<std::int64_t>() > 0) {
    std::cout << " (+" << j["macs_unknown_nodes"] << " Conv/Gemm/MatMul nodes of unknown shape)";
  }
  if (!j["symbolic_dims"].empty()) std::cout << " (symbolic dims " << j["symbolic_dims"].dump() << " taken as 1)";
  std::cout << "\nshapes     ";
  if (j["unknown_shapes"].get<std::size_t>() == 0) std::cout << "every value known";
  else std::cout << j["unknown_shapes"] << " values of unknown shape";
  if (!j["ops_without_shape_rules"].empty()) std::cout << "; ops without shape rules " << j["ops_without_shape_rules"].dump();
  std::cout << "\nops:\n";
  std::vector<std::pair<std::int64_t, std::string>> ops;
  for (const auto& [op, count] : j["ops"].items()) ops.emplace_back(count.get<std::int64_t>(), op);
  std::sort(ops.rbegin(), ops.rend());
  for (const auto& [count, op] : ops) std::cout << "  " << std::left << std::setw(24) << op << count << "\n";
}

struct inspect_options {
  std::string model;
  bool json = false;
};

void declare_inspect(CLI::App& sub, inspect_options& o) {
  sub.add_option("model", o.model, "ONNX model file")->required();
  sub.add_flag("--json", o.json, "Print one JSON object instead of text");
}

int run_inspect(const inspect_options& o) {
  ir::model m = load_checked(o.model);
  ir::shape_inference_report shapes;
  const ir::model_statistics stats = statistics_of(m, &shapes);
  nlohmann::json j = tooling::inspect_json(m, stats, shapes);
  if (o.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    print_text(j);
  }
  return 0;
}

}  // namespace

command add_inspect(CLI::App& app) {
  return make_command(app, "inspect", "Show a model's versions, inputs/outputs, op histogram, params and MACs",
                      declare_inspect, run_inspect);
}

}  // namespace inferopt::cli
