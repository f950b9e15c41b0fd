// plan_refits / install_refits (calibrated_pruning.hpp): the least-squares refit of every
// MatMul or Gemm whose input rows pruning removes.

#include <algorithm>
#include <map>
#include <set>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"
#include "inferopt/prune/calibrated_pruning.hpp"
#include "linear_weight.hpp"
#include "observe_inputs.hpp"

namespace inferopt::prune {
namespace {

/// Channels the plan removes.
std::set<channel_id> removed_channels(const channel_analysis& a, const pruning_plan& plan) {
  std::set<channel_id> out;
  for (const group_selection& s : plan.groups) {
    for (std::size_t u : s.removed_units) {
      const auto& ids = a.groups[s.group].units[u].channels;
      out.insert(ids.begin(), ids.end());
    }
  }
  return out;
}

/// Whether the plan also cuts `n`'s outputs (a site on its weight other than `reader`'s).
bool outputs_cut(const channel_analysis& a, const cut_site& reader, const std::set<channel_id>& removed) {
  return std::any_of(a.sites.begin(), a.sites.end(), [&](const cut_site& s) {
    return &s != &reader && s.node == reader.node &&
           std::any_of(s.layout.begin(), s.layout.end(), [&](channel_id id) { return removed.contains(id); });
  });
}

/// Finds the reader's bias for the refit to move the removed inputs' mean into.
bool find_bias(planned_refit& r, std::int64_t outputs, std::int64_t ir_version) {
  const std::optional<bias_site> b = prune::find_bias(*r.node, outputs, ir_version);
  if (!b) return false;
  r.bias_owner = b->owner;
  r.bias_input = b->input;
  return true;
}

/// A reader the plan cuts, with what its refit needs.
struct refit_job {
  planned_refit result;
  const channel_reader* reader = nullptr;
  std::vector<std::int64_t> kept;
  std::vector<float> weight;  // [K, N]
  std::int64_t outputs = 0;
};

std::vector<refit_job> jobs_of(const ir::model& m, const channel_analysis& a, const std::vector<channel_reader>& readers,
                               const std::set<channel_id>& removed) {
  std::vector<refit_job> jobs;
  for (const channel_reader& r : readers) {
    if (!r.node->is("MatMul") && !r.node->is("Gemm")) continue;
    refit_job job;
    job.reader = &r;
    for (std::size_t p = 0; p < r.site->layout.size(); ++p) {
      if (!removed.contains(r.site->layout[p])) job.kept.push_back(static_cast<std::int64_t>(p));
    }
    if (job.kept.size() == r.site->layout.size()) continue;
    planned_refit& out = job.result;
    out.node = r.node;
    out.transposed = stores_transposed(*r.node);
    out.report.node = r.node->label();
    out.report.inputs_before = static_cast<std::int64_t>(r.site->layout.size());
    out.report.inputs_after = static_cast<std::int64_t>(job.kept.size());
    job.weight = weight_rows(*r.node, out.transposed, m.ir_version, job.outputs);
    if (job.kept.empty()) {
      out.report.skipped_because = "every input is removed";
    } else if (outputs_cut(a, *r.site, removed)) {
      out.report.skipped_because = "its own outputs are pruned too";
    } else if (!find_bias(out, job.outputs, m.ir_version)) {
      out.report.skipped_because = "no bias to take the removed inputs' mean";
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

/// Gathers the moments of `pass`'s readers' inputs and solves their refits.
void solve_pass(const ir::model& m, std::vector<refit_job*> pass, std::span<const runtime::tensor_map> batches,
                const refit_options& solve) {
  std::vector<const cut_site*> sites;
  for (refit_job* job : pass) sites.push_back(job->reader->site);
  const std::vector<input_gram> grams = reader_input_grams(m, sites, batches);
  for (std::size_t i = 0; i < pass.size(); ++i) {
    refit_job& job = *pass[i];
    const std::vector<float> bias = bias_values({job.result.bias_owner, job.result.bias_input}, m.ir_version);
    refit_result r = refit_after_cut(grams[i], job.weight, bias, job.outputs, job.kept, solve);
    job.result.report.relative_error_cut = r.relative_error_cut;
    job.result.report.relative_error_refit = r.relative_error_refit;
    job.result.weight = std::move(r.weight);
    job.result.bias = std::move(r.bias);
  }
}

}  // namespace

std::vector<planned_refit> plan_refits(const ir::model& m, const channel_analysis& a, const pruning_plan& plan,
                                       std::span<const runtime::tensor_map> batches, const refit_plan_options& options) {
  const std::vector<channel_reader> readers = channel_readers(a);
  std::vector<refit_job> jobs = jobs_of(m, a, readers, removed_channels(a, plan));
  std::vector<refit_job*> pending;
  std::vector<std::int64_t> bytes;
  for (refit_job& job : jobs) {
    if (!job.result.report.skipped_because.empty()) continue;
    const auto k = static_cast<std::int64_t>(job.reader->site->layout.size()) + 1;
    pending.push_back(&job);
    bytes.push_back(k * k * 8);
  }
  in_passes(bytes, options.max_gram_bytes, [&](std::size_t first, std::size_t last) {
    solve_pass(m, {pending.begin() + first, pending.begin() + last}, batches, options.solve);
  });
  std::vector<planned_refit> out;
  for (refit_job& job : jobs) out.push_back(std::move(job.result));
  return out;
}

void install_refits(ir::model& m, const std::vector<planned_refit>& refits) {
  for (const planned_refit& r : refits) {
    if (!r.report.skipped_because.empty()) continue;
    ir::graph& g = *r.node->owner();
    store_weight_rows(g, *r.node, r.transposed, r.weight, static_cast<std::int64_t>(r.bias.size()), "_refit");
    store_bias(g, {r.bias_owner, r.bias_input}, r.bias, m.ir_version, "_refit");
  }
}

}  // namespace inferopt::prune
