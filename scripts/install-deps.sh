#!/usr/bin/env bash
# Installs what inferopt needs from Debian 12 packages, skipping what is already there.
#   scripts/install-deps.sh            build dependencies
#   scripts/install-deps.sh --python   also a virtual environment (.venv) with the test
#                                      oracles: onnx, onnxruntime, numpy, tokenizers (PyPI), and
#                                      what the Python package builds and tests with: pybind11,
#                                      scikit-build-core, pytest, ray
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config git lld
          libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
          libeigen3-dev catch2 libbenchmark-dev libcli11-dev nlohmann-json3-dev libfmt-dev
          libdnnl-dev ocl-icd-opencl-dev libutf8proc-dev libcpp-httplib-dev libboost-dev
          python3 python3-venv python3-pip python3-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${1:-}" = "--python" ]; then
  if ! .venv/bin/python -c "import onnx, onnxruntime, numpy, tokenizers" 2>/dev/null; then
    echo "creating .venv with onnx, onnxruntime, numpy, tokenizers"
    python3 -m venv .venv
    .venv/bin/python -m pip install -q --disable-pip-version-check onnx onnxruntime numpy tokenizers
  fi
  if ! .venv/bin/python -c "import pybind11, scikit_build_core, pytest, ray" 2>/dev/null; then
    echo "adding pybind11, scikit-build-core, pytest and ray to .venv"
    .venv/bin/python -m pip install -q --disable-pip-version-check "pybind11>=2.12" scikit-build-core pytest ray
  fi
fi
