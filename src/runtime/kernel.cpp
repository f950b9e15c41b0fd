#include "inferopt/runtime/kernel.hpp"

#include <algorithm>

#include "buffer_pool.hpp"
#include "kernels/int8_nhwc.hpp"
#include "kernels/nchwc.hpp"
#include "output_placement.hpp"

namespace inferopt::runtime {

const tensor& kernel_context::input(std::size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
  return *inputs_[i];
}

bool kernel_context::wants_output(std::size_t i) const noexcept {
  return i < outputs_.size() && i < node_.outputs().size() && node_.outputs()[i] != nullptr;
}

tensor& kernel_context::allocate_output(std::size_t i, data_type type, const shape_t& shape) {
  if (i >= outputs_.size()) fail("has no output " + std::to_string(i));
  tensor& slot = outputs_[i];
  if (placement_ && i < placement_->allocated.size()) {
    placement_->allocated[i] = 1;
    if (placement_->arena != nullptr && placement_->offsets[i] != detail::output_placement::unplanned) {
      const std::size_t width = ir::element_size(type);
      const std::int64_t n = ir::tensor::element_count(shape);
      if (n >= 0 && width != 0 && static_cast<std::uint64_t>(n) <= placement_->capacities[i] / width) {
        slot = tensor::over(type, shape, placement_->arena + placement_->offsets[i], placement_->capacities[i],
                            placement_->holder);
        return slot;
      }
      placement_->overflowed = true;  // shapes changed under the plan: this output goes to the heap
    }
  }
  if (slot.try_reuse(type, shape)) return slot;
  // A shape computed from data can be negative, overflow or be absurdly large; the tensor
  // refuses it, and the message must say which node asked.
  try {
    if (pool_) {
      if (!slot.empty()) pool_->give(std::move(slot));
      slot = pool_->take(type, shape);
    } else {
      slot = tensor(type, shape);
    }
  } catch (const error& e) {
    throw error(e.code(), "node " + node_.describe() + ": " + e.what());
  }
  return slot;
}

void kernel_context::set_output(std::size_t i, tensor t) {
  if (i >= outputs_.size()) fail("has no output " + std::to_string(i));
  outputs_[i] = std::move(t);
}

std::byte* kernel_context::scratch(std::size_t bytes) {
  if (placement_) {
    placement_->scratch_used = std::max(placement_->scratch_used, bytes);
    if (placement_->arena != nullptr) {
      if (placement_->scratch_offset != detail::output_placement::unplanned && bytes <= placement_->scratch_capacity) {
        return placement_->arena + placement_->scratch_offset;
      }
      placement_->overflowed = true;  // the next run traces again, with this need
    }
  }
  if (own_scratch_.byte_size() < bytes) {
    own_scratch_ = tensor(data_type::uint8, {static_cast<std::int64_t>(bytes)});
  }
  return static_cast<std::byte*>(own_scratch_.mutable_raw());
}

void kernel_context::fail(const std::string& what) const {
  throw error(errc::invalid_argument, "node " + node_.describe() + ": " + what);
}

void kernel_context::unsupported(const std::string& what) const {
  throw error(errc::unsupported, "node " + node_.describe() + ": " + what);
}

void kernel_build_info::unsupported(const std::string& what) const {
  throw error(errc::unsupported, "node " + node.describe() + ": " + what);
}

void kernel_build_info::fail(const std::string& what) const {
  throw error(errc::invalid_model, "node " + node.describe() + ": " + what);
}

void kernel_registry::add(std::string domain, std::string op_type, kernel_factory f, std::int64_t since,
                          std::int64_t until) {
  if (domain == "ai.onnx") domain.clear();
  entries_[{std::move(domain), std::move(op_type)}].push_back(entry{since, until, std::move(f)});
}

const kernel_factory* kernel_registry::find(std::string_view domain, std::string_view op_type, std::int64_t opset) const {
  if (domain == "ai.onnx") domain = "";
  auto it = entries_.find(std::make_pair(std::string(domain), std::string(op_type)));
  if (it == entries_.end()) return nullptr;
  for (const entry& e : it->second) {
    if (opset >= e.since && opset <= e.until) return &e.make;
  }
  return nullptr;
}

std::vector<std::string> kernel_registry::op_types(std::string_view domain) const {
  std::vector<std::string> out;
  for (const auto& [key, _] : entries_) {
    if (key.first == domain) out.push_back(key.second);
  }
  return out;
}

const kernel_registry& builtin_kernels() {
  static const kernel_registry registry = [] {
    kernel_registry r;
    register_elementwise_kernels(r);
    register_nn_kernels(r);
    register_shape_kernels(r);
    register_reduce_kernels(r);
    register_quantize_kernels(r);
    register_sparse_kernels(r);
    nn::register_nchwc_kernels(r);
    nn::register_int8_conv_kernels(r);
    nn::register_int8_add_kernels(r);
    nn::register_int8_pool_kernels(r);
    nn::register_int8_gemm_kernels(r);
    nn::register_int8_quantize_kernels(r);
    return r;
  }();
  return registry;
}

}  // namespace inferopt::runtime
