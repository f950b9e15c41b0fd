#pragma once
/// Constant tensor data: initializers and tensor-valued attributes.

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/data_type.hpp"

namespace inferopt::ir {

/// How a tensor's values were stored in the file, so saving writes them back the same way.
enum class tensor_storage {
  raw,           ///< `raw_data` bytes
  typed_fields,  ///< `float_data`, `int64_data`, ... repeated fields
  external,      ///< a separate file next to the model
};

/// A constant tensor. Values live in ONNX's raw little-endian layout behind a shared,
/// immutable buffer, so copying a tensor (or cloning a graph) never copies the weights.
class tensor {
 public:
  std::string name;
  data_type dtype = data_type::undefined;
  std::vector<std::int64_t> dims;
  tensor_storage storage = tensor_storage::raw;
  /// Null for string tensors (their values stay in `residual`) and tensors without data.
  std::shared_ptr<const std::string> bytes;
  /// Serialized TensorProto holding every field we do not model (doc_string, string_data,
  /// segment, unknown fields), written back untouched on save.
  std::string residual;

  tensor() = default;

  /// Builds a tensor from typed values; `values.size()` must equal the product of `dims`.
  template <class T>
  static tensor from_values(std::string name, std::vector<std::int64_t> dims, std::span<const T> values) {
    tensor t;
    t.name = std::move(name);
    t.dtype = data_type_of<T>();
    t.dims = std::move(dims);
    expects(static_cast<std::int64_t>(values.size()) == t.element_count(), "value count does not match dims");
    std::string raw(values.size() * sizeof(T), '\0');
    if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
    t.bytes = std::make_shared<const std::string>(std::move(raw));
    return t;
  }
  template <class T>
  static tensor from_values(std::string name, std::vector<std::int64_t> dims, const std::vector<T>& values) {
    return from_values<T>(std::move(name), std::move(dims), std::span<const T>(values));
  }

  /// Number of elements (1 for a scalar); -1 when the dims overflow or are negative.
  [[nodiscard]] std::int64_t element_count() const noexcept { return element_count(dims); }
  static std::int64_t element_count(std::span<const std::int64_t> dims) noexcept {
    std::int64_t n = 1;
    for (std::int64_t d : dims) {
      if (d < 0) return -1;
      if (d != 0 && n > INT64_MAX / d) return -1;
      n *= d;
    }
    return n;
  }
  [[nodiscard]] std::size_t byte_size() const noexcept { return bytes ? bytes->size() : 0; }
  [[nodiscard]] bool has_data() const noexcept { return bytes != nullptr; }

  /// Copies the values out as `T`; throws when `T` is not the stored element type.
  template <class T>
  [[nodiscard]] std::vector<T> values() const {
    if (dtype != data_type_of<T>()) {
      throw error(errc::invalid_argument, "tensor '" + name + "': element type is " + std::string(to_string(dtype)));
    }
    std::vector<T> out(byte_size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), bytes->data(), out.size() * sizeof(T));
    return out;
  }
};

}  // namespace inferopt::ir
