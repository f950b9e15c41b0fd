#pragma once
// Runs calibration batches through a model and hands over chosen tensors as they are made.

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/model.hpp"
#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/prune/least_squares_refit.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::prune {

/// Calls `visit(reader index, tensor)` for each reader input as the batches run through `m`.
template <class Visit>
inline void observe_inputs(const ir::model& m, const std::vector<const ir::value*>& inputs, std::span<const runtime::tensor_map> batches,
                    Visit visit) {
  if (batches.empty()) throw error(errc::invalid_argument, "calibrated pruning needs calibration batches");
  std::multimap<std::string, std::size_t, std::less<>> wanted;
  for (std::size_t i = 0; i < inputs.size(); ++i) wanted.emplace(inputs[i]->name(), i);
  const auto dispatch = [&](std::string_view name, const runtime::tensor& t) {
    const auto [from, to] = wanted.equal_range(name);
    for (auto it = from; it != to; ++it) {
      if (t.dtype() != ir::data_type::float32) throw error(errc::invalid_argument, "calibrated pruning reads float32 activations, not '" + it->first + "'");
      visit(it->second, t);
    }
  };
  runtime::session_options options;
  options.on_value = dispatch;
  runtime::session s(m, options);
  for (const runtime::tensor_map& feed : batches) {
    for (const auto& [name, t] : feed) dispatch(name, t);  // a reader may read a graph input
    (void)s.run(feed);
  }
}

/// The moments [X 1]^T [X 1] of each of `inputs`, features on its last axis (`features[i]` of them).
inline std::vector<input_gram> input_grams(const ir::model& m, const std::vector<const ir::value*>& inputs,
                                           const std::vector<std::int64_t>& features, std::span<const runtime::tensor_map> batches) {
  std::vector<input_gram> grams;
  for (std::int64_t f : features) grams.emplace_back(f);
  observe_inputs(m, inputs, batches, [&](std::size_t i, const runtime::tensor& t) {
    if (t.rank() == 0 || t.dim(t.rank() - 1) != grams[i].features()) {
      throw error(errc::invalid_argument, "calibration activation '" + inputs[i]->name() + "' does not have the analysed shape");
    }
    grams[i].add(t.values<float>());
  });
  return grams;
}

/// The moments of the input of each of `readers` (a MatMul's or Gemm's input 0, as many
/// features as the reader's cut site has positions).
inline std::vector<input_gram> reader_input_grams(const ir::model& m, const std::vector<const cut_site*>& readers,
                                                  std::span<const runtime::tensor_map> batches) {
  std::vector<const ir::value*> inputs;
  std::vector<std::int64_t> features;
  for (const cut_site* s : readers) {
    inputs.push_back(s->node->input(0));
    features.push_back(static_cast<std::int64_t>(s->layout.size()));
  }
  return input_grams(m, inputs, features, batches);
}

/// Splits items of `bytes[i]` into consecutive passes of at most `budget` bytes (one item at
/// least each) and calls `run(first, last)` for each: moments held at once stay bounded.
template <class Run>
inline void in_passes(const std::vector<std::int64_t>& bytes, std::int64_t budget, Run run) {
  std::size_t first = 0;
  std::int64_t held = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i > first && held + bytes[i] > budget) {
      run(first, i);
      first = i;
      held = 0;
    }
    held += bytes[i];
  }
  if (first < bytes.size()) run(first, bytes.size());
}

}  // namespace inferopt::prune
