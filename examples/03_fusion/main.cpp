// Fuses the default model at -O3 and proves the numbers held: the op histogram before and
// after (BatchNormalization folded into Conv, Conv+Relu and Conv+Add+Relu become
// com.microsoft FusedConv), the executor's latency before and after, and `numeric_bisect`
// checking the outputs after every pass that changed the graph.

#include <chrono>
#include <iostream>

#include "inferopt/inferopt.hpp"

namespace {

using namespace inferopt;

void print_ops(const char* label, const ir::model& m) {
  std::cout << label << ":";
  for (const auto& [op, n] : ir::compute_statistics(m).ops) std::cout << " " << op << "=" << n;
  std::cout << "\n";
}

double median_ms(const ir::model& m, const runtime::tensor_map& inputs) {
  runtime::session s(m, runtime::session_options{.threads = 1});
  std::vector<double> ms;
  for (int i = 0; i < 15; ++i) {
    const auto start = std::chrono::steady_clock::now();
    (void)s.run(inputs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main() {
  try {
    ir::model m = ir::make_default_model();
    const ir::model original = ir::parse_model(ir::serialize_model(m));
    runtime::session probe(m, runtime::session_options{.threads = 1});
    const runtime::tensor_map inputs = runtime::random_inputs(probe, 42);

    pass_manager manager;
    auto bisect = std::make_unique<numeric_bisect>(m, inputs, numeric_tolerance{}, 1);
    const numeric_bisect& checks = *bisect;
    manager.add_instrumentation(std::make_unique<verify_each>());
    manager.add_instrumentation(std::move(bisect));
    pipeline p = level_pipeline(3, builtin_registry());
    (void)manager.run(p, m);

    print_ops("before", original);
    print_ops("after -O3", m);
    const numeric_comparison c = compare_models(original, m, inputs, numeric_tolerance{}, 1);
    for (const auto& d : c.outputs) std::cout << d.name << ": max abs error " << d.max_abs << "\n";
    std::cout << "latency (1 thread, median of 15): " << median_ms(original, inputs) << " ms -> "
              << median_ms(m, inputs) << " ms\n";
    std::cout << "numeric checks after " << checks.checks() << " changing pass runs: "
              << (checks.first_divergence() ? "diverged after " + checks.first_divergence()->pass : "all within tolerance")
              << "\n";

    const auto ops = ir::compute_statistics(m).ops;
    if (!c.within() || checks.first_divergence() || ops.count("BatchNormalization") || !ops.count("com.microsoft.FusedConv")) {
      std::cerr << "mismatch: expected matching outputs, no BatchNormalization and some FusedConv\n";
      return 1;
    }
    return 0;
  } catch (const error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
