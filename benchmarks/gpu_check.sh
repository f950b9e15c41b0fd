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
#                                     benchmarks, runs `ctest -L gpu` and every GPU benchmark,
#                                     and writes logs and JSON results to OUT (default
#                                     build-gpu/out).
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

out="${1:-$repo/build-gpu/out}"
mkdir -p "$out"
[[ -d "$deps/unpacked/usr" ]] || { echo "gpu_check: .gpu-deps/ is missing; run benchmarks/gpu_check.sh --fetch first" >&2; exit 2; }
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt" || true

prefix="$deps/unpacked/usr"
multiarch_lib="$(ls -d "$prefix"/lib/*-linux-gnu 2>/dev/null | head -n1)"
export LD_LIBRARY_PATH="${multiarch_lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
build="$repo/build-gpu"
start=$SECONDS

# Debian's Catch2 and Eigen install their CMake packages under share/ and lib/cmake/; naming
# them one by one is sturdier than trusting the prefix search of whatever CMake is there.
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DINFEROPT_WITH_ONNX=OFF -DINFEROPT_WITH_CUDA=ON -DINFEROPT_BUILD_EXAMPLES=OFF \
  -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCatch2_DIR="$prefix/lib/cmake/Catch2" \
  -DEigen3_DIR="$prefix/share/eigen3/cmake" \
  -Dbenchmark_DIR="${multiarch_lib}/cmake/benchmark" 2>&1 | tee "$out/configure.log" | tail -n 3

# Every target that needs a device: the gpu-labelled test programs and the device benchmarks.
gpu_tests=(memory_gpu_tests)
gpu_benches=(memory_device_pool_bench)
for t in sparse_gpu_tests; do
  if ninja -C "$build" -t targets all | grep -q "^$t:"; then gpu_tests+=("$t"); fi
done
for b in sparse_gpu_bench; do
  if ninja -C "$build" -t targets all | grep -q "^$b:"; then gpu_benches+=("$b"); fi
done
ninja -C "$build" "${gpu_tests[@]}" "${gpu_benches[@]}" 2>&1 | tee "$out/build.log" | tail -n 2
echo "gpu_check: built in $((SECONDS - start)) s"

status=0
(cd "$build" && ctest -L gpu --output-on-failure 2>&1) | tee "$out/ctest.log" | tail -n 15 || status=1
grep -q "tests passed" "$out/ctest.log" || status=1
for b in "${gpu_benches[@]}"; do
  "$build/bin/$b" --benchmark_out="$out/$b.json" --benchmark_out_format=json 2>&1 | tee "$out/$b.log" | tail -n 12 || status=1
done
echo "gpu_check: finished in $((SECONDS - start)) s, status $status"
exit "$status"
