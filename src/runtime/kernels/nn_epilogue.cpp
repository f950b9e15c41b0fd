// Activations of the conv/GEMM epilogue (nn_epilogue.hpp) and the attribute forms of
// com.microsoft FusedConv and FusedGemm that choose them (docs/FUSED_OPS.md).

#include "nn_epilogue.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "nn_common.hpp"

namespace inferopt::runtime::nn {

namespace {

template <class T>
void activate_span(const activation_spec& a, T* x, std::int64_t n) noexcept {
  const T alpha = static_cast<T>(a.alpha), beta = static_cast<T>(a.beta);
  switch (a.kind) {
    case activation::identity: return;
    case activation::relu:
      for (std::int64_t i = 0; i < n; ++i) x[i] = x[i] > T(0) ? x[i] : T(0);
      return;
    case activation::leaky_relu:
      for (std::int64_t i = 0; i < n; ++i) x[i] = x[i] >= T(0) ? x[i] : alpha * x[i];
      return;
    case activation::tanh:
      for (std::int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
      return;
    case activation::sigmoid:
      // 1 / (1 + e^-x) overflows harmlessly to 0 for very negative x.
      for (std::int64_t i = 0; i < n; ++i) x[i] = T(1) / (T(1) + std::exp(-x[i]));
      return;
    case activation::clip:
      for (std::int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], alpha), beta);
      return;
    case activation::hard_sigmoid:
      for (std::int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(alpha * x[i] + beta, T(0)), T(1));
      return;
    case activation::hard_swish:
      for (std::int64_t i = 0; i < n; ++i) x[i] = x[i] * std::min(std::max(x[i] / T(6) + T(0.5), T(0)), T(1));
      return;
  }
}

/// The activation named `name`, or nullopt when ORT's fused kernels do not know it.
std::optional<activation> activation_named(const std::string& name) {
  if (name == "Relu") return activation::relu;
  if (name == "LeakyRelu") return activation::leaky_relu;
  if (name == "Tanh") return activation::tanh;
  if (name == "Sigmoid") return activation::sigmoid;
  if (name == "Clip") return activation::clip;
  if (name == "HardSigmoid") return activation::hard_sigmoid;
  if (name == "HardSwish") return activation::hard_swish;
  return std::nullopt;
}

}  // namespace

void activate(const activation_spec& a, float* x, std::int64_t n) noexcept { activate_span(a, x, n); }
void activate(const activation_spec& a, double* x, std::int64_t n) noexcept { activate_span(a, x, n); }

activation_spec fused_conv_activation(const kernel_build_info& info) {
  const ir::node& n = info.node;
  activation_spec spec;
  if (!n.find_attribute("activation")) return spec;  // ORT runs FusedConv without one as Conv
  const std::string name = n.attr_string("activation", "");
  const std::optional<activation> kind = activation_named(name);
  if (!kind) info.fail("activation '" + name + "' is not one FusedConv accepts");
  spec.kind = *kind;
  const ir::attribute* params = n.find_attribute("activation_params");
  const std::size_t count = params ? params->floats.size() : 0;
  // ORT requires exactly the parameters an activation has and ignores extra ones on the others.
  const std::size_t wanted = spec.kind == activation::leaky_relu ? 1
                             : spec.kind == activation::clip || spec.kind == activation::hard_sigmoid ? 2
                                                                                                      : 0;
  if (wanted > 0 && count != wanted) {
    info.fail("activation " + name + " takes " + std::to_string(wanted) + " activation_params, found " +
              std::to_string(count));
  }
  if (wanted >= 1) spec.alpha = params->floats[0];
  if (wanted == 2) spec.beta = params->floats[1];
  return spec;
}

activation_spec fused_gemm_activation(const kernel_build_info& info) {
  const ir::node& n = info.node;
  const std::string name = n.attr_string("activation", "");
  const std::optional<activation> kind = activation_named(name);
  // FusedGemm has no identity form, and ORT's Gemm fusion never emits Clip or HardSwish.
  if (!kind || *kind == activation::clip || *kind == activation::hard_swish) {
    info.fail("activation '" + name + "' is not one FusedGemm accepts");
  }
  activation_spec spec;
  spec.kind = *kind;
  auto required = [&](const char* attr) {
    if (!n.find_attribute(attr)) info.fail("activation " + name + " needs attribute " + attr);
    return n.attr_float(attr, 0.0f);
  };
  if (spec.kind == activation::leaky_relu || spec.kind == activation::hard_sigmoid) spec.alpha = required("activation_alpha");
  if (spec.kind == activation::hard_sigmoid) spec.beta = required("activation_beta");
  return spec;
}

}  // namespace inferopt::runtime::nn
