// Reading the constant scales and zero points of quantized ops (int8_nhwc.hpp).
#include <cstring>
#include <string>

#include "inferopt/ir/graph.hpp"
#include "int8_nhwc.hpp"

namespace inferopt::runtime::nn {

namespace {

const ir::tensor* constant_data(const ir::value* v) {
  if (!v || !v->is_constant() || !v->initializer()->has_data()) return nullptr;
  return v->initializer();
}

template <class Stored>
std::vector<std::int32_t> widened(const ir::tensor& t) {
  std::vector<std::int32_t> out(t.byte_size() / sizeof(Stored));
  for (std::size_t i = 0; i < out.size(); ++i) {
    Stored x;
    std::memcpy(&x, t.bytes->data() + i * sizeof(Stored), sizeof(Stored));
    out[i] = x;
  }
  return out;
}

}  // namespace

std::optional<std::vector<float>> constant_scales(const ir::value* v) {
  const ir::tensor* t = constant_data(v);
  if (!t || t->dtype != data_type::float32) return std::nullopt;
  return t->values<float>();
}

std::optional<std::vector<std::int32_t>> constant_zero_points(const ir::value* v) {
  const ir::tensor* t = constant_data(v);
  if (!t) return std::nullopt;
  switch (t->dtype) {
    case data_type::uint8: return widened<std::uint8_t>(*t);
    case data_type::int8: return widened<std::int8_t>(*t);
    case data_type::int32: return widened<std::int32_t>(*t);
    default: return std::nullopt;
  }
}

namespace {

template <class Read>
auto scalar(const kernel_build_info& info, std::size_t index, Read read) {
  const auto values = read(index < info.node.inputs().size() ? info.node.input(index) : nullptr);
  if (!values || values->size() != 1) info.unsupported("input " + std::to_string(index) + " must be one constant value");
  return values->front();
}

}  // namespace

float scalar_scale(const kernel_build_info& info, std::size_t index) { return scalar(info, index, constant_scales); }

std::int32_t scalar_zero_point(const kernel_build_info& info, std::size_t index) {
  return scalar(info, index, constant_zero_points);
}

}  // namespace inferopt::runtime::nn
