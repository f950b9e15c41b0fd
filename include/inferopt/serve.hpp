#pragma once
/// The serve module (in progress, issue 21): what a server needs beside the executor. So far:
/// an exact-match response cache with a byte budget, a time to live and O(1) LRU, a lock-free
/// log-linear histogram for latency and batch-size percentiles, and the Prometheus text
/// exposition. Header-only (CMake target inferopt::serve, on inferopt::runtime).

#include "inferopt/serve/batcher.hpp"
#include "inferopt/serve/bounded_queue.hpp"
#include "inferopt/serve/histogram.hpp"
#include "inferopt/serve/pipeline.hpp"
#include "inferopt/serve/prometheus.hpp"
#include "inferopt/serve/rejection.hpp"
#include "inferopt/serve/request_key.hpp"
#include "inferopt/serve/response_cache.hpp"
