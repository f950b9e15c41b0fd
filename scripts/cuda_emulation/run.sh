#!/usr/bin/env bash
# Builds the sparse module's device tests (tests/sparse/cuda/) against a host emulation of the
# CUDA features its kernels use, and runs them on the CPU. See README.md for what it checks and
# what it cannot.
#
#   scripts/cuda_emulation/run.sh [OUT]                          -O2, OUT defaults to build-emu
#   SANITIZE=address,undefined scripts/cuda_emulation/run.sh build-emu-asan
#   SANITIZE=thread scripts/cuda_emulation/run.sh build-emu-tsan     (races = missing barriers)
#
# Needs g++ with C++20, Catch2 v2 and the CUDA toolkit's headers (not a GPU, not libcudart).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mkdir -p "${1:-$root/build-emu}" && cd "${1:-$root/build-emu}" && pwd)
cuda_include="${CUDA_HOME:-/usr/local/cuda}/include"
mkdir -p "$out/gen" "$out/obj"

flags=(-std=c++20 -pthread -I"$root/include" -I"$root/tests" -isystem "$cuda_include"
       -DINFEROPT_SOURCE_DIR="\"$root\"")
if [[ -n "${SANITIZE:-}" ]]; then
  flags+=(-O1 -g -fno-omit-frame-pointer -fsanitize="$SANITIZE")
else
  flags+=(-O2)
fi

objects=()
compile() {  # compile SOURCE OBJECT [extra flags...]
  local source=$1 object=$2
  shift 2
  nice -n 19 g++ "${flags[@]}" "$@" -c "$source" -o "$object"
  objects+=("$object")
}

cp "$root/src/sparse/cuda/launch.hpp" "$out/gen/sparse_launch.hpp"
for cu in "$root"/cuda/sparse/*.cu; do
  name=$(basename "$cu" .cu)
  python3 "$here/transform.py" "$cu" > "$out/gen/$name.cpp"
  compile "$out/gen/$name.cpp" "$out/obj/kernel_$name.o" -include "$here/emu_cuda.hpp" -I"$out/gen"
done
# The CPU side of the sparse module and the host memory module are header-only (their ISA builds
# carry their own target attributes), so only the CUDA host files need compiling here.
for source in "$root"/src/sparse/cuda/*.cpp "$root"/src/memory/cuda/device.cpp \
              "$root"/src/memory/cuda/device_resource.cpp "$root"/tests/sparse/cuda/*_test.cpp \
              "$root"/tests/support/catch_main.cpp "$here/fake_runtime.cpp"; do
  name=$(basename "$(dirname "$source")")_$(basename "$source" .cpp)
  compile "$source" "$out/obj/$name.o"
done
nice -n 19 g++ "${flags[@]}" "${objects[@]}" -o "$out/sparse_gpu_tests_emulated"
echo "cuda_emulation: built $out/sparse_gpu_tests_emulated"
ASAN_OPTIONS=detect_leaks=0 "$out/sparse_gpu_tests_emulated" "${@:2}"
