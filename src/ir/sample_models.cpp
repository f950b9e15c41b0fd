#include "inferopt/ir/sample_models.hpp"

#include "inferopt/ir/graph_builder.hpp"

namespace inferopt::ir {
namespace {

value* conv_bn_relu(graph_builder& b, value* x, std::int64_t channels, conv_options o, bool relu = true) {
  o.bias = false;
  value* y = b.batch_norm(b.conv(x, channels, o));
  return relu ? b.relu(y) : y;
}

value* bottleneck(graph_builder& b, value* x, std::int64_t mid, std::int64_t out, std::int64_t stride,
                  bool project) {
  value* y = conv_bn_relu(b, x, mid, {.kernel = 1});
  y = conv_bn_relu(b, y, mid, {.kernel = 3, .stride = stride});
  y = conv_bn_relu(b, y, out, {.kernel = 1}, false);
  value* shortcut = project ? conv_bn_relu(b, x, out, {.kernel = 1, .stride = stride}, false) : x;
  return b.relu(b.add(y, shortcut));
}

}  // namespace

model make_default_model(std::uint32_t seed) {
  model m = make_model("inferopt_default_cnn");
  m.doc_string = "inferopt's generated default model: a small residual CNN";
  graph_builder b(m.graph(), seed);
  value* x = b.input("image", data_type::float32, {1, 3, 64, 64});
  value* y = conv_bn_relu(b, x, 16, {.kernel = 3, .stride = 2});
  y = b.identity(y);  // exporters leave these behind
  value* block_in = y;
  y = conv_bn_relu(b, y, 16, {.kernel = 3});
  y = conv_bn_relu(b, y, 16, {.kernel = 3}, false);
  y = b.relu(b.add(y, block_in));
  y = b.dropout(y, 0.1f);
  value* down = conv_bn_relu(b, y, 32, {.kernel = 1, .stride = 2}, false);
  y = conv_bn_relu(b, y, 32, {.kernel = 3, .stride = 2});
  y = conv_bn_relu(b, y, 32, {.kernel = 3}, false);
  y = b.relu(b.add(y, down));
  b.sigmoid(b.conv(y, 8, {.kernel = 1}));  // a dead branch: nothing reads it
  y = b.clip(conv_bn_relu(b, y, 64, {.kernel = 3, .stride = 2}, false), 0.0f, 6.0f);
  y = b.flatten(b.global_average_pool(y));
  y = b.identity(b.dense(y, 10));
  b.random_constant("unused_weights", {64, 64}, 0.1f);  // an initializer nothing reads
  b.output(y);
  m.graph().rename(y, "logits");
  return m;
}

model make_resnet50(std::uint32_t seed, std::int64_t width_divisor) {
  model m = make_model("resnet50");
  graph_builder b(m.graph(), seed);
  auto w = [&](std::int64_t c) { return std::max<std::int64_t>(1, c / width_divisor); };
  value* x = b.input("data", data_type::float32, {1, 3, 224, 224});
  value* y = conv_bn_relu(b, x, w(64), {.kernel = 7, .stride = 2, .pad = 3});
  y = b.max_pool(y, {.kernel = 3, .stride = 2, .pad = 1});
  const std::int64_t blocks[] = {3, 4, 6, 3};
  std::int64_t mid = 64;
  for (int stage = 0; stage < 4; ++stage, mid *= 2) {
    for (std::int64_t k = 0; k < blocks[stage]; ++k) {
      const std::int64_t stride = (k == 0 && stage > 0) ? 2 : 1;
      y = bottleneck(b, y, w(mid), w(mid * 4), stride, k == 0);
    }
  }
  y = b.flatten(b.global_average_pool(y));
  y = b.gemm(y, 1000);
  b.output(y);
  m.graph().rename(y, "prob");
  return m;
}

}  // namespace inferopt::ir
