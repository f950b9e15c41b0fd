#include "inferopt/runtime/inputs.hpp"

#include <algorithm>
#include <filesystem>
#include <random>

#include "inferopt/core/float16.hpp"

namespace inferopt::runtime {
namespace {

shape_t concrete_shape(const io_info& in) {
  shape_t shape;
  for (const ir::dim& d : in.shape) shape.push_back(d.is_static() ? d.value() : 1);
  return shape;
}

template <class T, class Gen>
void fill(tensor& t, Gen&& gen) {
  T* p = t.mutable_data<T>();
  for (std::int64_t k = 0; k < t.element_count(); ++k) p[k] = gen();
}

}  // namespace

tensor_map random_inputs(const session& s, std::uint64_t seed) { return random_inputs(s.inputs(), seed); }

tensor_map random_inputs(const std::vector<io_info>& inputs, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 7);
  tensor_map feeds;
  for (const io_info& in : inputs) {
    if (in.optional) continue;
    if (!in.has_shape) throw error(errc::invalid_argument, "input '" + in.name + "' has no shape; give its data instead");
    tensor t(in.type, concrete_shape(in));
    switch (in.type) {
      case data_type::float32: fill<float>(t, [&] { return static_cast<float>(real(rng)); }); break;
      case data_type::float64: fill<double>(t, [&] { return real(rng); }); break;
      case data_type::float16:
        fill<std::uint16_t>(t, [&] { return inferopt::float_to_half(static_cast<float>(real(rng))); });
        break;
      case data_type::int64: fill<std::int64_t>(t, [&] { return small(rng); }); break;
      case data_type::int32: fill<std::int32_t>(t, [&] { return small(rng); }); break;
      case data_type::int8: fill<std::int8_t>(t, [&] { return static_cast<std::int8_t>(small(rng)); }); break;
      case data_type::uint8: fill<std::uint8_t>(t, [&] { return static_cast<std::uint8_t>(small(rng)); }); break;
      case data_type::boolean: fill<std::uint8_t>(t, [&] { return static_cast<std::uint8_t>(small(rng) & 1); }); break;
      default:
        throw error(errc::unsupported, "input '" + in.name + "': cannot make random " +
                                           std::string(ir::to_string(in.type)) + " data");
    }
    feeds[in.name] = std::move(t);
  }
  return feeds;
}

tensor_map inputs_from_dir(const session& s, const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw error(errc::io, dir + ": not a folder");
  std::vector<std::string> required;
  for (const io_info& in : s.inputs()) {
    if (!in.optional) required.push_back(in.name);
  }
  tensor_map feeds;
  for (std::size_t k = 0;; ++k) {
    const fs::path file = fs::path(dir) / ("input_" + std::to_string(k) + ".pb");
    if (!fs::exists(file)) break;
    std::string name;
    tensor t = read_tensor_file(file.string(), &name);
    const bool named = std::find(required.begin(), required.end(), name) != required.end();
    if (!named) {
      if (k >= required.size()) throw error(errc::invalid_argument, file.string() + ": the model has no input for it");
      name = required[k];
    }
    feeds[name] = std::move(t);
  }
  return feeds;
}

}  // namespace inferopt::runtime
