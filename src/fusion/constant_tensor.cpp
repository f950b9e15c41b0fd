#include "inferopt/fusion/detail/constant_tensor.hpp"

#include <cstring>

#include "inferopt/runtime/detail/float16.hpp"

namespace inferopt::detail {

bool is_floating(ir::data_type t) noexcept {
  return t == ir::data_type::float32 || t == ir::data_type::float64 || t == ir::data_type::float16 ||
         t == ir::data_type::bfloat16;
}

const ir::tensor* constant_tensor(const pass_context& ctx, const ir::value* v) noexcept {
  if (!v || !ctx.is_constant(*v)) return nullptr;
  const ir::tensor* t = v->initializer();
  return t && t->has_data() ? t : nullptr;
}

namespace {

// Reads the raw bytes rather than `tensor::values`, which checks the dtype against `Stored`:
// float16 and bfloat16 are stored as uint16_t bit patterns.
template <class Stored, class Convert>
std::vector<double> widen(const ir::tensor& t, Convert convert) {
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

std::optional<std::vector<double>> constant_floats(const pass_context& ctx, const ir::value* v) {
  const ir::tensor* t = constant_tensor(ctx, v);
  if (!t) return std::nullopt;
  const auto same = [](auto x) { return x; };
  switch (t->dtype) {
    case ir::data_type::float32: return widen<float>(*t, same);
    case ir::data_type::float64: return widen<double>(*t, same);
    case ir::data_type::float16: return widen<std::uint16_t>(*t, runtime::detail::half_to_float);
    case ir::data_type::bfloat16: return widen<std::uint16_t>(*t, runtime::detail::bfloat16_to_float);
    default: return std::nullopt;
  }
}

std::optional<std::vector<std::int64_t>> constant_ints(const pass_context& ctx, const ir::value* v) {
  const ir::tensor* t = constant_tensor(ctx, v);
  if (!t) return std::nullopt;
  if (t->dtype == ir::data_type::int64) return t->values<std::int64_t>();
  if (t->dtype == ir::data_type::int32) {
    const std::vector<std::int32_t> narrow = t->values<std::int32_t>();
    return std::vector<std::int64_t>(narrow.begin(), narrow.end());
  }
  return std::nullopt;
}

namespace {

template <class Stored, class Convert>
ir::tensor narrow(std::vector<std::int64_t> dims, std::span<const double> values, Convert convert) {
  std::vector<Stored> out;
  out.reserve(values.size());
  for (double x : values) out.push_back(convert(x));
  return ir::tensor::from_values<Stored>("", std::move(dims), out);
}

}  // namespace

ir::tensor floats_as(const ir::tensor& like, std::vector<std::int64_t> dims, std::span<const double> values) {
  ir::tensor t;
  switch (like.dtype) {
    case ir::data_type::float32:
      t = narrow<float>(std::move(dims), values, [](double x) { return static_cast<float>(x); });
      break;
    case ir::data_type::float64: t = narrow<double>(std::move(dims), values, [](double x) { return x; }); break;
    case ir::data_type::float16:
      t = narrow<std::uint16_t>(std::move(dims), values,
                                [](double x) { return runtime::detail::float_to_half(static_cast<float>(x)); });
      t.dtype = ir::data_type::float16;
      break;
    case ir::data_type::bfloat16:
      t = narrow<std::uint16_t>(std::move(dims), values,
                                [](double x) { return runtime::detail::float_to_bfloat16(static_cast<float>(x)); });
      t.dtype = ir::data_type::bfloat16;
      break;
    default:
      throw error(errc::invalid_argument,
                  "tensor '" + like.name + "': cannot hold folded values of type " + std::string(ir::to_string(like.dtype)));
  }
  return t;
}

ir::value* set_constant_input(ir::graph& g, ir::node* n, std::size_t index, ir::tensor t, std::string_view base) {
  std::string name = g.unique_name(base);
  t.name = name;
  ir::value* v = g.add_initializer(std::move(name), std::move(t));
  g.set_input(n, index, v);
  return v;
}

ir::node* sole_user(const ir::value* v) noexcept {
  if (!v || v->is_graph_output() || v->uses().size() != 1) return nullptr;
  return v->uses().front().user;
}

}  // namespace inferopt::detail
