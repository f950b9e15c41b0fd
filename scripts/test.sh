#!/usr/bin/env bash
# The test suite, as CI runs it: build everything, run ctest (unit, CLI, examples, package,
# ONNX Runtime oracles), then rebuild under AddressSanitizer + UBSan for the CLI, IR and
# executor tests (hostile models, conformance suite) and serve, and under ThreadSanitizer for the
# memory module and serve. GPU tests skip cleanly without a device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --python

jobs=$(nproc)
# Sanitizer builds: -O1 (what the sanitizers' docs suggest) and line tables only (all a report's
# stack needs) compile in about 45% of -O2 -g's time (one GEMM kernel file: 145 s -> 63 s).
sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")
python_flag=()
[ -x .venv/bin/python ] && python_flag=(-DINFEROPT_PYTHON="$PWD/.venv/bin/python")

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${python_flag[@]}" >/dev/null
cmake --build build -j "$jobs"
(cd build && ctest -j "$jobs" --output-on-failure -LE 'soak|bench')

# Sanitizers: the CLI on hostile input, the IR's loaders, the executor (ONNX conformance
# suite, light models, kernel tests) and serve (batcher, cache, KServe decoding).
cmake -S . -B build-sanitize -G Ninja "${sanitizer_flags[@]}" -DINFEROPT_SANITIZE=address,undefined \
  -DINFEROPT_BUILD_BENCHMARKS=OFF -DINFEROPT_BUILD_EXAMPLES=OFF -DINFEROPT_WITH_CUDA=OFF >/dev/null
cmake --build build-sanitize -j "$jobs" --target inferopt_cli cli_tests ir_tests runtime_tests conformance_tests serve_tests serve_queue_tests
(cd build-sanitize && ASAN_OPTIONS=detect_leaks=1 ctest -j "$jobs" --output-on-failure -L 'cli|ir|runtime|serve' -LE 'soak|bench')

# ThreadSanitizer: the memory module (caching pool and adaptors are shared across threads) and
# serve's header-only histogram, bounded queue and pipeline. Built without ONNX, which also
# proves those stand alone.
cmake -S . -B build-tsan -G Ninja "${sanitizer_flags[@]}" -DINFEROPT_SANITIZE=thread -DINFEROPT_WITH_ONNX=OFF \
  -DINFEROPT_BUILD_EXAMPLES=OFF -DINFEROPT_BUILD_BENCHMARKS=OFF -DINFEROPT_WITH_CUDA=OFF >/dev/null
cmake --build build-tsan -j "$jobs" --target memory_tests serve_queue_tests
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest -j "$jobs" --output-on-failure -L 'memory|serve')

# ThreadSanitizer on serve's batcher and response cache, which carry runtime tensors: the
# executor's libraries are built too (about 5 minutes on 2 cores), only for these tests.
cmake -S . -B build-tsan-serve -G Ninja "${sanitizer_flags[@]}" -DINFEROPT_SANITIZE=thread \
  -DINFEROPT_BUILD_EXAMPLES=OFF -DINFEROPT_BUILD_BENCHMARKS=OFF -DINFEROPT_WITH_CUDA=OFF >/dev/null
cmake --build build-tsan-serve -j "$jobs" --target serve_tests
(cd build-tsan-serve && TSAN_OPTIONS=halt_on_error=1 ctest -j "$jobs" --output-on-failure -R '^(batcher|response cache|request keys)')
