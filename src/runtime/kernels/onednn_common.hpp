#pragma once
// oneDNN pieces the kernels built on it share (private to src/runtime/kernels; only built with
// INFEROPT_WITH_ONEDNN): the process's CPU engine, a stream per thread, and the memory formats
// of blocked and plain activations.
#include <cstdint>
#include <list>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "inferopt/runtime/kernel.hpp"

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

/// The argument map of a primitive, made once with it: later calls set the memories' data
/// handles (dnnl::memory is a shared handle), so no map is built per call. `bias` may be null;
/// `scratch` joins only where the primitive needs one.
inline std::unordered_map<int, dnnl::memory> primitive_args(const dnnl::memory& src, const dnnl::memory& weights,
                                                            const dnnl::memory& dst, const dnnl::memory* bias,
                                                            const dnnl::memory& scratch) {
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
  if (bias) args.emplace(DNNL_ARG_BIAS, *bias);
  if (scratch.get_desc().get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, scratch);
  return args;
}

/// Points `scratch`, the scratchpad of a primitive made with scratchpad_mode::user, at the
/// step's scratch memory (kernel_context::scratch: a place in the session's arena, where
/// oneDNN's default would keep one buffer per primitive resident); nothing when it needs none.
inline void point_scratchpad(kernel_context& ctx, dnnl::memory& scratch) {
  if (const std::size_t bytes = scratch.get_desc().get_size(); bytes > 0) scratch.set_data_handle(ctx.scratch(bytes));
}

/// `source` reordered into a new memory of `layout`.
inline dnnl::memory reordered(dnnl::memory source, const dnnl::memory::desc& layout) {
  dnnl::memory target(layout, engine());
  dnnl::reorder(source, target).execute(stream(), source, target);
  return target;
}

/// The primitives a kernel made for the input shapes it met, most recent first, at most
/// `capacity`: dynamic shapes do not grow memory without bound. 8 holds a server's batch
/// sizes padded to powers of two up to 64 (serve/batcher.hpp); with 4, batches of 1, 2, 4, 8
/// and 16 rows made oneDNN compile a primitive again at most changes of size.
template <class Entry, std::size_t capacity = 8>
class recent_primitives {
 public:
  /// The entry `matches` accepts (moved to the front), or the one `make` returns, added.
  template <class Matches, class Make>
  Entry& find_or_make(Matches matches, Make make) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (matches(*it)) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front();
      }
    }
    Entry made = make();
    if (entries_.size() == capacity) entries_.pop_back();
    entries_.push_front(std::move(made));
    return entries_.front();
  }

 private:
  std::list<Entry> entries_;
};

/// A constant (weights) in each layout its primitives asked for, at most `capacity`.
template <std::size_t capacity = 4>
class weight_layouts {
 public:
  /// The copy in `layout`, made on first need by reordering what `source()` returns.
  template <class Source>
  dnnl::memory in(const dnnl::memory::desc& layout, Source source) {
    for (const dnnl::memory& m : copies_) {
      if (m.get_desc() == layout) return m;
    }
    dnnl::memory target = reordered(source(), layout);
    if (copies_.size() == capacity) copies_.erase(copies_.begin());
    copies_.push_back(target);
    return target;
  }
  [[nodiscard]] bool empty() const noexcept { return copies_.empty(); }
  /// Bytes the copies take.
  [[nodiscard]] std::size_t bytes() const noexcept {
    std::size_t sum = 0;
    for (const dnnl::memory& m : copies_) sum += m.get_desc().get_size();
    return sum;
  }
  /// The latest copy (empty() must be false).
  [[nodiscard]] const dnnl::memory& latest() const { return copies_.back(); }

 private:
  std::vector<dnnl::memory> copies_;
};

}  // namespace inferopt::runtime::nn::onednn
