#pragma once
/// The quantization module: calibration statistics and calibrators, range files, QDQ INT8
/// quantization with its per-layer error report, and the float16 pass.

#include "inferopt/quant/calibrate.hpp"
#include "inferopt/quant/calibration_state.hpp"
#include "inferopt/quant/calibrators.hpp"
#include "inferopt/quant/qdq.hpp"
#include "inferopt/quant/quant_params.hpp"
#include "inferopt/quant/quantization_error.hpp"
#include "inferopt/quant/range_json.hpp"
#include "inferopt/quant/register.hpp"
#include "inferopt/quant/statistics.hpp"
#include "inferopt/quant/tensor_range.hpp"
#include "inferopt/quant/to_fp16.hpp"
#include "inferopt/quant/trt_calibration_cache.hpp"
