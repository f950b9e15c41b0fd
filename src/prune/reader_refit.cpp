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
#include <Eigen/Cholesky>

#include "linear_weight.hpp"
#include "observe_inputs.hpp"
#include "paired_moments.hpp"

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

using rows_matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// || X_W W - (X W_orig) ||^2 over the rows, from the paired moments; `target` = cross * W_orig.
double squared_error(const paired_moments& p, const rows_matrix& target, double energy, const rows_matrix& w) {
  return std::max(0.0, energy - 2.0 * (w.array() * target.array()).sum() + (w.array() * (p.seen * w).array()).sum());
}

/// Solves one job on the moments of its input in the cut model against the uncut one.
void solve_on_changed_input(refit_job& job, const paired_moments& p, const std::vector<float>& bias, const refit_options& solve) {
  const auto k = static_cast<std::int64_t>(job.weight.size()) / job.outputs;
  const auto kept = static_cast<Eigen::Index>(job.kept.size());
  rows_matrix w(k + 1, job.outputs), cut(kept + 1, job.outputs);
  w.topRows(k) = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(job.weight.data(), k, job.outputs).cast<double>();
  w.row(k) = Eigen::Map<const Eigen::RowVectorXf>(bias.data(), job.outputs).cast<double>();
  for (Eigen::Index i = 0; i < kept; ++i) cut.row(i) = w.row(job.kept[static_cast<std::size_t>(i)]);
  cut.row(kept) = w.row(k);
  rows_matrix target = p.cross * w;
  double energy = (w.array() * (p.original * w).array()).sum();
  p.aim_at_residual_sum(w, target, energy);
  const rows_matrix refit = damped_moments(p.seen, solve.relative_ridge, kept).llt().solve(dense_matrix(target));
  const double scale = energy > 0.0 ? energy : 1.0;
  job.result.report.relative_error_cut = squared_error(p, target, energy, cut) / scale;
  job.result.report.relative_error_refit = squared_error(p, target, energy, refit) / scale;
  job.result.weight.assign(static_cast<std::size_t>(kept * job.outputs), 0.0F);
  job.result.bias.assign(static_cast<std::size_t>(job.outputs), 0.0F);
  for (Eigen::Index i = 0; i < kept; ++i) {
    for (std::int64_t j = 0; j < job.outputs; ++j) job.result.weight[static_cast<std::size_t>(i * job.outputs + j)] = static_cast<float>(refit(i, j));
  }
  for (std::int64_t j = 0; j < job.outputs; ++j) job.result.bias[static_cast<std::size_t>(j)] = static_cast<float>(refit(kept, j));
}

}  // namespace

std::vector<reader_refit> cut_and_refit_in_sequence(ir::model& m, const channel_analysis& a, const pruning_plan& plan,
                                                    std::span<const runtime::tensor_map> batches,
                                                    const refit_plan_options& options, apply_result& applied) {
  const std::vector<channel_reader> readers = channel_readers(a);
  std::vector<refit_job> jobs = jobs_of(m, a, readers, removed_channels(a, plan));
  std::map<const ir::node*, std::size_t> order;
  for (const ir::node* n : m.graph().nodes()) order.emplace(n, order.size());
  std::sort(jobs.begin(), jobs.end(), [&](const refit_job& x, const refit_job& y) { return order[x.result.node] < order[y.result.node]; });
  std::vector<std::vector<float>> biases;
  for (const refit_job& job : jobs) {
    biases.push_back(job.result.report.skipped_because.empty() ? bias_values({job.result.bias_owner, job.result.bias_input}, m.ir_version)
                                                               : std::vector<float>{});
  }
  const ir::model original = m.clone();
  applied = apply_pruning(m, a, plan);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    refit_job& job = jobs[i];
    if (!job.result.report.skipped_because.empty()) continue;
    const auto k = static_cast<std::int64_t>(job.reader->site->layout.size());
    const ir::value* residual = options.residual_target ? residual_addend(*job.result.node, job.result.bias_owner, m.ir_version) : nullptr;
    const paired_moments p = gather_paired(original, m, job.result.node->input(0)->name(),
                                           static_cast<std::int64_t>(job.kept.size()), k, batches,
                                           residual ? residual->name() : std::string());
    solve_on_changed_input(job, p, biases[i], options.solve);
    install_refits(m, {job.result});
  }
  std::vector<reader_refit> out;
  for (refit_job& job : jobs) out.push_back(std::move(job.result.report));
  return out;
}

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
