// TensorProto <-> ir::tensor, including typed repeated fields and external data.

#include <charconv>
#include <fstream>
#include <limits>
#include <optional>

#include "proto_bridge.hpp"

namespace inferopt::ir::detail {
namespace {

[[noreturn]] void bad_tensor(const onnx::TensorProto& p, const std::string& what) {
  throw error(errc::invalid_model, "tensor '" + p.name() + "': " + what);
}

/// Packs repeated-field values into raw little-endian bytes of `size` bytes each.
template <class Field>
std::string pack(const Field& field, std::size_t size) {
  std::string out(field.size() * size, '\0');
  char* dst = out.data();
  for (auto v : field) {
    std::memcpy(dst, &v, size);  // little-endian hosts only (x86-64, aarch64)
    dst += size;
  }
  return out;
}

/// How many repeated-field entries one element takes (complex numbers take two).
std::int64_t entries_per_element(data_type t) {
  return (t == data_type::complex64 || t == data_type::complex128) ? 2 : 1;
}

bool is_signed_small(data_type t) { return t == data_type::int8 || t == data_type::int16; }

std::filesystem::path checked_external_path(const onnx::TensorProto& p, const std::string& location,
                                            const std::filesystem::path& base) {
  namespace fs = std::filesystem;
  fs::path rel(location);
  if (location.empty()) bad_tensor(p, "external data has no location");
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) {
    bad_tensor(p, "external data location '" + location + "' is absolute; it must stay inside the model's folder");
  }
  for (const auto& part : rel) {
    if (part == "..") bad_tensor(p, "external data location '" + location + "' escapes the model's folder");
  }
  fs::path full = base / rel;
  std::error_code ec;
  fs::path real = fs::weakly_canonical(full, ec);
  fs::path real_base = fs::weakly_canonical(base.empty() ? fs::path(".") : base, ec);
  auto [b, r] = std::mismatch(real_base.begin(), real_base.end(), real.begin(), real.end());
  if (b != real_base.end()) {
    bad_tensor(p, "external data location '" + location + "' escapes the model's folder");
  }
  return full;
}

/// A non-negative decimal integer written plainly: digits only, no sign, spaces or leading
/// zeros, within int64. Anything looser ("+0", " 5", "00") is a hostile or broken file.
std::optional<std::int64_t> parse_decimal(const std::string& s) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0 || s[0] == '-') return std::nullopt;
  return v;
}

std::string read_external(const onnx::TensorProto& p, const external_source& ext, std::size_t expected) {
  if (ext.base_dir.empty()) bad_tensor(p, "external data needs the model's folder, but the model came from memory");
  std::string location;
  std::int64_t offset = 0;
  std::int64_t length = -1;
  for (const auto& kv : p.external_data()) {
    auto number = [&](const std::string& s) {
      const auto v = parse_decimal(s);
      if (!v) bad_tensor(p, "external data " + kv.key() + " '" + s + "' is not a non-negative decimal integer");
      return *v;
    };
    if (kv.key() == "location") location = kv.value();
    if (kv.key() == "offset") offset = number(kv.value());
    if (kv.key() == "length") length = number(kv.value());
  }
  std::filesystem::path file = checked_external_path(p, location, ext.base_dir);
  if (length < 0) length = static_cast<std::int64_t>(expected);
  if (static_cast<std::size_t>(length) != expected) {
    bad_tensor(p, "external data length " + std::to_string(length) + " does not match its dims (" +
                      std::to_string(expected) + " bytes)");
  }
  std::error_code ec;
  auto file_size = std::filesystem::file_size(file, ec);
  if (ec) bad_tensor(p, "cannot read external data file '" + location + "'");
  if (static_cast<std::uint64_t>(offset) + static_cast<std::uint64_t>(length) > file_size) {
    bad_tensor(p, "external data runs past the end of '" + location + "'");
  }
  std::ifstream in(file, std::ios::binary);
  std::string bytes(static_cast<std::size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in) bad_tensor(p, "cannot read external data file '" + location + "'");
  return bytes;
}

}  // namespace

tensor tensor_from_proto(onnx::TensorProto& p, const external_source& ext) {
  tensor t;
  t.name = p.name();
  t.dtype = static_cast<data_type>(p.data_type());
  t.dims.assign(p.dims().begin(), p.dims().end());
  const std::int64_t count = t.element_count();
  if (count < 0) bad_tensor(p, "dims are negative or overflow");
  const std::size_t width = element_size(t.dtype);
  // Sub-byte and unknown element types are carried as opaque bytes without a size check.
  const bool sized = width > 0;
  if (sized && static_cast<std::uint64_t>(count) > std::numeric_limits<std::uint64_t>::max() / width) {
    bad_tensor(p, "dims overflow");
  }
  const std::size_t expected = sized ? static_cast<std::size_t>(count) * width : 0;

  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    t.storage = tensor_storage::external;
    if (ext.load) {
      t.bytes = std::make_shared<const std::string>(read_external(p, ext, expected));
    }
    p.clear_external_data();
    p.clear_data_location();
  } else if (p.has_raw_data()) {
    t.storage = tensor_storage::raw;
    if (sized && p.raw_data().size() != expected) {
      bad_tensor(p, "raw_data has " + std::to_string(p.raw_data().size()) + " bytes, its dims need " +
                        std::to_string(expected));
    }
    t.bytes = std::make_shared<const std::string>(std::move(*p.mutable_raw_data()));
    p.clear_raw_data();
  } else if (t.dtype != data_type::string && sized) {
    t.storage = tensor_storage::typed_fields;
    const std::int64_t entries = count * entries_per_element(t.dtype);
    auto check = [&](int n) {
      if (n != entries) {
        bad_tensor(p, "holds " + std::to_string(n) + " values, its dims need " + std::to_string(entries));
      }
    };
    std::string bytes;
    switch (t.dtype) {
      case data_type::float32:
      case data_type::complex64:
        check(p.float_data_size());
        bytes = pack(p.float_data(), 4);
        p.clear_float_data();
        break;
      case data_type::int64:
        check(p.int64_data_size());
        bytes = pack(p.int64_data(), 8);
        p.clear_int64_data();
        break;
      case data_type::float64:
      case data_type::complex128:
        check(p.double_data_size());
        bytes = pack(p.double_data(), 8);
        p.clear_double_data();
        break;
      case data_type::uint32:
      case data_type::uint64:
        check(p.uint64_data_size());
        bytes = pack(p.uint64_data(), width);
        p.clear_uint64_data();
        break;
      default:  // every type of 1 or 2 bytes, and int32, lives in int32_data
        check(p.int32_data_size());
        bytes = pack(p.int32_data(), width);
        p.clear_int32_data();
        break;
    }
    t.bytes = std::make_shared<const std::string>(std::move(bytes));
  }
  p.clear_dims();
  t.residual = p.SerializeAsString();
  return t;
}

namespace {
template <class T, class Field>
void unpack(const std::string& bytes, std::size_t width, Field* field) {
  const std::size_t n = bytes.size() / width;
  field->Reserve(static_cast<int>(n));
  for (std::size_t k = 0; k < n; ++k) {
    T v{};
    std::memcpy(&v, bytes.data() + k * width, width);
    field->Add(v);
  }
}
}  // namespace

void tensor_to_proto(const tensor& t, onnx::TensorProto& p, const tensor_sink& sink) {
  p.ParseFromString(t.residual);
  if (!(p.has_name() ? p.name() == t.name : t.name.empty())) p.set_name(t.name);
  if (!(p.has_data_type() ? p.data_type() == static_cast<int>(t.dtype) : t.dtype == data_type::undefined)) {
    p.set_data_type(static_cast<int>(t.dtype));
  }
  p.clear_dims();
  for (std::int64_t d : t.dims) p.add_dims(d);
  if (!t.bytes) {
    if (t.storage == tensor_storage::external) {
      throw error(errc::unsupported, "tensor '" + t.name + "': its external data was not loaded, so it cannot be saved");
    }
    return;
  }
  if (!sink(t, p)) return;  // the sink wrote external_data fields
  const std::string& b = *t.bytes;
  if (t.storage != tensor_storage::typed_fields) {
    p.set_raw_data(b);
    return;
  }
  const std::size_t width = element_size(t.dtype);
  switch (t.dtype) {
    case data_type::float32:
    case data_type::complex64: unpack<float>(b, 4, p.mutable_float_data()); break;
    case data_type::int64: unpack<std::int64_t>(b, 8, p.mutable_int64_data()); break;
    case data_type::float64:
    case data_type::complex128: unpack<double>(b, 8, p.mutable_double_data()); break;
    case data_type::uint32: unpack<std::uint32_t>(b, 4, p.mutable_uint64_data()); break;
    case data_type::uint64: unpack<std::uint64_t>(b, 8, p.mutable_uint64_data()); break;
    case data_type::int32: unpack<std::int32_t>(b, 4, p.mutable_int32_data()); break;
    default:
      if (width == 1) {
        if (is_signed_small(t.dtype)) unpack<std::int8_t>(b, 1, p.mutable_int32_data());
        else unpack<std::uint8_t>(b, 1, p.mutable_int32_data());
      } else {
        if (is_signed_small(t.dtype)) unpack<std::int16_t>(b, 2, p.mutable_int32_data());
        else unpack<std::uint16_t>(b, 2, p.mutable_int32_data());
      }
  }
}

}  // namespace inferopt::ir::detail
