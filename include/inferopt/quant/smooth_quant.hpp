#pragma once
/// SmoothQuant (Xiao et al., 2023): moves the per-channel outliers of a linear layer's input
/// activation into its weights, before static quantization, so that one int8 scale per tensor
/// fits the activation.
///
///   y = x W = (x diag(1/s)) (diag(s) W),   s_k = max|x_k|^alpha / max|W_k,:|^(1 - alpha)
///
/// For each activation x that MatMuls (and Gemms without transA) on constant weights read as
/// input 0, the
/// per-channel maxima max|x_k| (over x's last axis) come from running the float model on the
/// calibration batches, and max|W_k,:| from every weight reading x (one s serves them all).
/// alpha 0 leaves activations as they are, 1 moves all of their range into the weights;
/// 0.5 is the paper's default for most models.
///
/// Where 1/s goes:
///   - into the LayerNormalization producing x (gamma and beta divided by s) when every reader
///     of x is a smoothed layer: free at run time, as in the paper;
///   - otherwise into a new Mul(x, 1/s) that only the smoothed layers read (post-LN encoders
///     such as BERT also feed x to a residual Add, which must see x unscaled).
/// A group is skipped (and reported) when a weight is also read elsewhere, a weight or the
/// statistics are not finite, or x's last dim is not K.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::quant {

struct smooth_quant_options {
  double alpha = 0.5;  ///< migration strength, in [0, 1]
};

/// One activation smoothed, and how much flatter its channels became: the largest channel
/// maximum over the median channel maximum, before (x) and after (x / s).
struct smoothed_activation {
  std::string value;
  std::vector<std::string> layers;  ///< the MatMuls whose weights took s
  bool folded_into_norm = false;    ///< into the producing LayerNormalization, else a Mul
  double outlier_ratio_before = 0.0;
  double outlier_ratio_after = 0.0;
};

struct smooth_quant_report {
  std::vector<smoothed_activation> smoothed;
  std::vector<std::string> skipped;  ///< one line per group left alone, with the reason
};

/// Smooths the main graph of `m` in place; its outputs are unchanged up to float rounding.
/// @throws error(errc::invalid_argument) for alpha outside [0, 1] or no batches; any error of
///         running the model on them. `m` is left as it was when anything throws.
/// Not thread-safe with respect to `m`.
[[nodiscard]] smooth_quant_report smooth_quant(ir::model& m, std::span<const runtime::tensor_map> batches,
                                               const smooth_quant_options& options = {});

}  // namespace inferopt::quant
