// `inferopt plan MODEL [--json] [--include-io] [--no-in-place] [--dims N=V,...] [--alignment N]`: one static
// arena for the model's intermediate tensors, with naive and lower-bound sizes to judge it.

#include <charconv>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "commands.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/runtime/graph_memory_plan.hpp"

namespace inferopt::cli {
namespace {

struct plan_options {
  std::string model;
  bool json = false;
  bool include_io = false;
  bool no_in_place = false;
  std::size_t alignment = 64;
  std::string dims;  // batch=8,sequence=128
};

nlohmann::json plan_json(const plan_options& o, const runtime::graph_memory_options& options,
                         const ir::shape_inference_report& shapes, const runtime::graph_memory_plan& p) {
  nlohmann::json j{{"model", o.model}};
  j.update(tooling::plan_json(p, options, shapes));
  return j;
}

std::string bytes_line(std::size_t bytes) {
  return human_bytes(static_cast<std::int64_t>(bytes)) + " (" + std::to_string(bytes) + " bytes)";
}

std::string ratio_text(const nlohmann::json& r) {
  if (r.is_null()) return "n/a";
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << r.get<double>();
  return os.str();
}

void print_text(const nlohmann::json& j, const runtime::graph_memory_plan& p) {
  auto row = [](const char* label) -> std::ostream& { return std::cout << std::left << std::setw(21) << label; };
  if (!j["shape_inference"]["ran"].get<bool>()) {
    row("shape inference") << j["shape_inference"]["note"].get<std::string>() << "\n";
  }
  if (!j["shape_inference"]["unknown_ops"].empty()) {
    row("ops without shapes") << j["shape_inference"]["unknown_ops"].dump() << " (declared types kept)\n";
  }
  row("tensors") << p.tensors.size() << " planned over " << p.steps << " steps\n";
  row("arena") << bytes_line(p.plan.arena_bytes) << "\n";
  row("naive") << bytes_line(p.plan.naive_bytes) << "  (every tensor its own buffer)\n";
  row("lower bound") << bytes_line(p.plan.lower_bound_bytes) << "  (most bytes live at one step)\n";
  const bool below_bound = p.plan.arena_bytes < p.plan.lower_bound_bytes;
  row("arena / lower bound") << ratio_text(j["arena_over_lower_bound"])
                             << (below_bound ? "  (in-place reuse, which the bound does not count)" : "") << "\n";
  row("arena / naive") << ratio_text(j["arena_over_naive"]) << "\n";
  row("in place") << p.plan.in_place_count << "\n";
  row("unknown size") << p.unknown_size.size();
  if (!p.unknown_size.empty()) {
    constexpr std::size_t shown = 5;
    std::cout << " (not planned:";
    for (std::size_t i = 0; i < p.unknown_size.size() && i < shown; ++i) std::cout << ' ' << p.unknown_size[i];
    if (p.unknown_size.size() > shown) std::cout << " ...";
    std::cout << ")";
  }
  std::cout << "\n";
}

/// `batch=8,sequence=128` as a map; a malformed entry is the caller's error.
std::map<std::string, std::int64_t, std::less<>> parse_dim_values(const std::string& text) {
  std::map<std::string, std::int64_t, std::less<>> values;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string entry = text.substr(start, end - start);
    const std::size_t eq = entry.find('=');
    std::int64_t n = -1;
    const char* digits = eq == std::string::npos ? nullptr : entry.c_str() + eq + 1;
    const auto [rest, ec] = digits ? std::from_chars(digits, entry.c_str() + entry.size(), n) : std::from_chars_result{};
    if (!digits || eq == 0 || ec != std::errc{} || *rest != '\0' || n < 0) {
      throw error(errc::invalid_argument, "--dims expects NAME=N[,NAME=N...] with N >= 0, got '" + entry + "'");
    }
    values[entry.substr(0, eq)] = n;
    start = end + 1;
  }
  return values;
}

int run_plan(const plan_options& o) {
  if (o.alignment == 0 || (o.alignment & (o.alignment - 1)) != 0) {
    throw error(errc::invalid_argument, "--alignment must be a power of two, got " + std::to_string(o.alignment));
  }
  ir::model m = load_checked(o.model);
  // Types of intermediates come from shape inference, with symbolic dims given numbers by
  // --dims; what stays unknown is listed as unknown size and not planned.
  ir::shape_inference_options shape_options;
  shape_options.dim_values = parse_dim_values(o.dims);
  const ir::shape_inference_report shapes = ir::infer_shapes(m, shape_options);
  const runtime::graph_memory_options options{.alignment = o.alignment,
                                              .include_graph_inputs = o.include_io,
                                              .include_graph_outputs = o.include_io,
                                              .in_place = !o.no_in_place};
  const runtime::graph_memory_plan p = runtime::plan_graph_memory(m.graph(), options);
  if (const auto problems = runtime::check_graph_memory_plan(p); !problems.empty()) {
    throw error(errc::internal, o.model + ": the arena plan fails its overlap check (" +
                                    std::to_string(problems.size()) + " problems): " + problems.front());
  }
  const nlohmann::json j = plan_json(o, options, shapes, p);
  if (o.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    print_text(j, p);
  }
  return 0;
}

void declare_plan(CLI::App& sub, plan_options& o) {
  sub.add_option("model", o.model, "ONNX model file")->required();
  sub.add_flag("--json", o.json, "Print one JSON object (with every tensor's offset) instead of text");
  sub.add_flag("--include-io", o.include_io, "Plan graph inputs and outputs too");
  sub.add_flag("--no-in-place", o.no_in_place, "Never let an elementwise or view output reuse its input's bytes");
  sub.add_option("--dims", o.dims, "Sizes for symbolic dims, e.g. batch=8,sequence=128");
  sub.add_option("--alignment", o.alignment, "Alignment of every offset in bytes, a power of two (default 64)");
}

}  // namespace

command add_plan(CLI::App& app) {
  return make_command(app, "plan",
                      "Plan one arena for a model's intermediate tensors; report arena, naive and lower-bound bytes",
                      declare_plan, run_plan);
}

}  // namespace inferopt::cli
