// Between Python and the library (conversions.hpp).

#include "conversions.hpp"

#include <cstdint>
#include <memory>

#include "inferopt/core/error.hpp"

namespace inferopt::python {
namespace {

using runtime::data_type;

/// The element types NumPy and the executor share, with NumPy's dtypes, made once: Session.run
/// looks every input and output up, and building a dtype from its name costs microseconds.
struct dtype_pair {
  data_type type;
  py::dtype dtype;
  int number;  // NumPy's type number: what a lookup compares
};

const std::vector<dtype_pair>& dtype_pairs() {
  // Never destroyed: the dtypes must not be released after the interpreter has finalized.
  static const std::vector<dtype_pair>& pairs = *new std::vector<dtype_pair>([] {
    const auto pair = [](data_type type, py::dtype dtype) { return dtype_pair{type, dtype, dtype.num()}; };
    return std::vector<dtype_pair>{
        pair(data_type::float32, py::dtype::of<float>()),          pair(data_type::float64, py::dtype::of<double>()),
        pair(data_type::float16, py::dtype("float16")),            pair(data_type::int8, py::dtype::of<std::int8_t>()),
        pair(data_type::uint8, py::dtype::of<std::uint8_t>()),     pair(data_type::int16, py::dtype::of<std::int16_t>()),
        pair(data_type::uint16, py::dtype::of<std::uint16_t>()),   pair(data_type::int32, py::dtype::of<std::int32_t>()),
        pair(data_type::uint32, py::dtype::of<std::uint32_t>()),   pair(data_type::int64, py::dtype::of<std::int64_t>()),
        pair(data_type::uint64, py::dtype::of<std::uint64_t>()),   pair(data_type::boolean, py::dtype::of<bool>()),
    };
  }());
  return pairs;
}

data_type type_of(const std::string& name, const py::dtype& dtype) {
  const int number = dtype.num();
  for (const dtype_pair& p : dtype_pairs()) {
    if (p.number == number) return p.type;
  }
  // int64 is `long` or `long long` to NumPy, both 8 bytes: equal dtypes, different numbers.
  for (const dtype_pair& p : dtype_pairs()) {
    if (dtype.equal(p.dtype)) return p.type;
  }
  throw error(errc::invalid_argument,
              "input '" + name + "': NumPy dtype " + dtype.attr("name").cast<std::string>() + " has no ONNX element type here");
}

runtime::shape_t shape_of(const py::array& a) {
  return runtime::shape_t(a.shape(), a.shape() + a.ndim());
}

}  // namespace

py::dtype dtype_of(data_type type) {
  for (const dtype_pair& p : dtype_pairs()) {
    if (p.type == type) return p.dtype;
  }
  throw error(errc::unsupported, "element type " + std::string(ir::to_string(type)) + " has no NumPy dtype");
}

runtime::tensor tensor_of(const std::string& name, const py::handle& value, std::vector<py::array>& keep) {
  py::array a = py::array::ensure(value);
  if (!a) throw error(errc::invalid_argument, "input '" + name + "' is not an array or anything NumPy can make one of");
  const data_type type = type_of(name, a.dtype());
  const auto address = reinterpret_cast<std::uintptr_t>(a.data());
  const bool in_place = (a.flags() & py::array::c_style) && address % static_cast<std::uintptr_t>(a.itemsize()) == 0;
  // NumPy's NPY_ARRAY_ALIGNED, which pybind11 names no constant for: the copy is aligned too.
  constexpr int numpy_aligned = 0x0100;
  if (!in_place) a = py::array::ensure(a, py::array::c_style | py::array::forcecast | numpy_aligned);
  keep.push_back(a);
  // No holder: `keep` (or the caller's own reference) keeps the memory for the call.
  return runtime::tensor::view(type, shape_of(a), a.data(), std::shared_ptr<const void>(a.data(), [](const void*) {}));
}

py::array array_of(runtime::tensor t) {
  const py::dtype dtype = dtype_of(t.dtype());
  const std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.owns_storage_alone()) {
    auto* owned = new runtime::tensor(std::move(t));
    py::capsule release(owned, [](void* p) { delete static_cast<runtime::tensor*>(p); });
    return py::array(dtype, shape, owned->raw(), release);
  }
  py::array copy(dtype, shape);
  if (t.byte_size() > 0) std::memcpy(copy.mutable_data(), t.raw(), t.byte_size());
  return copy;
}

runtime::tensor_map feeds_of(const py::handle& mapping, std::vector<py::array>& keep) {
  if (!py::isinstance<py::dict>(mapping)) throw error(errc::invalid_argument, "feeds must be a dict of input name to array");
  runtime::tensor_map feeds;
  for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(mapping)) {
    if (!py::isinstance<py::str>(key)) throw error(errc::invalid_argument, "feed names must be strings");
    const std::string name = key.cast<std::string>();
    feeds.insert_or_assign(name, tensor_of(name, value, keep));
  }
  return feeds;
}

std::vector<runtime::tensor_map> batches_of(const py::handle& batches, std::vector<py::array>& keep) {
  std::vector<runtime::tensor_map> out;
  if (batches.is_none()) return out;
  if (py::isinstance<py::dict>(batches) || !py::isinstance<py::iterable>(batches)) {
    throw error(errc::invalid_argument, "calibration batches must be a list of dicts of input name to array");
  }
  for (const py::handle& batch : batches) out.push_back(feeds_of(batch, keep));
  return out;
}

py::dict dict_of(runtime::tensor_map tensors) {
  py::dict out;
  for (auto& [name, t] : tensors) out[py::str(name)] = array_of(std::move(t));
  return out;
}

py::object python_of(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[py::str(k)] = python_of(v);
      return std::move(d);
    }
    case nlohmann::json::value_t::array: {
      py::list l;
      for (const auto& v : j) l.append(python_of(v));
      return std::move(l);
    }
    case nlohmann::json::value_t::string: return py::str(j.get<std::string>());
    case nlohmann::json::value_t::boolean: return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(j.get<double>());
    default: return py::none();
  }
}

void progress_callback::operator()(std::size_t done, std::size_t total) {
  std::lock_guard lock(mutex_);
  if (failure_) return;
  py::gil_scoped_acquire gil;
  try {
    fn_(stage_, done, total);
  } catch (...) {
    failure_ = std::current_exception();
  }
}

std::function<void(std::size_t, std::size_t)> progress_callback::hook() {
  if (!active()) return {};
  return [this](std::size_t done, std::size_t total) { (*this)(done, total); };
}

void progress_callback::rethrow() {
  std::exception_ptr failure;
  {
    std::lock_guard lock(mutex_);
    failure = std::exchange(failure_, nullptr);
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace inferopt::python
