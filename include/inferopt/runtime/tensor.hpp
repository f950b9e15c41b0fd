#pragma once
/// Tensors the executor computes with: an element type, a shape and a buffer that is either
/// owned (writable, 64-byte aligned) or a read-only view of constant data kept alive by a
/// shared holder (initializers are never copied).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/tensor.hpp"

namespace inferopt::runtime {

using ir::data_type;
using shape_t = std::vector<std::int64_t>;

class tensor {
 public:
  tensor() = default;
  /// Allocates an uninitialized writable tensor. @throws error for negative or overflowing dims.
  tensor(data_type type, shape_t shape);
  /// Allocates and fills with zeros.
  static tensor zeros(data_type type, shape_t shape);
  /// A read-only view of `data`; `holder` keeps the bytes alive.
  static tensor view(data_type type, shape_t shape, const void* data, std::shared_ptr<const void> holder);
  /// A writable tensor over memory the caller manages (a slice of an arena) of `capacity`
  /// bytes; `holder` keeps that memory alive.
  static tensor over(data_type type, shape_t shape, void* data, std::size_t capacity, std::shared_ptr<const void> holder);
  /// A read-only view of constant IR data (no copy).
  static tensor from_ir(const ir::tensor& t);
  /// Copies into an IR tensor (raw storage) named `name`.
  [[nodiscard]] ir::tensor to_ir(std::string name) const;
  /// A writable tensor from values.
  template <class T>
  static tensor from_values(shape_t shape, const std::vector<T>& values) {
    tensor t(ir::data_type_of<T>(), std::move(shape));
    expects(static_cast<std::int64_t>(values.size()) == t.element_count(), "value count does not match the shape");
    if (!values.empty()) std::memcpy(t.mutable_raw(), values.data(), values.size() * sizeof(T));
    return t;
  }

  [[nodiscard]] data_type dtype() const noexcept { return dtype_; }
  [[nodiscard]] const shape_t& shape() const noexcept { return shape_; }
  [[nodiscard]] std::size_t rank() const noexcept { return shape_.size(); }
  [[nodiscard]] std::int64_t dim(std::size_t axis) const { return shape_.at(axis); }
  [[nodiscard]] std::int64_t element_count() const noexcept { return count_; }
  [[nodiscard]] std::size_t byte_size() const noexcept { return static_cast<std::size_t>(count_) * ir::element_size(dtype_); }
  [[nodiscard]] bool empty() const noexcept { return dtype_ == data_type::undefined; }
  [[nodiscard]] bool is_writable() const noexcept { return data_ != nullptr || count_ == 0; }

  [[nodiscard]] const void* raw() const noexcept { return cdata_; }
  /// @throws error(errc::internal) for a read-only view.
  [[nodiscard]] void* mutable_raw();

  template <class T>
  [[nodiscard]] const T* data() const {
    check_type<T>();
    return static_cast<const T*>(raw());
  }
  template <class T>
  [[nodiscard]] T* mutable_data() {
    check_type<T>();
    return static_cast<T*>(mutable_raw());
  }
  template <class T>
  [[nodiscard]] std::span<const T> values() const {
    return {data<T>(), static_cast<std::size_t>(count_)};
  }
  /// Copies the elements out, converting integer types to int64 (for shapes, axes, indices).
  [[nodiscard]] std::vector<std::int64_t> to_int64() const;
  /// Copies the elements out as float (float, double, float16 and integer tensors).
  [[nodiscard]] std::vector<float> to_float() const;

  /// Same storage, another shape with the same element count.
  [[nodiscard]] tensor reshaped(shape_t shape) const;
  /// A writable deep copy.
  [[nodiscard]] tensor clone() const;
  /// Storage capacity in bytes (may exceed `byte_size` for reused buffers).
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  /// True when both keep the same storage alive: one is a view or reshape of the other.
  [[nodiscard]] bool shares_storage_with(const tensor& other) const noexcept {
    return holder_ != nullptr && !holder_.owner_before(other.holder_) && !other.holder_.owner_before(holder_);
  }
  /// True when no other tensor shares this storage. The caller may then write to it: what
  /// other threads did with it before letting go happens before this returns.
  [[nodiscard]] bool owns_storage_alone() const noexcept;
  /// Reuses this tensor's buffer for a new type/shape when it is large enough and not shared.
  [[nodiscard]] bool try_reuse(data_type type, const shape_t& shape);

 private:
  template <class T>
  void check_type() const {
    if (ir::data_type_of<T>() != dtype_ && !(sizeof(T) == ir::element_size(dtype_) && same_storage<T>())) {
      throw error(errc::internal, "tensor accessed as " + std::string(ir::to_string(ir::data_type_of<T>())) +
                                      " but holds " + std::string(ir::to_string(dtype_)));
    }
  }
  /// float16/bfloat16 are stored as uint16 bits, bool as one byte.
  template <class T>
  [[nodiscard]] bool same_storage() const noexcept {
    if constexpr (std::is_same_v<T, std::uint16_t>) return dtype_ == data_type::float16 || dtype_ == data_type::bfloat16;
    if constexpr (std::is_same_v<T, std::uint8_t>) return dtype_ == data_type::boolean;
    return false;
  }

  data_type dtype_ = data_type::undefined;
  shape_t shape_;
  std::int64_t count_ = 0;
  std::shared_ptr<const void> holder_;
  const void* cdata_ = nullptr;
  void* data_ = nullptr;  // null for read-only views
  std::size_t capacity_ = 0;
};

/// Element count of a shape; throws on negative dims or overflow.
std::int64_t element_count_checked(const shape_t& shape);
/// `[1,3,224,224]`, for messages.
std::string to_string(const shape_t& shape);

}  // namespace inferopt::runtime
