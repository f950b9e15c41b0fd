#pragma once
// The oracle of the sparsify-blocks tests: the original model with each weight the pass
// rewrites replaced by the same weight pruned the same way, kept dense and run by the
// executor's own MatMul/Gemm. The rewritten model must agree with it.

#include <cstring>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/sparse/block_prune.hpp"
#include "inferopt/sparse/sparsify_blocks.hpp"

namespace inferopt::test {

/// W pruned as the pass prunes it, in the orientation the model stores it (B of MatMul or
/// Gemm), dense.
inline ir::tensor pruned_dense(const ir::tensor& b, bool transposed, const sparse::sparsify_options& o) {
  std::vector<float> values(b.byte_size() / sizeof(float));
  std::memcpy(values.data(), b.bytes->data(), values.size() * sizeof(float));
  sparse::prune_options p;
  p.block = transposed ? sparse::block_shape{o.block.cols, o.block.rows} : o.block;
  p.norm = o.norm;
  p.sparsity = o.sparsity;
  const std::vector<float> dense = sparse::prune_blocks<float>(values, b.dims[0], b.dims[1], p).to_dense();
  return ir::tensor::from_values<float>("", b.dims, dense);
}

/// A copy of `original` in which every MatMul/Gemm that `plan_sparsify` says the pass
/// rewrites reads its weight pruned (and still dense) instead.
inline ir::model pruned_reference(const ir::model& original, const sparse::sparsify_options& o) {
  ir::model ref = ir::parse_model(ir::serialize_model(original));
  const std::vector<sparse::sparsify_candidate> plan =
      sparse::plan_sparsify(ref, o, sparse::dense_baseline::avx2);
  ir::graph& g = ref.graph();
  std::size_t next = 0;  // the plan lists MatMul and Gemm nodes in graph order
  for (ir::node* n : g.node_list()) {
    if (!n->is("MatMul") && !n->is("Gemm")) continue;
    const sparse::sparsify_candidate& c = plan.at(next++);
    if (!c.declined.empty()) continue;
    ir::tensor t = pruned_dense(*n->input(1)->initializer(), c.transposed, o);
    t.name = g.unique_name(n->input(1)->name() + "_pruned");
    g.set_input(n, 1, g.add_initializer(t.name, t));
  }
  return ref;
}

}  // namespace inferopt::test
