#pragma once
/// Every module of inferopt, for programs that want all of it. Each module also has its own
/// umbrella header (inferopt/<module>.hpp); the CUDA parts (memory/cuda/, sparse/cuda/) are
/// included separately, and only in CUDA builds.

#include "inferopt/builtin.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/fusion.hpp"
#include "inferopt/ir.hpp"
#include "inferopt/memory.hpp"
#include "inferopt/pass.hpp"
#include "inferopt/prune.hpp"
#include "inferopt/quant.hpp"
#include "inferopt/runtime.hpp"
#include "inferopt/serve.hpp"
#include "inferopt/sparse.hpp"
#include "inferopt/sparse/sparsify_blocks.hpp"
