#pragma once
/// Element types of tensors, numbered as ONNX's TensorProto.DataType so files map one to one.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace inferopt::ir {

enum class data_type : std::int32_t {
  undefined = 0,
  float32 = 1,
  uint8 = 2,
  int8 = 3,
  uint16 = 4,
  int16 = 5,
  int32 = 6,
  int64 = 7,
  string = 8,
  boolean = 9,
  float16 = 10,
  float64 = 11,
  uint32 = 12,
  uint64 = 13,
  complex64 = 14,
  complex128 = 15,
  bfloat16 = 16,
  float8e4m3fn = 17,
  float8e4m3fnuz = 18,
  float8e5m2 = 19,
  float8e5m2fnuz = 20,
  uint4 = 21,
  int4 = 22,
};

/// Bytes per element in ONNX's raw_data layout; 0 for strings, sub-byte and unknown types.
constexpr std::size_t element_size(data_type t) noexcept {
  switch (t) {
    case data_type::boolean:
    case data_type::uint8:
    case data_type::int8:
    case data_type::float8e4m3fn:
    case data_type::float8e4m3fnuz:
    case data_type::float8e5m2:
    case data_type::float8e5m2fnuz: return 1;
    case data_type::uint16:
    case data_type::int16:
    case data_type::float16:
    case data_type::bfloat16: return 2;
    case data_type::float32:
    case data_type::int32:
    case data_type::uint32: return 4;
    case data_type::int64:
    case data_type::uint64:
    case data_type::float64:
    case data_type::complex64: return 8;
    case data_type::complex128: return 16;
    default: return 0;
  }
}

/// The lower-case name ONNX uses in its docs (`float`, `int64`, ...).
constexpr std::string_view to_string(data_type t) noexcept {
  switch (t) {
    case data_type::undefined: return "undefined";
    case data_type::float32: return "float";
    case data_type::uint8: return "uint8";
    case data_type::int8: return "int8";
    case data_type::uint16: return "uint16";
    case data_type::int16: return "int16";
    case data_type::int32: return "int32";
    case data_type::int64: return "int64";
    case data_type::string: return "string";
    case data_type::boolean: return "bool";
    case data_type::float16: return "float16";
    case data_type::float64: return "double";
    case data_type::uint32: return "uint32";
    case data_type::uint64: return "uint64";
    case data_type::complex64: return "complex64";
    case data_type::complex128: return "complex128";
    case data_type::bfloat16: return "bfloat16";
    case data_type::float8e4m3fn: return "float8e4m3fn";
    case data_type::float8e4m3fnuz: return "float8e4m3fnuz";
    case data_type::float8e5m2: return "float8e5m2";
    case data_type::float8e5m2fnuz: return "float8e5m2fnuz";
    case data_type::uint4: return "uint4";
    case data_type::int4: return "int4";
  }
  return "unknown";
}

/// The element type that stores a C++ type, for typed tensor access.
template <class T>
constexpr data_type data_type_of() noexcept;
template <> constexpr data_type data_type_of<float>() noexcept { return data_type::float32; }
template <> constexpr data_type data_type_of<double>() noexcept { return data_type::float64; }
template <> constexpr data_type data_type_of<std::int8_t>() noexcept { return data_type::int8; }
template <> constexpr data_type data_type_of<std::uint8_t>() noexcept { return data_type::uint8; }
template <> constexpr data_type data_type_of<std::int16_t>() noexcept { return data_type::int16; }
template <> constexpr data_type data_type_of<std::uint16_t>() noexcept { return data_type::uint16; }
template <> constexpr data_type data_type_of<std::int32_t>() noexcept { return data_type::int32; }
template <> constexpr data_type data_type_of<std::uint32_t>() noexcept { return data_type::uint32; }
template <> constexpr data_type data_type_of<std::int64_t>() noexcept { return data_type::int64; }
template <> constexpr data_type data_type_of<std::uint64_t>() noexcept { return data_type::uint64; }
template <> constexpr data_type data_type_of<bool>() noexcept { return data_type::boolean; }

}  // namespace inferopt::ir
