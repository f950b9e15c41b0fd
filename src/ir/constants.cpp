#include "inferopt/ir/constants.hpp"

#include <cstring>
#include <string>

#include "inferopt/core/error.hpp"
#include "inferopt/core/float16.hpp"

namespace inferopt::ir {

bool is_floating(data_type t) noexcept {
  return t == data_type::float32 || t == data_type::float64 || t == data_type::float16 ||
         t == data_type::bfloat16;
}

const tensor* constant_tensor(const value* v, std::int64_t ir_version) noexcept {
  if (!v || !is_constant(*v, ir_version)) return nullptr;
  const tensor* t = v->initializer();
  return t && t->has_data() ? t : nullptr;
}

namespace {

// Reads the raw bytes rather than `tensor::values`, which checks the dtype against `Stored`:
// float16 and bfloat16 are stored as uint16_t bit patterns.
template <class Stored, class Convert>
std::vector<double> widen(const tensor& t, Convert convert) {
  const std::size_t count = t.byte_size() / sizeof(Stored);
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    Stored x;
    std::memcpy(&x, t.bytes->data() + i * sizeof(Stored), sizeof(Stored));
    out[i] = static_cast<double>(convert(x));
  }
  return out;
}

}  // namespace

std::optional<std::vector<double>> floats_of(const tensor& t) {
  if (!t.has_data()) return std::nullopt;
  const auto same = [](auto x) { return x; };
  switch (t.dtype) {
    case data_type::float32: return widen<float>(t, same);
    case data_type::float64: return widen<double>(t, same);
    case data_type::float16: return widen<std::uint16_t>(t, inferopt::half_to_float);
    case data_type::bfloat16: return widen<std::uint16_t>(t, inferopt::bfloat16_to_float);
    default: return std::nullopt;
  }
}

std::optional<std::vector<std::int64_t>> ints_of(const tensor& t) {
  if (!t.has_data()) return std::nullopt;
  if (t.dtype == data_type::int64) return t.values<std::int64_t>();
  if (t.dtype == data_type::int32) {
    const std::vector<std::int32_t> narrow = t.values<std::int32_t>();
    return std::vector<std::int64_t>(narrow.begin(), narrow.end());
  }
  return std::nullopt;
}

std::optional<std::vector<double>> constant_floats(const value* v, std::int64_t ir_version) {
  const tensor* t = constant_tensor(v, ir_version);
  return t ? floats_of(*t) : std::nullopt;
}

std::optional<std::vector<std::int64_t>> constant_ints(const value* v, std::int64_t ir_version) {
  const tensor* t = constant_tensor(v, ir_version);
  return t ? ints_of(*t) : std::nullopt;
}

namespace {

template <class Stored, class Convert>
tensor narrow(std::vector<std::int64_t> dims, std::span<const double> values, Convert convert) {
  std::vector<Stored> out;
  out.reserve(values.size());
  for (double x : values) out.push_back(convert(x));
  return tensor::from_values<Stored>("", std::move(dims), out);
}

}  // namespace

tensor floats_as(const tensor& like, std::vector<std::int64_t> dims, std::span<const double> values) {
  tensor t;
  switch (like.dtype) {
    case data_type::float32:
      t = narrow<float>(std::move(dims), values, [](double x) { return static_cast<float>(x); });
      break;
    case data_type::float64: t = narrow<double>(std::move(dims), values, [](double x) { return x; }); break;
    case data_type::float16:
      t = narrow<std::uint16_t>(std::move(dims), values,
                                [](double x) { return inferopt::float_to_half(static_cast<float>(x)); });
      t.dtype = data_type::float16;
      break;
    case data_type::bfloat16:
      t = narrow<std::uint16_t>(std::move(dims), values,
                                [](double x) { return inferopt::float_to_bfloat16(static_cast<float>(x)); });
      t.dtype = data_type::bfloat16;
      break;
    default:
      throw error(errc::invalid_argument,
                  "tensor '" + like.name + "': cannot hold folded values of type " + std::string(to_string(like.dtype)));
  }
  return t;
}

}  // namespace inferopt::ir
