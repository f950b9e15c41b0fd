#pragma once
/// The memory module: resources, the caching pool, adaptors and the static arena planner.
/// Header-only (CMake target inferopt::memory). The CUDA resources (memory/cuda/) are included
/// separately and are compiled, in inferopt::memory_cuda, only in CUDA builds.

#include "inferopt/memory/arena_planner.hpp"
#include "inferopt/memory/caching_pool.hpp"
#include "inferopt/memory/host_resource.hpp"
#include "inferopt/memory/limiting_adaptor.hpp"
#include "inferopt/memory/memory_resource.hpp"
#include "inferopt/memory/out_of_memory.hpp"
#include "inferopt/memory/pmr_adaptor.hpp"
#include "inferopt/memory/statistics_adaptor.hpp"
#include "inferopt/memory/stream_events.hpp"
#include "inferopt/memory/stream_ref.hpp"
#include "inferopt/memory/tracking_adaptor.hpp"
