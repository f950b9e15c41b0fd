#pragma once
/// `trim-dead-conv-taps`: drops the kernel taps of a Conv that only ever read padding.
///
///   before:  Conv 3x3, dilation 12, pads 12 on a 4x4 input     after:  Conv 1x1, pads 0
///
/// A tap whose input position o * stride + k * dilation - pad_begin falls outside the input
/// for every output position o multiplies zeros, so removing it from W leaves every output
/// the same. DeepLab's ASPP convs (dilations 12/24/36) on the small maps of a 224 or smaller
/// input are the common case: some become 1x1 convs, which run several times faster.
///
/// Only edge taps are removed, each axis on its own, and the pads shrink by the removed
/// span so the output size and every output position's receptive field stay the same:
/// pads' = pads - removed taps * dilation. Where that would make a pad negative, fewer taps
/// are removed. An axis left with one tap gets dilation 1.
///
/// Conditions (each checked; a declined Conv stays as it is):
///   1. default-domain Conv with explicit pads (auto_pad NOTSET) and one output;
///   2. W is a constant of a type with whole-byte elements, of the input's rank;
///   3. the input's spatial dims are known numbers (the batch may be symbolic) and every
///      output dim is at least 1;
///   4. at least one tap is dead; a Conv whose taps are all dead is left alone.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class trim_dead_conv_taps final : public pattern_pass {
 public:
  trim_dead_conv_taps();
  [[nodiscard]] std::string_view name() const noexcept override { return "trim-dead-conv-taps"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "drop Conv kernel taps that read only padding for every output position (static shapes)";
  }
};

}  // namespace inferopt
