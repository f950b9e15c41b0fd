// inferopt.nchwc GatherChannels: channels of blocked tensors (nchwc.hpp) picked in any order
// into one blocked tensor. Attributes: channels (the real channel count of each input), block,
// and sources (output channel k is channel sources[k] of the inputs' channels laid end to end;
// absent: all of them in order). X_i [N, ceil(C_i/b), H, W, b] -> Y [N, ceil(K/b), H, W, b],
// padding channels zero. This is Concat along the channels, Slice and Split of them, and
// ShuffleNet's channel shuffle (Reshape, Transpose, Reshape), or any chain of those composed
// into one copy, so a blocked chain needs no reorder around them. A channel that lands at
// another lane than it had (DenseNet's growth of 8 on blocks of 16) is copied lane by lane;
// a whole block that keeps its lanes is one copy of its plane. Float32, exact.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_util.hpp"
#include "nchwc.hpp"

namespace inferopt::runtime::nn {

namespace {

/// Lanes of one output block that come, consecutive, from one block of one input.
struct lane_run {
  std::size_t input;
  std::int64_t source_block, source_lane, lane, count;
};

class gather_channels_kernel final : public kernel {
 public:
  gather_channels_kernel(std::vector<std::int64_t> channels, std::int64_t block, const std::vector<std::int64_t>& sources)
      : channels_(std::move(channels)), block_(block) {
    plan_runs(sources);
  }

  void compute(kernel_context& ctx) override {
    if (ctx.input_count() != channels_.size()) ctx.fail("has " + std::to_string(ctx.input_count()) + " inputs and " + std::to_string(channels_.size()) + " channel counts");
    const tensor& first = ctx.input(0);
    if (first.rank() != 5 || first.dtype() != data_type::float32) ctx.fail("inputs must be blocked float tensors");
    const std::int64_t n = first.dim(0), h = first.dim(2), w = first.dim(3), size = h * w;
    for (std::size_t i = 0; i < channels_.size(); ++i) {
      const tensor& x = ctx.input(i);
      if (x.rank() != 5 || x.dtype() != data_type::float32 || x.dim(0) != n || x.dim(2) != h || x.dim(3) != w ||
          x.dim(4) != block_ || x.dim(1) != (channels_[i] + block_ - 1) / block_) {
        ctx.fail("input " + std::to_string(i) + " " + to_string(x.shape()) + " is not a blocked tensor of " + std::to_string(channels_[i]) + " channels beside " + to_string(first.shape()));
      }
    }
    const std::int64_t blocks = static_cast<std::int64_t>(runs_.size()), plane = size * block_;
    tensor& y = ctx.allocate_output(0, data_type::float32, {n, blocks, h, w, block_});
    float* out = y.mutable_data<float>();
    detail::parallel_for(ctx.threads(), n * blocks, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(plane, 1)),
                         [&](std::int64_t begin, std::int64_t end) {
                           for (std::int64_t t = begin; t < end; ++t) fill_block(ctx, t / blocks, t % blocks, size, out + t * plane);
                         });
  }

 private:
  /// The lane runs of every output block (`sources` empty: every input channel in order).
  void plan_runs(const std::vector<std::int64_t>& sources) {
    std::vector<std::pair<std::size_t, std::int64_t>> origin;  // (input, channel) of each input channel end to end
    for (std::size_t i = 0; i < channels_.size(); ++i) {
      for (std::int64_t c = 0; c < channels_[i]; ++c) origin.emplace_back(i, c);
    }
    const auto count = static_cast<std::int64_t>(sources.empty() ? origin.size() : sources.size());
    runs_.assign(static_cast<std::size_t>((count + block_ - 1) / block_), {});
    for (std::int64_t k = 0; k < count; ++k) {
      const auto [input, c] = origin[static_cast<std::size_t>(sources.empty() ? k : sources[static_cast<std::size_t>(k)])];
      std::vector<lane_run>& runs = runs_[static_cast<std::size_t>(k / block_)];
      lane_run* last = runs.empty() ? nullptr : &runs.back();
      const bool extends = last && last->input == input && last->source_block == c / block_ &&
                           last->source_lane + last->count == c % block_ && last->lane + last->count == k % block_;
      if (extends) {
        ++last->count;
      } else {
        runs.push_back({input, c / block_, c % block_, k % block_, 1});
      }
    }
  }

  void fill_block(const kernel_context& ctx, std::int64_t image, std::int64_t out_block, std::int64_t size, float* out) const {
    const std::vector<lane_run>& runs = runs_[static_cast<std::size_t>(out_block)];
    const std::int64_t block = block_, plane = size * block;
    const auto source = [&](const lane_run& r) {
      const tensor& x = ctx.input(r.input);
      return x.data<float>() + (image * x.dim(1) + r.source_block) * plane;
    };
    if (runs.size() == 1 && runs[0].count == block) {  // a whole block of one input: one copy
      std::memcpy(out, source(runs[0]), static_cast<std::size_t>(plane) * sizeof(float));
      return;
    }
    std::int64_t filled = 0;
    for (const lane_run& r : runs) filled += r.count;
    for (const lane_run& r : runs) {
      const float* in = source(r);
      for (std::int64_t pos = 0; pos < size; ++pos) {
        for (std::int64_t k = 0; k < r.count; ++k) out[pos * block + r.lane + k] = in[pos * block + r.source_lane + k];
      }
    }
    if (filled < block) {  // the last block's padding
      for (std::int64_t pos = 0; pos < size; ++pos) std::fill(out + pos * block + filled, out + (pos + 1) * block, 0.0f);
    }
  }

  std::vector<std::int64_t> channels_;
  std::int64_t block_;
  std::vector<std::vector<lane_run>> runs_;  // per output block
};

}  // namespace

void register_nchwc_gather_kernels(kernel_registry& r) {
  r.add(nchwc_domain, "GatherChannels", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    std::vector<std::int64_t> channels = info.node.attr_ints("channels", {});
    if (channels.empty() || std::any_of(channels.begin(), channels.end(), [](std::int64_t c) { return c <= 0; })) {
      info.fail("channels must list a positive count per input");
    }
    const std::int64_t block = info.node.attr_int("block", 16);
    if (block != 8 && block != 16) info.fail("block must be 8 or 16");
    std::int64_t total = 0;
    for (std::int64_t c : channels) total += c;
    const std::vector<std::int64_t> sources = info.node.attr_ints("sources", {});
    if (std::any_of(sources.begin(), sources.end(), [&](std::int64_t s) { return s < 0 || s >= total; })) {
      info.fail("sources must lie in [0, " + std::to_string(total) + ")");
    }
    return std::make_unique<gather_channels_kernel>(std::move(channels), block, sources);
  });
}

}  // namespace inferopt::runtime::nn
