#pragma once
/// The end-to-end measure both sensitivity sweeps use: the drop of the model's first output's
/// cosine with the original's, averaged over batches (each batch's output flattened).

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::prune {

/// The first output of `m` on each batch, flattened.
inline std::vector<std::vector<float>> first_outputs(const ir::model& m, std::span<const runtime::tensor_map> batches) {
  runtime::session s(m, {.threads = 0});
  const std::string& name = s.outputs().front().name;
  std::vector<std::vector<float>> out;
  for (const runtime::tensor_map& feed : batches) out.push_back(s.run(feed).at(name).to_float());
  return out;
}

inline double output_cosine(const std::vector<float>& x, const std::vector<float>& y) {
  double xy = 0.0, xx = 0.0, yy = 0.0;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    xy += static_cast<double>(x[i]) * y[i];
    xx += static_cast<double>(x[i]) * x[i];
    yy += static_cast<double>(y[i]) * y[i];
  }
  return xx > 0.0 && yy > 0.0 ? xy / std::sqrt(xx * yy) : (xx == yy ? 1.0 : 0.0);
}

/// 1 - the mean over batches of the cosine between `outputs` and `reference`.
inline double mean_cosine_drop(const std::vector<std::vector<float>>& reference, const std::vector<std::vector<float>>& outputs) {
  double drop = 0.0;
  for (std::size_t b = 0; b < outputs.size(); ++b) drop += 1.0 - output_cosine(reference[b], outputs[b]);
  return outputs.empty() ? 0.0 : drop / static_cast<double>(outputs.size());
}

}  // namespace inferopt::prune
