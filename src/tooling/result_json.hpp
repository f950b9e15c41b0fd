#pragma once
// JSON forms of the library's results, shared by the CLI's reports and the Python package's
// dicts, so that both say the same thing under the same keys.

#include <nlohmann/json.hpp>

#include "inferopt/ir/model.hpp"
#include "inferopt/ir/shape_inference.hpp"
#include "inferopt/ir/statistics.hpp"
#include "inferopt/pass/pass_manager.hpp"
#include "inferopt/prune/calibrated_block_sparsity.hpp"
#include "inferopt/prune/prune.hpp"
#include "inferopt/quant/dynamic_quantize.hpp"
#include "inferopt/quant/quantization_error.hpp"
#include "inferopt/quant/smooth_quant.hpp"
#include "inferopt/quant/quantize_model.hpp"
#include "inferopt/runtime/compare.hpp"
#include "inferopt/runtime/graph_memory_plan.hpp"
#include "inferopt/sparse/sparsify_blocks.hpp"

namespace inferopt::tooling {

/// nodes, ops, params, param_bytes, macs, macs_unknown_nodes.
nlohmann::json to_json(const ir::model_statistics& s);
/// What `inspect` shows: the statistics plus versions, interface, opsets and shape coverage.
nlohmann::json inspect_json(const ir::model& m, const ir::model_statistics& s, const ir::shape_inference_report& shapes);
/// Every pass run (name, runs, ms, nodes before/after, rewrites, counters), the fixpoints,
/// total_ms and rollback_snapshots.
nlohmann::json to_json(const run_report& r);
/// The arena plan: sizes, ratios to the naive and lower-bound sizes, every tensor's offset.
nlohmann::json plan_json(const runtime::graph_memory_plan& p, const runtime::graph_memory_options& options,
                         const ir::shape_inference_report& shapes);
/// What quantization did: QDQ counts, fallback, agreement, cosine and per-tensor SQNR.
nlohmann::json to_json(const quant::quantize_result& r);
/// Dynamic quantization's counts and, when it was measured, its error against the float model.
nlohmann::json to_json(const quant::dynamic_report& r, const quant::quantization_error* error);
/// SmoothQuant: each smoothed activation, its layers and how much flatter its channels became.
nlohmann::json to_json(const quant::smooth_quant_report& s);
/// Calibrated block sparsity per layer: blocks removed, output error against magnitude's.
nlohmann::json to_json(const std::vector<prune::block_sparsity_layer>& layers);
/// Activation ranges by tensor name: {"min": lo, "max": hi}.
nlohmann::json to_json(const quant::range_table& ranges);
/// Channel pruning's groups, layers, params and MACs before and after, sensitivity, latency
/// and refits.
nlohmann::json to_json(const prune::prune_summary& s);
/// One row per measured group: its index, the shares cut and the output cosine drop at each.
nlohmann::json to_json(const std::vector<prune::group_sensitivity>& sensitivity);
/// Block sparsity's decision for every MatMul and Gemm: shapes, blocks kept, predicted speedup
/// or why it was declined.
nlohmann::json to_json(const std::vector<sparse::sparsify_candidate>& plan);
/// One row per output: max abs and max rel difference, and whether it is within tolerance.
nlohmann::json to_json(const std::vector<runtime::output_difference>& diffs);

}  // namespace inferopt::tooling
