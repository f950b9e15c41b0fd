#pragma once
// oneDNN pieces the kernels built on it share (private to src/runtime/kernels; only built with
// INFEROPT_WITH_ONEDNN): the process's CPU engine, a stream per thread, and the memory formats
// of blocked and plain activations.
#include <cstdint>
#include <string_view>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

namespace inferopt::runtime::nn::onednn {

/// The process's CPU engine.
inline dnnl::engine& engine() {
  static dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

/// A stream for the calling thread: CPU streams run in order and return when done, and
/// sessions on different threads must not share one.
inline dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

/// nChw16c or nChw8c: activations blocked by `block` channels.
inline dnnl::memory::format_tag blocked_tag(int block) {
  return block == 16 ? dnnl::memory::format_tag::nChw16c : dnnl::memory::format_tag::nChw8c;
}

/// A float32 memory descriptor of logical dims [N, C, H, W] in format `tag`.
inline dnnl::memory::desc activation_desc(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                                          dnnl::memory::format_tag tag) {
  return dnnl::memory::desc({n, c, h, w}, dnnl::memory::data_type::f32, tag);
}

/// Whether oneDNN chose a reference (unoptimized) implementation, which the plain kernels beat.
inline bool is_reference(const char* impl) { return impl == nullptr || std::string_view(impl).find("ref") != std::string_view::npos; }

}  // namespace inferopt::runtime::nn::onednn
