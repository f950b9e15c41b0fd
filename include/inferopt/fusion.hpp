#pragma once
/// The fusion passes (each also has its own header under inferopt/fusion/).

#include "inferopt/fusion/eliminate_common_subexpressions.hpp"
#include "inferopt/fusion/eliminate_noop.hpp"
#include "inferopt/fusion/fuse_bn_into_gemm.hpp"
#include "inferopt/fusion/fuse_consecutive_reshapes.hpp"
#include "inferopt/fusion/fuse_consecutive_transposes.hpp"
#include "inferopt/fusion/fuse_conv_activation.hpp"
#include "inferopt/fusion/fuse_conv_bn.hpp"
#include "inferopt/fusion/fuse_conv_mul_add.hpp"
#include "inferopt/fusion/fuse_gemm_activation.hpp"
#include "inferopt/fusion/fuse_gemm_transpose.hpp"
#include "inferopt/fusion/fuse_matmul_add.hpp"
#include "inferopt/fusion/fuse_pad_into_conv.hpp"
#include "inferopt/fusion/register.hpp"
#include "inferopt/fusion/sum_to_add.hpp"
