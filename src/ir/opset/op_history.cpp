// The versions are those of ONNX's operator schemas (onnx/defs, `since_version`), checked
// against ONNX's own schema registry by the opset-conversion tests; the element types each
// definition added are the union of its type constraints minus the previous one's. Types of
// definitions up to opset 7 are left out: no conversion goes below 7.

#include "op_history.hpp"

#include <algorithm>

#include "adapters.hpp"
#include "attribute_changes.hpp"

namespace inferopt::ir::opset {
namespace {

using dt = data_type;

constexpr dt bf16[] = {dt::bfloat16};
constexpr dt float8[] = {dt::float8e4m3fn, dt::float8e4m3fnuz, dt::float8e5m2, dt::float8e5m2fnuz};
constexpr dt int4[] = {dt::int4, dt::uint4};
constexpr dt float8_int4[] = {dt::float8e4m3fn, dt::float8e4m3fnuz, dt::float8e5m2, dt::float8e5m2fnuz, dt::int4, dt::uint4};
constexpr dt bf16_float8[] = {dt::bfloat16, dt::float8e4m3fn, dt::float8e4m3fnuz, dt::float8e5m2, dt::float8e5m2fnuz};
constexpr dt half_float8[] = {dt::bfloat16,    dt::float16,    dt::float8e4m3fn,
                              dt::float8e4m3fnuz, dt::float8e5m2, dt::float8e5m2fnuz};
constexpr dt halves[] = {dt::bfloat16, dt::float16};
constexpr dt narrow_ints[] = {dt::int8, dt::int16, dt::uint8, dt::uint16};
constexpr dt wide_ints[] = {dt::int32, dt::int64, dt::uint32, dt::uint64};
constexpr dt byte_ints[] = {dt::int8, dt::uint8};
constexpr dt signed_ints[] = {dt::int8, dt::int16, dt::int32, dt::int64};
constexpr dt integers[] = {dt::int8, dt::int16, dt::int32, dt::int64, dt::uint8, dt::uint16, dt::uint32, dt::uint64};
constexpr dt topk_ints[] = {dt::int8, dt::int16, dt::int32, dt::uint8, dt::uint16, dt::uint32, dt::uint64};
constexpr dt non_floats[] = {dt::boolean, dt::complex64, dt::complex128, dt::int8,   dt::int16,  dt::int32,
                             dt::int64,   dt::string,    dt::uint8,      dt::uint16, dt::uint32, dt::uint64};
constexpr dt equal_11[] = {dt::float16, dt::float32, dt::float64, dt::int8,  dt::int16,
                           dt::uint8,   dt::uint16,  dt::uint32,  dt::uint64};
constexpr dt pad_13[] = {dt::bfloat16, dt::boolean, dt::complex64, dt::complex128, dt::string};
constexpr dt quantized_21[] = {dt::int16, dt::uint16, dt::int4, dt::uint4};
constexpr dt strings[] = {dt::string};
constexpr dt booleans[] = {dt::boolean};
constexpr dt indices[] = {dt::int64};

// Changes that touch one attribute, shared by the ops that made the same change.
const attribute_removed consumed_inputs{"drop-consumed-inputs", "consumed_inputs"};
const attribute_removed is_test{"drop-is-test", "is_test"};
const attribute_removed spatial{"drop-spatial", "spatial", {std::int64_t{1}}};
const attribute_removed gemm_broadcast{"drop-broadcast", "broadcast"};
const attribute_removed output_sequence{"drop-output-sequence", "output_sequence"};
const attribute_added select_last_index{"select-last-index", "select_last_index", {std::int64_t{0}}};
const attribute_added batch_dims{"batch-dims", "batch_dims", {std::int64_t{0}}};
const attribute_added depth_to_space_mode{"depth-to-space-mode", "mode", {std::string("DCR")}};
const attribute_added count_include_pad{"count-include-pad", "count_include_pad", {std::int64_t{0}}};
const attribute_added ceil_mode{"ceil-mode", "ceil_mode", {std::int64_t{0}}};
const attribute_added dilations{"dilations", "dilations", {std::int64_t{1}, true}};
const attribute_added saturate{"saturate", "saturate", {{}, false, true}};
const attribute_added round_mode{"round-mode", "round_mode", {{}, false, true}};
const attribute_added block_size{"block-size", "block_size", {std::int64_t{0}}};
const attribute_added output_dtype{"output-dtype", "output_dtype", {std::int64_t{0}}};
const attribute_added precision{"precision", "precision", {std::int64_t{0}}};
const attribute_added layout{"rnn-layout", "layout", {std::int64_t{0}}};
const attribute_added largest{"topk-largest", "largest", {std::int64_t{1}}};
const attribute_added sorted{"topk-sorted", "sorted", {std::int64_t{1}}};
const attribute_added shape_start{"shape-start", "start", {std::int64_t{0}}};
const attribute_added shape_end{"shape-end", "end", {}};
const attribute_added sparse_value{"sparse-value", "sparse_value", {}};
const attribute_added reduction{"scatter-reduction", "reduction", {std::string("none")}};
const attribute_added antialias{"resize-antialias", "antialias", {std::int64_t{0}}};
const attribute_added aspect_policy{"resize-aspect-policy", "keep_aspect_ratio_policy", {std::string("stretch")}};
const attribute_added resize_axes{"resize-axes", "axes", {}};
const attribute_added stash_type{"stash-type", "stash_type", {std::int64_t{1}}};
const attribute_values_changed scatter_max_min{"scatter-max-min", "reduction", {"max", "min"}, true};
const attribute_values_changed pad_wrap{"pad-wrap", "mode", {"wrap"}, true};
const attribute_values_changed half_pixel_symmetric{
    "resize-half-pixel-symmetric", "coordinate_transformation_mode", {"half_pixel_symmetric"}, true};
const attribute_values_changed tf_half_pixel_for_nn{
    "resize-tf-half-pixel-for-nn", "coordinate_transformation_mode", {"tf_half_pixel_for_nn"}, false};
const attribute_default_changed concat_axis{"concat-axis", "axis", {std::int64_t{1}}};
const attribute_default_changed roi_align_coordinates{
    "roi-align-coordinates", "coordinate_transformation_mode", {std::string("output_half_pixel")}};
const negative_axes negative_axis{"axis"};
const negative_axes negative_axes_list{"axes"};
const no_conversion scan_batch{"Scan's batch axis and directions change at opset 9"};
const no_conversion tile_inputs{"Tile's tiles and axis inputs become repeats at opset 6"};
const no_conversion lp_p{"attribute 'p' becomes an int at opset 2"};

// The changes Reduce ops other than ReduceSum share.
std::vector<definition> reduce_history(bool integers_at_12, bool booleans_at_20) {
  std::vector<definition> d{{1}, {11, {&negative_axes_list}}};
  if (integers_at_12) d.push_back({12, {}, byte_ints});
  d.push_back({13, {}, bf16});
  d.push_back({18, {&axes_attribute_to_input()}});
  if (booleans_at_20) d.push_back({20, {}, booleans});
  return d;
}

std::vector<op_history> make_table() {
  const adapter* legacy_bcast = &legacy_broadcast();
  std::vector<op_history> t = {
      {"Abs", {{1}, {6, {&consumed_inputs}}, {13, {}, bf16}}},
      {"Acos", {{7}, {22, {}, bf16}}},
      {"Acosh", {{9}, {22, {}, bf16}}},
      {"Add", {{1}, {6, {&consumed_inputs}}, {7, {legacy_bcast}}, {13, {}, bf16}, {14, {}, narrow_ints}}},
      {"And", {{1}, {7, {legacy_bcast}}}},
      {"ArgMax", {{1}, {11, {&negative_axis}}, {12, {&select_last_index}}, {13, {}, bf16}}},
      {"ArgMin", {{1}, {11, {&negative_axis}}, {12, {&select_last_index}}, {13, {}, bf16}}},
      {"Asin", {{7}, {22, {}, bf16}}},
      {"Asinh", {{9}, {22, {}, bf16}}},
      {"Atan", {{7}, {22, {}, bf16}}},
      {"Atanh", {{9}, {22, {}, bf16}}},
      {"AveragePool", {{1}, {7, {&count_include_pad}}, {10, {&ceil_mode}}, {11}, {19, {&dilations}}, {22, {}, bf16}}},
      {"BatchNormalization",
       {{1},
        {6, {&consumed_inputs}},
        {7, {&is_test}},
        {9, {&spatial}},
        {14, {&batch_norm_training_outputs()}, bf16},
        {15, {&batch_norm_parameter_types()}}}},
      {"BitShift", {{11}}},
      {"Cast",
       {{1},
        {6, {&cast_to_number()}},
        {9, {}, strings},
        {13, {}, bf16},
        {19, {&saturate}, float8},
        {21, {}, int4},
        {23},
        {24, {&round_mode}}}},
      {"CastLike", {{15}, {19, {&saturate}, float8}, {21, {}, int4}, {23}, {24, {&round_mode}}}},
      {"Ceil", {{1}, {6, {&consumed_inputs}}, {13, {}, bf16}}},
      {"Celu", {{12}}},
      {"CenterCropPad", {{18}}},
      {"Clip", {{1}, {6, {&consumed_inputs}}, {11, {&clip_bounds_to_inputs()}}, {12, {}, integers}, {13, {}, bf16}}},
      {"Compress", {{9}, {11, {&negative_axis}}}},
      {"Concat", {{1}, {4, {&concat_axis}}, {11, {&negative_axis}}, {13, {}, bf16}}},
      {"Constant",
       {{1},
        {9, {}, non_floats},
        {11, {&sparse_value}},
        {12, {&constant_value_attributes()}},
        {13, {}, bf16},
        {19, {}, float8},
        {21, {}, int4},
        {23},
        {24}}},
      {"ConstantOfShape", {{9}, {20, {}, bf16_float8}, {21, {}, int4}, {23}, {24}}},
      {"Conv", {{1}, {11}, {22, {}, bf16}}},
      {"ConvTranspose", {{1}, {11}, {22, {}, bf16}}},
      {"Cos", {{7}, {22, {}, bf16}}},
      {"Cosh", {{9}, {22, {}, bf16}}},
      {"CumSum", {{11}, {14, {}, halves}}},
      {"DepthToSpace", {{1}, {11, {&depth_to_space_mode}}, {13, {}, bf16}}},
      {"DequantizeLinear",
       {{10},
        {13, {&quantize_per_axis()}},
        {19, {}, half_float8},
        {21, {&block_size}, quantized_21},
        {23, {&output_dtype}},
        {24}}},
      {"Det", {{11}, {22, {}, bf16}}},
      {"Div", {{1}, {6, {&consumed_inputs}}, {7, {legacy_bcast}}, {13, {}, bf16}, {14, {}, narrow_ints}}},
      {"Dropout",
       {{1},
        {6, {&consumed_inputs}},
        {7, {&is_test}},
        {10, {&dropout_mask_type()}, booleans},
        {12, {&dropout_ratio_to_input()}},
        {13, {}, bf16},
        {22, {}, float8}}},
      {"Einsum", {{12}}},
      {"Elu", {{1}, {6, {&consumed_inputs}}, {22, {}, bf16}}},
      {"Equal", {{1}, {7, {legacy_bcast}}, {11, {}, equal_11}, {13, {}, bf16}, {19, {}, strings}}},
      {"Erf", {{9}, {13, {}, bf16}}},
      {"Exp", {{1}, {6, {&consumed_inputs}}, {13, {}, bf16}}},
      {"Expand", {{8}, {13, {}, bf16}}},
      {"EyeLike", {{9}, {22, {}, bf16}}},
      {"Flatten", {{1}, {9, {}, non_floats}, {11, {&negative_axis}}, {13, {}, bf16}, {21, {}, float8_int4}, {23}, {24}}},
      {"Floor", {{1}, {6, {&consumed_inputs}}, {13, {}, bf16}}},
      {"GRU", {{1}, {3}, {7, {&output_sequence}}, {14, {&layout}}, {22, {}, bf16}}},
      {"Gather", {{1}, {11}, {13, {}, bf16}}},
      {"GatherElements", {{11}, {13, {}, bf16}}},
      {"GatherND", {{11}, {12, {&batch_dims}}, {13, {}, bf16}}},
      {"Gelu", {{20}}},
      {"Gemm",
       {{1}, {6}, {7, {&gemm_broadcast}}, {9, {}, wide_ints}, {11, {&gemm_optional_c()}}, {13, {}, bf16}}},
      {"GlobalAveragePool", {{1}, {22, {}, bf16}}},
      {"GlobalLpPool", {{1}, {2, {&lp_p}}, {22, {}, bf16}}},
      {"GlobalMaxPool", {{1}, {22, {}, bf16}}},
      {"Greater", {{1}, {7, {legacy_bcast}}, {9, {}, integers}, {13, {}, bf16}}},
      {"GreaterOrEqual", {{12}, {16, {}, bf16}}},
      {"GroupNormalization", {{18, {}, {}, true}, {21, {&group_norm_per_channel(), &stash_type}}}},
      {"HardSigmoid", {{1}, {6, {&consumed_inputs}}, {22, {}, bf16}}},
      {"HardSwish", {{14}, {22, {}, bf16}}},
      {"Hardmax", {{1}, {11, {&negative_axis}}, {13, {&softmax_single_axis()}, bf16}}},
      {"Identity", {{1}, {13, {}, bf16}, {14}, {16}, {19, {}, float8}, {21, {}, int4}, {23}, {24}}},
      {"If", {{1}, {11}, {13}, {16, {}, bf16}, {19, {}, float8}, {21, {}, int4}, {23}, {24}}},
      {"InstanceNormalization", {{1}, {6, {&consumed_inputs}}, {22, {}, bf16}}},
      {"IsInf", {{10}, {20, {}, half_float8}}},
      {"IsNaN", {{9}, {13, {}, bf16}, {20, {}, float8}}},
      {"LRN", {{1}, {13, {}, bf16}}},
      {"LSTM", {{1}, {7, {&output_sequence}}, {14, {&layout}}, {22, {}, bf16}}},
      {"LayerNormalization", {{17}}},
      {"LeakyRelu", {{1}, {6, {&consumed_inputs}}, {16, {}, bf16}}},
      {"Less", {{1}, {7, {legacy_bcast}}, {9, {}, integers}, {13, {}, bf16}}},
      {"LessOrEqual", {{12}, {16, {}, bf16}}},
      {"Log", {{1}, {6, {&consumed_inputs}}, {13, {}, bf16}}},
      {"LogSoftmax", {{1}, {11, {&negative_axis}}, {13, {&softmax_single_axis()}, bf16}}},
      {"Loop", {{1}, {11}, {13}, {16, {}, bf16}, {19, {}, float8}, {21, {}, int4}, {23}, {24}}},
      {"LpNormalization", {{1}, {22, {}, bf16}}},
      {"LpPool", {{1}, {2, {&lp_p}}, {11}, {18, {&ceil_mode, &dilations}}, {22, {}, bf16}}},
      {"MatMul", {{1}, {9, {}, wide_ints}, {13, {}, bf16}}},
      {"Max",
       {{1}, {6, {&consumed_inputs}}, {8, {&variadic_broadcast()}}, {12, {}, integers}, {13, {}, bf16}}},
      {"MaxPool",
       {{1},
        {8, {&max_pool_indices()}, indices},
        {10, {&ceil_mode, &dilations}},
        {11},
        {12, {}, byte_ints},
        {22, {}, bf16}}},
      {"MaxUnpool", {{9}, {11}, {22, {}, bf16}}},
      {"Mean", {{1}, {6, {&consumed_inputs}}, {8, {&variadic_broadcast()}}, {13, {}, bf16}}},
      {"MeanVarianceNormalization", {{9}, {13, {}, bf16}}},
      {"Min",
       {{1}, {6, {&consumed_inputs}}, {8, {&variadic_broadcast()}}, {12, {}, integers}, {13, {}, bf16}}},
      {"Mish", {{18}, {22, {}, bf16}}},
      {"Mod", {{10}, {13, {}, bf16}}},
      {"Mul", {{1}, {6, {&consumed_inputs}}, {7, {legacy_bcast}}, {13, {}, bf16}, {14, {}, narrow_ints}}},
      {"Neg", {{1}, {6, {&consumed_inputs}}, {13, {}, bf16}}},
      {"NonMaxSuppression", {{10}, {11}}},
      {"NonZero", {{9}, {13, {}, bf16}}},
      {"Not", {{1}}},
      {"OneHot", {{9}, {11}}},
      {"Or", {{1}, {7, {legacy_bcast}}}},
      {"PRelu",
       {{1}, {6, {&consumed_inputs}}, {7, {&prelu_slope_broadcast()}}, {9, {}, wide_ints}, {16, {}, bf16}}},
      {"Pad",
       {{1},
        {2, {&pad_paddings_renamed()}},
        {11, {&pad_attributes_to_inputs()}, integers},
        {13, {}, pad_13},
        {18, {&pad_axes_input()}},
        {19, {&pad_wrap}},
        {21, {}, float8_int4},
        {23},
        {24}}},
      {"Pow", {{1}, {7, {legacy_bcast}}, {12, {&pow_exponent_type()}, integers}, {13, {}, bf16}, {15}}},
      {"QuantizeLinear",
       {{10},
        {13, {&quantize_per_axis()}},
        {19, {&saturate}, half_float8},
        {21, {&block_size, &output_dtype}, quantized_21},
        {23, {&precision}},
        {24}}},
      {"RNN", {{1}, {7, {&output_sequence}}, {14, {&layout}}, {22, {}, bf16}}},
      {"Range", {{11}}},
      {"Reciprocal", {{1}, {6, {&consumed_inputs}}, {13, {}, bf16}}},
      {"ReduceL1", reduce_history(false, false)},
      {"ReduceL2", reduce_history(false, false)},
      {"ReduceLogSum", reduce_history(false, false)},
      {"ReduceLogSumExp", reduce_history(false, false)},
      {"ReduceMax", reduce_history(true, true)},
      {"ReduceMean", reduce_history(false, false)},
      {"ReduceMin", reduce_history(true, true)},
      {"ReduceProd", reduce_history(false, false)},
      {"ReduceSum", {{1}, {11, {&negative_axes_list}}, {13, {&axes_attribute_to_input()}, bf16}}},
      {"ReduceSumSquare", reduce_history(false, false)},
      {"Relu", {{1}, {6, {&consumed_inputs}}, {13, {}, bf16}, {14, {}, signed_ints}}},
      {"Reshape",
       {{1},
        {5, {&reshape_shape_to_input()}},
        {13, {}, bf16},
        {14, {&reshape_allowzero()}},
        {19, {}, float8},
        {21, {}, int4},
        {23},
        {24}}},
      {"Resize",
       {{10, {&upsample_to_resize()}},
        {11, {&resize_roi_and_modes()}},
        {13, {&resize_optional_inputs(), &tf_half_pixel_for_nn}, bf16},
        {18, {&antialias, &aspect_policy, &resize_axes}},
        {19, {&half_pixel_symmetric}}}},
      {"RoiAlign", {{10}, {16, {&roi_align_coordinates}}, {22, {}, bf16}}},
      {"Round", {{11}, {22, {}, bf16}}},
      {"Scan", {{8}, {9, {&scan_batch}}, {11}, {16, {}, bf16}, {19, {}, float8}, {21, {}, int4}, {23}, {24}}},
      {"Scatter", {{9}, {11, {&scatter_to_scatter_elements()}, {}, true}}},
      {"ScatterElements",
       {{11, {&scatter_to_scatter_elements()}}, {13, {}, bf16}, {16, {&reduction}}, {18, {&scatter_max_min}}}},
      {"ScatterND", {{11}, {13, {}, bf16}, {16, {&reduction}}, {18, {&scatter_max_min}}}},
      {"Selu", {{1}, {6, {&consumed_inputs}}, {22, {}, bf16}}},
      {"Shape", {{1}, {13, {}, bf16}, {15, {&shape_start, &shape_end}}, {19, {}, float8}, {21, {}, int4}, {23}, {24}}},
      {"Shrink", {{9}}},
      {"Sigmoid", {{1}, {6, {&consumed_inputs}}, {13, {}, bf16}}},
      {"Sign", {{9}, {13, {}, bf16}}},
      {"Sin", {{7}, {22, {}, bf16}}},
      {"Sinh", {{9}, {22, {}, bf16}}},
      {"Size", {{1}, {13, {}, bf16}, {19, {}, float8}, {21, {}, int4}, {23}, {24}}},
      {"Slice", {{1}, {10, {&slice_attributes_to_inputs()}}, {11, {&slice_negative_axes()}}, {13, {}, bf16}}},
      {"Softmax", {{1}, {11, {&negative_axis}}, {13, {&softmax_single_axis()}, bf16}}},
      {"Softplus", {{1}, {22, {}, bf16}}},
      {"Softsign", {{1}, {22, {}, bf16}}},
      {"SpaceToDepth", {{1}, {13, {}, bf16}}},
      {"Split",
       {{1},
        {2, {&split_input_to_attribute()}},
        {11, {&negative_axis}},
        {13, {&split_sizes_to_input()}, bf16},
        {18, {&split_num_outputs()}}}},
      {"Sqrt", {{1}, {6, {&consumed_inputs}}, {13, {}, bf16}}},
      {"Squeeze",
       {{1}, {11, {&negative_axes_list}}, {13, {&axes_attribute_to_input()}, bf16}, {21, {}, float8_int4}, {23}, {24}}},
      {"Sub", {{1}, {6, {&consumed_inputs}}, {7, {legacy_bcast}}, {13, {}, bf16}, {14, {}, narrow_ints}}},
      {"Sum", {{1}, {6, {&consumed_inputs}}, {8, {&variadic_broadcast()}}, {13, {}, bf16}}},
      {"Tan", {{7}, {22, {}, bf16}}},
      {"Tanh", {{1}, {6, {&consumed_inputs}}, {13, {}, bf16}}},
      {"ThresholdedRelu", {{10}, {22, {}, bf16}}},
      {"Tile", {{1}, {6, {&tile_inputs}}, {13, {}, bf16}}},
      {"TopK",
       {{1}, {10, {&topk_k_to_input()}}, {11, {&largest, &sorted}, topk_ints}, {24, {}, bf16}}},
      {"Transpose", {{1}, {13, {}, bf16}, {21, {}, float8_int4}, {23}, {24}}},
      {"Trilu", {{14}}},
      {"Unsqueeze",
       {{1}, {11, {&negative_axes_list}}, {13, {&axes_attribute_to_input()}, bf16}, {21, {}, float8_int4}, {23}, {24}}},
      {"Upsample",
       {{1}, {7, {&upsample_scales_attribute()}}, {9, {&upsample_scales_to_input()}}, {10, {&upsample_to_resize()}, {}, true}}},
      {"Where", {{9}, {16, {}, bf16}}},
      {"Xor", {{1}, {7, {legacy_bcast}}}},
  };
  std::sort(t.begin(), t.end(), [](const op_history& a, const op_history& b) { return a.op < b.op; });
  return t;
}

const std::vector<op_history>& table() {
  static const std::vector<op_history> t = make_table();
  return t;
}

}  // namespace

std::span<const op_history> all_histories() { return table(); }

const op_history* find_history(std::string_view op) {
  const std::vector<op_history>& t = table();
  auto it = std::lower_bound(t.begin(), t.end(), op, [](const op_history& h, std::string_view o) { return h.op < o; });
  return it != t.end() && it->op == op ? &*it : nullptr;
}

const definition* definition_at(const op_history& h, std::int64_t opset) {
  const definition* found = nullptr;
  for (const definition& d : h.definitions) {
    if (d.since <= opset) found = &d;
  }
  return found;
}

}  // namespace inferopt::ir::opset
