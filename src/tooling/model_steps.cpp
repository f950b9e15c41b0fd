// The shared pipelines around the library's main calls (model_steps.hpp).

#include "model_steps.hpp"

#include <algorithm>
#include <memory>

#include "inferopt/builtin.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/pass/instrumentation.hpp"
#include "inferopt/pass/pass_manager.hpp"

namespace inferopt::tooling {
namespace {

/// `a;b;c` for a to-fp16 list option; names that would break the pipeline text are refused.
std::string joined(const std::vector<std::string>& names, const char* what) {
  std::string out;
  for (const std::string& n : names) {
    if (n.find_first_of(",;{}()=") != std::string::npos) {
      throw error(errc::invalid_argument, std::string(what) + " '" + n + "' contains one of , ; { } ( ) =");
    }
    out += (out.empty() ? "" : ";") + n;
  }
  return out;
}

}  // namespace

void run_verified(ir::model& m, pipeline p) {
  pass_manager manager;
  manager.add_instrumentation(std::make_unique<verify_each>());
  (void)manager.run(p, m);
}

void prepare_float_model(ir::model& m, int level) {
  if (level > 0) run_verified(m, level_pipeline(std::min(level, 2), builtin_registry()));
}

void pack_projections(ir::model& m) { run_verified(m, parse_pipeline("merge-parallel-matmuls", builtin_registry())); }

void finish_for_onnxruntime(ir::model& m) { run_verified(m, parse_pipeline("residual-sum-before-norm", builtin_registry())); }

std::string fp16_pipeline_text(bool keep_io_types, const std::vector<std::string>& block_ops,
                               const std::vector<std::string>& block_nodes) {
  std::string pass = "to-fp16{keep-io-types=" + std::string(keep_io_types ? "1" : "0");
  if (!block_ops.empty()) pass += ",block-ops=" + joined(block_ops, "op type");
  if (!block_nodes.empty()) pass += ",block-nodes=" + joined(block_nodes, "node name");
  return "infer-shapes," + pass + "}";
}

}  // namespace inferopt::tooling
