#pragma once
// The small CNN the QDQ and quantize_model tests quantize.

#include <cstdint>
#include <memory>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/builtin.hpp"
#include "inferopt/pass/instrumentation.hpp"
#include "inferopt/pass/pass_manager.hpp"
#include "inferopt/pass/pipeline.hpp"

namespace inferopt::test {

/// Conv-BN-ReLU x2, global average pool, flatten, Gemm on 64 3x8x8 images: folded with -O2
/// (BN into Conv), as the CLI does before quantizing.
inline ir::model small_cnn(std::int64_t opset = 17) {
  ir::model m = ir::make_model("small_cnn", opset);
  ir::graph_builder b(m.graph(), 11);
  ir::value* x = b.input("x", ir::data_type::float32, {64, 3, 8, 8});
  ir::value* h = b.relu(b.batch_norm(b.conv(x, 8, {}, "conv1")));
  h = b.relu(b.batch_norm(b.conv(h, 16, {}, "conv2")));
  h = b.flatten(b.global_average_pool(h));
  b.output(b.gemm(h, 10, "fc"));
  pass_manager manager;
  manager.add_instrumentation(std::make_unique<verify_each>());
  pipeline o2 = level_pipeline(2, builtin_registry());
  (void)manager.run(o2, m);
  return m;
}

}  // namespace inferopt::test
