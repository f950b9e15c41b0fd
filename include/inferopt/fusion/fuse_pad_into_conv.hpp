#pragma once
/// `fuse-pad-into-conv`: absorbs a zero Pad into the padding of the Conv or AveragePool that
/// reads it.
///
///   before:  x -> Pad(p, 0) -> Conv(pads = q)         after:  x -> Conv(pads = q + p)
///            x -> Pad(p, 0) -> AveragePool(q)                 x -> AveragePool(q + p)
///
/// Algebra: Conv pads its input with zeros, so padding with zeros first and then by q is
/// padding by q + p on each spatial side. AveragePool gives the same windows, and with
/// count_include_pad = 1 also divides by the same counts, since both count the padded zeros.
///
/// Conditions (each checked; a declined pair stays as it is):
///   1. default-domain Pad with mode "constant" and a constant value of 0 (or none);
///   2. opset forms: pads and value are attributes before opset 11 and inputs from 11; the
///      optional `axes` input exists from opset 18 (negative axes need the rank); all of
///      them constant;
///   3. every pad is non-negative (negative pads crop) and the batch and channel axes (0, 1)
///      are not padded;
///   4. the Pad's output has the Conv/AveragePool as its sole reader, as the data input, and
///      is no graph output;
///   5. the consumer is a default-domain Conv, or an AveragePool with count_include_pad = 1
///      and ceil_mode = 0; auto_pad is NOTSET (explicit pads), and its pads, if given, have
///      one begin and one end per spatial axis.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class fuse_pad_into_conv final : public pattern_pass {
 public:
  fuse_pad_into_conv();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-pad-into-conv"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "absorb a zero Pad into the pads of the Conv or AveragePool that reads it";
  }
};

}  // namespace inferopt
