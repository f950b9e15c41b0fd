// The shared pipelines around the library's main calls (model_steps.hpp).

#include "model_steps.hpp"

#include <algorithm>
#include <cctype>
#include <memory>

#include "inferopt/builtin.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/pass/instrumentation.hpp"
#include "inferopt/pass/pass_manager.hpp"
#include "inferopt/quant/quantize_model.hpp"
#include "inferopt/runtime/inputs.hpp"

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

std::vector<runtime::tensor_map> measuring_batches(const runtime::session& probe, std::vector<runtime::tensor_map> validation,
                                                   std::vector<runtime::tensor_map> samples, std::uint64_t seed) {
  if (!validation.empty()) return validation;
  if (!samples.empty()) {
    samples.resize(std::min(samples.size(), quant::default_validation_batches));
    return samples;
  }
  const bool real_valued = std::all_of(probe.inputs().begin(), probe.inputs().end(), [](const runtime::io_info& i) {
    return i.type == ir::data_type::float32 || i.type == ir::data_type::float16 || i.type == ir::data_type::float64;
  });
  if (!real_valued) return {};
  return {runtime::random_inputs(probe, seed)};
}

void split_exclusions(const std::vector<std::string>& names, std::vector<std::string>& op_types,
                      std::vector<std::string>& nodes) {
  for (const std::string& e : names) {
    const bool op_type = !e.empty() && std::isupper(static_cast<unsigned char>(e[0])) &&
                         e.find_first_of("/:._0123456789") == std::string::npos;
    (op_type ? op_types : nodes).push_back(e);
  }
}

std::string fp16_pipeline_text(bool keep_io_types, const std::vector<std::string>& block_ops,
                               const std::vector<std::string>& block_nodes) {
  std::string pass = "to-fp16{keep-io-types=" + std::string(keep_io_types ? "1" : "0");
  if (!block_ops.empty()) pass += ",block-ops=" + joined(block_ops, "op type");
  if (!block_nodes.empty()) pass += ",block-nodes=" + joined(block_nodes, "node name");
  return "infer-shapes," + pass + "}";
}

}  // namespace inferopt::tooling
