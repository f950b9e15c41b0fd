#!/usr/bin/env bash
# Builds and runs every GPU test and benchmark, within 8 minutes on the GPU machine.
#
#   benchmarks/gpu_check.sh --fetch   On a Debian machine with network (as root, or with apt
#                                     access): downloads Catch2, Eigen and Google Benchmark as
#                                     .debs and unpacks them into .gpu-deps/ (ignored by git).
#   benchmarks/gpu_check.sh [OUT]     On the GPU machine, which has CUDA, CMake and ninja but no
#                                     network and none of our Debian packages. It configures
#                                     without ONNX (only memory and sparse need a GPU, and they
#                                     need nothing of the IR), builds the GPU tests and
#                                     benchmarks, runs `ctest -L gpu`, every GPU benchmark and
#                                     compute-sanitizer's memcheck on sparse_gpu_tests (when the
#                                     machine has compute-sanitizer), and writes logs and JSON
#                                     results to OUT (default build-gpu/out).
#   benchmarks/gpu_check.sh --build-only [OUT]
#                                     Configures and builds as above, runs nothing: the same
#                                     build on a machine without a GPU (a dry run).
#
# Environment: GPU_CHECK_ARCHS, the CUDA architectures (default 90, the H200's; "80;90" for
# both the CMake default builds), GPU_CHECK_JOBS, ninja's -j (default: ninja's own).
#
# Time: everything after the start counts against one budget of 450 s (8 minutes less a
# margin). Each step runs under `timeout` with its own cap or what is left of the budget,
# whichever is less; a step that times out, or finds no time left, fails the check, and the
# steps after it still run if time is left. Caps: ctest 120 s (60 s a test), sparse_gpu_bench
# 150 s (9 cases of 20 fixed iterations), memory_device_pool_bench 90 s (20 fixed iterations),
# memcheck 150 s.
#
# With the device tool: run(command="benchmarks/gpu_check.sh $OUT", carry=[".gpu-deps"]).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
deps="$repo/.gpu-deps"
packages=(catch2 libeigen3-dev libbenchmark-dev libbenchmark1debian)

if [[ "${1:-}" == "--fetch" ]]; then
  rm -rf "$deps"
  mkdir -p "$deps/debs" "$deps/unpacked"
  (cd "$deps/debs" && apt-get download "${packages[@]}")
  for deb in "$deps"/debs/*.deb; do dpkg -x "$deb" "$deps/unpacked"; done
  rm -rf "$deps/debs"
  echo "gpu_check: unpacked ${packages[*]} into .gpu-deps/unpacked ($(du -sh "$deps" | cut -f1))"
  exit 0
fi
build_only=0
if [[ "${1:-}" == "--build-only" ]]; then
  build_only=1
  shift
fi

out="${1:-$repo/build-gpu/out}"
mkdir -p "$out"
out=$(cd "$out" && pwd)
[[ -d "$deps/unpacked/usr" ]] || { echo "gpu_check: .gpu-deps/ is missing; run benchmarks/gpu_check.sh --fetch first" >&2; exit 2; }
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
start=$SECONDS
deadline=$((start + 450))
if ((build_only == 0)); then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "$out/gpu.txt" || true
fi

prefix="$deps/unpacked/usr"
multiarch_lib="$(ls -d "$prefix"/lib/*-linux-gnu 2>/dev/null | head -n1)"
export LD_LIBRARY_PATH="${multiarch_lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
build="$repo/build-gpu"
jobs=()
[[ -n "${GPU_CHECK_JOBS:-}" ]] && jobs=(-j "$GPU_CHECK_JOBS")
status=0

# step NAME CAP LOG COMMAND...: runs COMMAND under `timeout` (CAP seconds or what is left of
# the budget), output to LOG; prints its last lines and notes a failure in `status`.
step() {
  local name=$1 cap=$2 log=$3
  shift 3
  local left=$((deadline - SECONDS))
  if ((left < 5)); then
    echo "gpu_check: $name not run: the time budget is spent" | tee "$log"
    status=1
    return
  fi
  local limit=$((cap < left ? cap : left))
  local rc=0
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1 || rc=$?
  tail -n "${tail_lines:-12}" "$log"
  if ((rc == 124 || rc == 137)); then
    echo "gpu_check: $name timed out after $limit s" | tee -a "$log"
    status=1
  elif ((rc != 0)); then
    echo "gpu_check: $name failed (exit code $rc)"
    status=1
  fi
}

# Debian's Catch2 and Eigen install their CMake packages under share/ and lib/cmake/; naming
# them one by one is sturdier than trusting the prefix search of whatever CMake is there.
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DINFEROPT_WITH_ONNX=OFF -DINFEROPT_WITH_CUDA=ON -DINFEROPT_BUILD_EXAMPLES=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="${GPU_CHECK_ARCHS:-90}" \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCatch2_DIR="$prefix/lib/cmake/Catch2" \
  -DEigen3_DIR="$prefix/share/eigen3/cmake" \
  -Dbenchmark_DIR="${multiarch_lib}/cmake/benchmark" >"$out/configure.log" 2>&1 || {
  tail -n 20 "$out/configure.log"
  echo "gpu_check: configure failed"
  exit 1
}
tail -n 3 "$out/configure.log"

# Every target that needs a device: the gpu-labelled test programs and the device benchmarks.
targets=$(ninja -C "$build" -t targets all)
gpu_tests=()
gpu_benches=()
for t in memory_gpu_tests sparse_gpu_tests; do
  if grep -q "^$t:" <<<"$targets"; then gpu_tests+=("$t"); else echo "gpu_check: no target $t"; status=1; fi
done
for b in sparse_gpu_bench memory_device_pool_bench; do
  if grep -q "^$b:" <<<"$targets"; then gpu_benches+=("$b"); else echo "gpu_check: no target $b"; status=1; fi
done
step build $((deadline - SECONDS)) "$out/build.log" ninja -C "$build" "${jobs[@]}" "${gpu_tests[@]}" "${gpu_benches[@]}"
echo "gpu_check: configured and built in $((SECONDS - start)) s (${gpu_tests[*]} ${gpu_benches[*]})"
if ((status != 0)); then
  echo "gpu_check: build failed, status $status"
  exit "$status"
fi
if ((build_only == 1)); then exit 0; fi

# The tests. On this machine a skipped test (exit code 4: no device) is a failure: the check
# is there to run them.
tail_lines=15 step "ctest -L gpu" 120 "$out/ctest.log" \
  bash -c 'cd "$1" && ctest -L gpu --timeout 60 --output-on-failure' _ "$build"
if ! grep -q "tests passed" "$out/ctest.log"; then status=1; fi
if grep -qE "\(Skipped\)|Not Run" "$out/ctest.log"; then
  echo "gpu_check: some GPU tests were skipped or not run (no device visible to them?)"
  status=1
fi

# The benchmarks: JSON for docs/BENCHMARKS.md; sparse_gpu_bench ends with the break-even
# sparsities for cuda::break_even_table, also kept in sparse_break_even.txt.
for b in "${gpu_benches[@]}"; do
  cap=90
  [[ "$b" == sparse_gpu_bench ]] && cap=150
  tail_lines=20 step "$b" "$cap" "$out/$b.log" \
    "$build/bin/$b" --benchmark_out="$out/$b.json" --benchmark_out_format=json
done
if [[ -f "$out/sparse_gpu_bench.log" ]]; then
  sed -n '/^break-even/,$p' "$out/sparse_gpu_bench.log" >"$out/sparse_break_even.txt"
fi

# compute-sanitizer's memcheck on the sparse kernels (out-of-bounds and misaligned device
# accesses, CUDA API errors), when the toolkit on this machine has it.
sanitizer=$(command -v compute-sanitizer || true)
[[ -z "$sanitizer" && -x "$(dirname "$(command -v nvcc)")/compute-sanitizer" ]] &&
  sanitizer="$(dirname "$(command -v nvcc)")/compute-sanitizer"
if [[ -n "$sanitizer" && " ${gpu_tests[*]} " == *" sparse_gpu_tests "* ]]; then
  step "compute-sanitizer memcheck sparse_gpu_tests" 150 "$out/memcheck.log" \
    "$sanitizer" --tool memcheck --error-exitcode 1 --print-limit 20 "$build/tests/sparse_gpu_tests"
  grep -q "ERROR SUMMARY: 0 errors" "$out/memcheck.log" || status=1
else
  echo "gpu_check: compute-sanitizer not found: memcheck not run" | tee "$out/memcheck.log"
fi

echo "gpu_check: finished in $((SECONDS - start)) s, status $status"
exit "$status"
