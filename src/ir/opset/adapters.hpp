#pragma once
// The op-specific adapters, one family per source file; the table (op_history.cpp) names
// them for the versions where they apply. The parameterized ones that touch a single
// attribute are in attribute_changes.hpp.

#include "adapter.hpp"

namespace inferopt::ir::opset {

// axes_inputs.cpp: Squeeze, Unsqueeze and ReduceSum at 13, the other Reduce ops at 18.
const adapter& axes_attribute_to_input();

// slice.cpp
const adapter& slice_attributes_to_inputs();  // 10
const adapter& slice_negative_axes();         // 11

// topk.cpp
const adapter& topk_k_to_input();  // 10

// pad.cpp
const adapter& pad_paddings_renamed();      // 2
const adapter& pad_attributes_to_inputs();  // 11
const adapter& pad_axes_input();            // 18

// clip.cpp
const adapter& clip_bounds_to_inputs();  // 11

// split.cpp
const adapter& split_input_to_attribute();  // 2
const adapter& split_sizes_to_input();      // 13
const adapter& split_num_outputs();         // 18

// dropout.cpp
const adapter& dropout_mask_type();       // 10
const adapter& dropout_ratio_to_input();  // 12

// batch_norm.cpp
const adapter& batch_norm_training_outputs();  // 14
const adapter& batch_norm_parameter_types();   // 15

// softmax.cpp: Softmax, LogSoftmax and Hardmax at 13.
const adapter& softmax_single_axis();

// resize.cpp
const adapter& upsample_scales_attribute();  // 7
const adapter& upsample_scales_to_input();   // 9
const adapter& resize_roi_and_modes();       // 11
const adapter& resize_optional_inputs();     // 13

// broadcast.cpp
const adapter& legacy_broadcast();       // 7: Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal, Greater, Less
const adapter& variadic_broadcast();     // 8: Sum, Max, Min, Mean
const adapter& prelu_slope_broadcast();  // 7

// gemm.cpp
const adapter& gemm_optional_c();  // 11

// pool.cpp
const adapter& max_pool_indices();  // 8

// cast.cpp
const adapter& cast_to_number();  // 6

// constant.cpp
const adapter& constant_value_attributes();  // 12

// pow.cpp
const adapter& pow_exponent_type();  // 12

// replaced_ops.cpp: deprecated ops and their replacements, on both ops' tables.
const adapter& upsample_to_resize();           // 10
const adapter& scatter_to_scatter_elements();  // 11

// group_norm.cpp
const adapter& group_norm_per_channel();  // 21

// quantize_linear.cpp: QuantizeLinear and DequantizeLinear at 13.
const adapter& quantize_per_axis();

// reshape.cpp
const adapter& reshape_shape_to_input();  // 5
const adapter& reshape_allowzero();       // 14

}  // namespace inferopt::ir::opset
