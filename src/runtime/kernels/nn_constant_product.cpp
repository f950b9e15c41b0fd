// oneDNN's matmul primitive on prepacked weights (nn_constant_product.hpp).
#include "nn_constant_product.hpp"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "inferopt/ir/graph.hpp"
#include "nn_common.hpp"
#include "nn_gemm.hpp"

#ifdef INFEROPT_WITH_ONEDNN
#include "omp_team.hpp"
#include "onednn_common.hpp"
#endif

namespace inferopt::runtime::nn {

#ifdef INFEROPT_WITH_ONEDNN
namespace {

constexpr std::size_t max_row_counts = 4;

}  // namespace

struct constant_weight_product::cache {
  struct entry {
    std::int64_t rows;
    bool bias;
    linear_activation act;
    dnnl::matmul product;
    std::shared_ptr<dnnl::memory> packed;  // shared by entries whose layout is the same
    // Built once, their data handles set per call: memories and a map made per call cost
    // allocations worth a tenth of a small transformer's run.
    dnnl::memory src, dst, bias_values;
    std::unordered_map<int, dnnl::memory> args;
  };
  std::vector<entry> entries;
  dnnl::stream stream{onednn::engine()};

  /// The entry for (rows, bias, activation), made on first need (a kernel uses one bias mode
  /// and activation, so one primitive is compiled per row count); null when oneDNN declines
  /// or the cache is full.
  entry* find_or_make(const float* w, bool transposed, std::int64_t rows, bool with_bias, linear_activation act,
                            std::int64_t k, std::int64_t n) {
    for (entry& e : entries) {
      if (e.rows == rows && e.bias == with_bias && e.act == act) return &e;
    }
    if (entries.size() >= max_row_counts) return nullptr;
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc a({rows, k}, dt::f32, tag::ab), b({k, n}, dt::f32, tag::any),
        bias({1, n}, dt::f32, tag::ab), c({rows, n}, dt::f32, tag::ab);
    dnnl::engine& engine = onednn::engine();
    dnnl::primitive_attr attr;
    if (act != linear_activation::none) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, act == linear_activation::gelu_erf ? dnnl::algorithm::eltwise_gelu_erf : dnnl::algorithm::eltwise_gelu_tanh,
                         0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(with_bias ? dnnl::matmul::desc(a, b, bias, c) : dnnl::matmul::desc(a, b, c), attr,
                                          engine);
    std::shared_ptr<dnnl::memory> packed;
    for (const entry& e : entries) {
      if (e.packed->get_desc() == pd.weights_desc()) packed = e.packed;
    }
    if (!packed) {
      // From the initializer the first time; later from a copy, since the session may have
      // released the initializer by then (holds_copy).
      dnnl::memory source = entries.empty()
                                ? dnnl::memory({{k, n}, dt::f32, transposed ? tag::ba : tag::ab}, engine, const_cast<float*>(w))
                                : *entries.front().packed;
      packed = std::make_shared<dnnl::memory>(pd.weights_desc(), engine);
      dnnl::reorder(source, *packed).execute(stream, source, *packed);
      stream.wait();
    }
    entry made{rows, with_bias, act, dnnl::matmul(pd), std::move(packed), dnnl::memory(a, engine, DNNL_MEMORY_NONE),
               dnnl::memory(c, engine, DNNL_MEMORY_NONE), dnnl::memory(bias, engine, DNNL_MEMORY_NONE), {}};
    made.args = {{DNNL_ARG_SRC, made.src}, {DNNL_ARG_WEIGHTS, *made.packed}, {DNNL_ARG_DST, made.dst}};
    if (with_bias) made.args.emplace(DNNL_ARG_BIAS, made.bias_values);
    entries.push_back(std::move(made));
    return &entries.back();
  }
};

bool constant_weight_product::run(const void* b, const float* a, std::int64_t m, const float* bias, float* c, int threads,
                                  linear_activation act) {
  if (!holds(b) || m <= 0 || !onednn_gemm_backend()) return false;
  try {
    if (!cache_) cache_ = std::make_unique<cache>();
    // oneDNN sizes a primitive's thread partition when it creates it: inside the team.
    const omp_team_for_call team(worthwhile_threads(m * k_ * n_, threads));
    cache::entry* e = cache_->find_or_make(weights_, transposed_, m, bias != nullptr, act, k_, n_);
    if (!e) return false;
    e->src.set_data_handle(const_cast<float*>(a));
    e->dst.set_data_handle(c);
    if (bias) e->bias_values.set_data_handle(const_cast<float*>(bias));
    e->product.execute(cache_->stream, e->args);
    cache_->stream.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;  // oneDNN declined these sizes: nn::gemm computes them
  }
}
bool constant_weight_product::holds_copy() const noexcept { return cache_ && !cache_->entries.empty(); }

std::size_t constant_weight_product::own_bytes() const noexcept {
  std::size_t sum = unpacked_.size() * sizeof(float);
  if (!cache_) return sum;
  std::vector<const dnnl::memory*> counted;  // entries of one layout share their copy
  for (const cache::entry& e : cache_->entries) {
    if (std::find(counted.begin(), counted.end(), e.packed.get()) != counted.end()) continue;
    counted.push_back(e.packed.get());
    sum += e.packed->get_desc().get_size();
  }
  return sum;
}

const float* constant_weight_product::plain() {
  if (unpacked_.empty() && holds_copy()) {
    using tag = dnnl::memory::format_tag;
    unpacked_.resize(static_cast<std::size_t>(k_ * n_));
    dnnl::memory packed = *cache_->entries.front().packed;
    dnnl::memory target({{k_, n_}, dnnl::memory::data_type::f32, transposed_ ? tag::ba : tag::ab}, onednn::engine(),
                        unpacked_.data());
    dnnl::reorder(packed, target).execute(cache_->stream, packed, target);
    cache_->stream.wait();
  }
  return unpacked_.data();
}
#else
struct constant_weight_product::cache {};
bool constant_weight_product::run(const void*, const float*, std::int64_t, const float*, float*, int, linear_activation) {
  return false;
}
bool constant_weight_product::holds_copy() const noexcept { return false; }
std::size_t constant_weight_product::own_bytes() const noexcept { return 0; }
const float* constant_weight_product::plain() { return nullptr; }
#endif

const tensor& constant_weight_product::operand(const kernel_context& ctx, std::size_t index) const {
  return ctx.has_input(index) || weights_ == nullptr ? ctx.input(index) : shape_only_;
}

constant_weight_product::constant_weight_product() = default;
constant_weight_product::~constant_weight_product() = default;

void constant_weight_product::set_weights(const float* w, std::int64_t k, std::int64_t n, bool transposed) {
  weights_ = w;
  k_ = k;
  n_ = n;
  transposed_ = transposed;
  cache_.reset();
  unpacked_.clear();
  shape_only_ = tensor::view(data_type::float32, transposed ? shape_t{n, k} : shape_t{k, n}, nullptr, nullptr);
}

void use_constant_weights(constant_weight_product& product, const ir::node& node, std::size_t input, bool transposed) {
  const ir::value* v = input < node.inputs().size() ? node.input(input) : nullptr;
  const ir::tensor* w = v ? v->initializer() : nullptr;
  if (!w || w->dtype != data_type::float32 || !w->has_data() || w->dims.size() != 2) return;
  const std::int64_t rows = w->dims[0], cols = w->dims[1];
  if (rows <= 0 || cols <= 0 || w->byte_size() != static_cast<std::size_t>(rows * cols) * sizeof(float)) return;
  const auto* data = reinterpret_cast<const float*>(w->bytes->data());
  if (transposed) product.set_weights(data, cols, rows, true);
  else product.set_weights(data, rows, cols, false);
}

}  // namespace inferopt::runtime::nn
