#pragma once
// Shared checks of the pruning tests.
//
// The central one is an equivalence: pruning a set of channels gives exactly the model in
// which every layer that *reads* those channels ignores them (its input weights for them are
// zero). So a test prunes one copy of a model and, in another copy, zeroes the reading
// weights of the removed channels; both must compute the same outputs. A coupling rule that
// forgot a consumer, cut the wrong positions or mixed up offsets breaks this.

#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass/infer_shapes.hpp"
#include "inferopt/prune/apply_pruning.hpp"
#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/prune/importance.hpp"
#include "inferopt/prune/pruning_plan.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"
#include "support/tensor_compare.hpp"

namespace inferopt::test {

/// A model with input `x` of the given shape, built by `body` (which returns the output).
inline ir::model build_model(ir::shape input, const std::function<ir::value*(ir::graph_builder&, ir::value*)>& body,
                             std::int64_t opset = 17) {
  ir::model m = ir::make_model("prune_test", opset);
  ir::graph_builder b(m.graph(), 7);
  ir::value* x = b.input("x", ir::data_type::float32, std::move(input));
  b.output(body(b, x));
  pass_context ctx(m);
  infer_shapes_pass{}.run(m.graph(), ctx);
  return m;
}

/// x[16, 6] -> MatMul W1[6, 10] + b1 -> Relu (h) -> MatMul W2[10, 3] + b2 -> y: the 10 hidden
/// channels are the one prunable group, W2 their reader; y's channels are pinned.
inline ir::model two_layer_model() {
  return build_model({16, 6}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* h = b.relu(b.add(b.matmul(x, b.random_constant("w1", {6, 10}, 0.5f)), b.random_constant("b1", {10}, 0.3f)));
    return b.add(b.matmul(h, b.random_constant("w2", {10, 3}, 0.5f)), b.random_constant("b2", {3}, 0.1f));
  });
}

inline ir::model copy_of(const ir::model& m) { return ir::parse_model(ir::serialize_model(m)); }

inline prune::channel_analysis analyze_without_defaults(const ir::model& m) {
  prune::channel_analysis_options o;
  o.ignore_defaults = false;
  return prune::analyze_channels(m, o);
}

/// Zeroes, in `m`, the weights through which layers read the channels `plan` removes.
inline void zero_readers(ir::model& m, const prune::channel_analysis& a, const prune::pruning_plan& plan) {
  std::vector<bool> removed(a.group_of_channel.size(), false);
  for (const auto& s : plan.groups) {
    for (std::size_t u : s.removed_units) {
      for (prune::channel_id id : a.groups[s.group].units[u].channels) removed[id] = true;
    }
  }
  for (const prune::cut_site& s : a.sites) {
    ir::node& n = *s.node;
    const bool gemm_b = n.is("Gemm") && s.input_index == 1 && s.axis == (n.attr_int("transB", 0) ? 1 : 0);
    const bool reads = (n.is("Conv") && s.input_index == 1 && s.axis == 1) || gemm_b ||
                       (n.is("MatMul") && s.input_index == 1 && s.axis == 0) ||
                       (n.is("ConvTranspose") && s.input_index == 1 && s.axis == 0);
    if (!reads) continue;
    ir::value* w = n.input(1);
    const ir::tensor* t = ir::constant_tensor(w, m.ir_version);
    REQUIRE(t != nullptr);
    std::vector<double> values = *ir::constant_floats(w, m.ir_version);
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t i = 0; i < s.axis; ++i) outer *= t->dims[i];
    for (std::size_t i = static_cast<std::size_t>(s.axis) + 1; i < t->dims.size(); ++i) inner *= t->dims[i];
    const std::int64_t count = t->dims[s.axis];
    const std::int64_t rows_per_group = s.kind == prune::cut_kind::grouped_input_axis ? t->dims[0] / s.groups : 0;
    for (std::int64_t o = 0; o < outer; ++o) {
      for (std::int64_t c = 0; c < count; ++c) {
        // A grouped Conv's axis 1 holds the inputs of the row's own group.
        const std::int64_t position = rows_per_group ? (o / rows_per_group) * count + c : c;
        if (!removed[s.layout[position]]) continue;
        std::fill_n(values.begin() + (o * count + c) * inner, inner, 0.0);
      }
    }
    // A weight other layers share is zeroed for this reader only, as pruning cuts it.
    ir::replace_constant_input(*n.owner(), &n, 1, ir::floats_as(*t, t->dims, values));
  }
}

struct pruned_pair {
  ir::model pruned;
  prune::channel_analysis analysis;
  prune::pruning_plan plan;
  prune::apply_result applied;
};

/// Prunes a copy of `m` (L2 scores, no rounding, the given ratio) and checks it against the
/// zeroed-reader model: structure valid, same outputs within float rounding.
inline pruned_pair prune_and_check_equivalent(const ir::model& m, double ratio = 0.5) {
  pruned_pair r{copy_of(m), {}, {}, {}};
  r.analysis = analyze_without_defaults(r.pruned);
  prune::importance_options io;
  io.criterion = prune::importance_criterion::l2;
  prune::selection_options so;
  so.ratio = ratio;
  so.round_to = 1;
  r.plan = prune::select_units(r.analysis, prune::unit_importance(r.pruned, r.analysis, io), so);

  ir::model reference = copy_of(m);
  zero_readers(reference, analyze_without_defaults(reference), r.plan);
  r.applied = prune::apply_pruning(r.pruned, r.analysis, r.plan);
  INFO(ir::find_problems(r.pruned.graph()).size() << " structural problem(s)");
  REQUIRE(ir::find_problems(r.pruned.graph()).empty());

  runtime::session want_session(reference, {.threads = 1});
  runtime::session got_session(r.pruned, {.threads = 1});
  const runtime::tensor_map feeds = runtime::random_inputs(want_session, 3);
  const runtime::tensor_map want = want_session.run(feeds);
  const runtime::tensor_map got = got_session.run(feeds);
  for (const auto& [name, t] : want) {
    INFO("output " << name);
    CHECK(compare_tensors(got.at(name), t, 1e-4, 1e-5).empty());
  }
  return r;
}

/// The prunable groups, sorted by how many units they hold.
inline std::vector<const prune::channel_group*> prunable_groups(const prune::channel_analysis& a) {
  std::vector<const prune::channel_group*> out;
  for (const auto& g : a.groups) {
    if (!g.sources.empty() && g.prunable()) out.push_back(&g);
  }
  return out;
}

}  // namespace inferopt::test
