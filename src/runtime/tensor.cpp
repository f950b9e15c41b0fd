#include "inferopt/runtime/tensor.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "inferopt/core/float16.hpp"

namespace inferopt::runtime {

std::int64_t element_count_checked(const shape_t& shape) {
  const std::int64_t n = ir::tensor::element_count(shape);
  if (n < 0) throw error(errc::invalid_argument, "shape " + to_string(shape) + " is negative or overflows");
  return n;
}

std::string to_string(const shape_t& shape) {
  std::string s = "[";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? "," : "") + std::to_string(shape[k]);
  return s + "]";
}

namespace {
constexpr std::size_t alignment = 64;
// Tensors above this many bytes are refused: a hostile shape must become an error, not a
// multi-terabyte allocation attempt.
constexpr std::size_t max_tensor_bytes = std::size_t{1} << 40;

std::shared_ptr<void> allocate(std::size_t bytes) {
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded);
  if (!p) throw std::bad_alloc();
  return {p, [](void* q) { std::free(q); }};
}
}  // namespace

tensor::tensor(data_type type, shape_t shape) : dtype_(type), shape_(std::move(shape)) {
  count_ = element_count_checked(shape_);
  const std::size_t width = ir::element_size(type);
  if (width == 0) throw error(errc::unsupported, "tensors of " + std::string(ir::to_string(type)) + " are not supported");
  if (static_cast<std::uint64_t>(count_) > max_tensor_bytes / width) {
    throw error(errc::invalid_argument, "tensor of shape " + to_string(shape_) + " is too large");
  }
  capacity_ = byte_size();
  auto storage = allocate(capacity_);
  data_ = storage.get();
  cdata_ = data_;
  holder_ = std::move(storage);
}

tensor tensor::zeros(data_type type, shape_t shape) {
  tensor t(type, std::move(shape));
  if (t.byte_size()) std::memset(t.data_, 0, t.byte_size());
  return t;
}

tensor tensor::view(data_type type, shape_t shape, const void* data, std::shared_ptr<const void> holder) {
  tensor t;
  t.dtype_ = type;
  t.shape_ = std::move(shape);
  t.count_ = element_count_checked(t.shape_);
  t.cdata_ = data;
  t.holder_ = std::move(holder);
  t.capacity_ = t.byte_size();
  return t;
}

tensor tensor::over(data_type type, shape_t shape, void* data, std::size_t capacity, std::shared_ptr<const void> holder) {
  tensor t = view(type, std::move(shape), data, std::move(holder));
  expects(t.byte_size() <= capacity, "tensor does not fit the memory given");
  t.data_ = data;
  t.capacity_ = capacity;
  return t;
}

tensor tensor::from_ir(const ir::tensor& t) {
  if (!t.bytes) throw error(errc::unsupported, "tensor '" + t.name + "' has no numeric data");
  tensor out = view(t.dtype, t.dims, t.bytes->data(), t.bytes);
  if (out.byte_size() != t.bytes->size()) {
    throw error(errc::invalid_model, "tensor '" + t.name + "': data size does not match its dims");
  }
  return out;
}

ir::tensor tensor::to_ir(std::string name) const {
  ir::tensor t;
  t.name = std::move(name);
  t.dtype = dtype_;
  t.dims = shape_;
  t.bytes = std::make_shared<const std::string>(static_cast<const char*>(cdata_), byte_size());
  return t;
}

void* tensor::mutable_raw() {
  if (!data_ && count_ > 0) throw error(errc::internal, "write to a read-only tensor");
  return data_;
}

std::vector<std::int64_t> tensor::to_int64() const {
  std::vector<std::int64_t> out(static_cast<std::size_t>(count_));
  for (std::int64_t k = 0; k < count_; ++k) {
    switch (dtype_) {
      case data_type::int64: out[k] = static_cast<const std::int64_t*>(cdata_)[k]; break;
      case data_type::int32: out[k] = static_cast<const std::int32_t*>(cdata_)[k]; break;
      case data_type::int16: out[k] = static_cast<const std::int16_t*>(cdata_)[k]; break;
      case data_type::int8: out[k] = static_cast<const std::int8_t*>(cdata_)[k]; break;
      case data_type::uint8:
      case data_type::boolean: out[k] = static_cast<const std::uint8_t*>(cdata_)[k]; break;
      case data_type::uint16: out[k] = static_cast<const std::uint16_t*>(cdata_)[k]; break;
      case data_type::uint32: out[k] = static_cast<const std::uint32_t*>(cdata_)[k]; break;
      case data_type::uint64: out[k] = static_cast<std::int64_t>(static_cast<const std::uint64_t*>(cdata_)[k]); break;
      default: throw error(errc::invalid_argument, "expected an integer tensor, got " + std::string(ir::to_string(dtype_)));
    }
  }
  return out;
}

std::vector<float> tensor::to_float() const {
  std::vector<float> out(static_cast<std::size_t>(count_));
  for (std::int64_t k = 0; k < count_; ++k) {
    switch (dtype_) {
      case data_type::float32: out[k] = static_cast<const float*>(cdata_)[k]; break;
      case data_type::float64: out[k] = static_cast<float>(static_cast<const double*>(cdata_)[k]); break;
      case data_type::float16: out[k] = inferopt::half_to_float(static_cast<const std::uint16_t*>(cdata_)[k]); break;
      case data_type::bfloat16: out[k] = inferopt::bfloat16_to_float(static_cast<const std::uint16_t*>(cdata_)[k]); break;
      default: {
        auto ints = to_int64();
        for (std::size_t j = 0; j < ints.size(); ++j) out[j] = static_cast<float>(ints[j]);
        return out;
      }
    }
  }
  return out;
}

tensor tensor::reshaped(shape_t shape) const {
  if (element_count_checked(shape) != count_) {
    throw error(errc::invalid_argument, "cannot reshape " + to_string(shape_) + " to " + to_string(shape));
  }
  tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

tensor tensor::clone() const {
  tensor t(dtype_, shape_);
  if (byte_size()) std::memcpy(t.data_, cdata_, byte_size());
  return t;
}

bool tensor::owns_storage_alone() const noexcept {
  // use_count() is a relaxed load: seeing 1 does not order this thread after another one's
  // reads of the buffer before it dropped its reference (a caller reading the last run's
  // output on another thread, then the next run writing into it). The other thread's
  // decrement is a release; an acquire here pairs with it.
  if (data_ == nullptr || holder_.use_count() != 1) return false;
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer does not model fences. Copying the holder is an acq_rel increment of the
  // same counter in libstdc++, which it does model: the same edge, visible to it.
  [[maybe_unused]] const auto probe = holder_;
#else
  std::atomic_thread_fence(std::memory_order_acquire);
#endif
  return true;
}

bool tensor::try_reuse(data_type type, const shape_t& shape) {
  if (!owns_storage_alone()) return false;
  const std::int64_t n = ir::tensor::element_count(shape);
  if (n < 0 || ir::element_size(type) == 0) return false;
  if (static_cast<std::size_t>(n) * ir::element_size(type) > capacity_) return false;
  dtype_ = type;
  shape_ = shape;
  count_ = n;
  return true;
}

}  // namespace inferopt::runtime
