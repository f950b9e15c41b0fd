#!/usr/bin/env bash
# The Quick start's main job: install what is missing, build, generate the bundled default
# model with inferopt's own code, optimize it and print the report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs" --target inferopt_cli example_00_default_model

out=build/quickstart
mkdir -p "$out"
build/bin/example_00_default_model "$out/default_cnn.onnx"
echo
echo "== inferopt inspect (before) =="
build/bin/inferopt inspect "$out/default_cnn.onnx"
echo
echo "== inferopt optimize -O3: cleanups, Conv+BN / MatMul+Add folding, FusedConv; outputs verified =="
build/bin/inferopt optimize "$out/default_cnn.onnx" -o "$out/default_cnn.opt.onnx" -O3 \
  --verify-each --verify --report "$out/report.json"
echo
echo "== inferopt compare (reference executor, seeded random inputs) =="
build/bin/inferopt compare "$out/default_cnn.onnx" "$out/default_cnn.opt.onnx" --random-inputs 1
echo
echo "== inferopt plan: one static arena for the optimized model's intermediate tensors =="
build/bin/inferopt plan "$out/default_cnn.opt.onnx"
echo
echo "== inferopt bench: before =="
build/bin/inferopt bench "$out/default_cnn.onnx" --iters 30
echo "== inferopt bench: after =="
build/bin/inferopt bench "$out/default_cnn.opt.onnx" --iters 30
echo
echo "== inferopt sparsify --dry-run: block-sparse candidates (its one Gemm is tiny; --min-size 0 shows it anyway) =="
build/bin/inferopt sparsify "$out/default_cnn.opt.onnx" --dry-run --min-size 0 --block 8x8
echo
echo "== inferopt quantize: INT8 QDQ from streaming entropy calibration (32 random batches) =="
build/bin/inferopt quantize "$out/default_cnn.onnx" -o "$out/default_cnn.int8.onnx" --calib-random 32 \
  --method entropy --ranges "$out/ranges.json" --trt-cache "$out/trt.cache" --report "$out/quant_report.json"
echo
echo "== inferopt fp16: float16 weights and compute, float32 inputs/outputs =="
build/bin/inferopt fp16 "$out/default_cnn.onnx" -o "$out/default_cnn.fp16.onnx"
echo
echo "== inferopt prune: 30% of the channels, kept counts rounded up to this CPU's channel block (residual Add and Flatten->Gemm coupling respected) =="
build/bin/inferopt prune "$out/default_cnn.onnx" -o "$out/default_cnn.pruned.onnx" --ratio 0.3
echo
echo "== inferopt prune on a trained digits CNN, BatchNormalization recalibrated on 4 training batches =="
build/bin/inferopt prune tests/data/digits/digits_cnn.onnx -o "$out/digits_cnn.pruned.onnx" --ratio 0.3 --round-to 1 \
  --calib-dir tests/data/digits/calib --report "$out/prune_report.json"
echo
echo "== inferopt serve + loadgen: KServe v2 over HTTP with dynamic batching (a committed ResNet export, symbolic batch) =="
build/bin/inferopt serve tests/models/corpus/resnet_dynbatch_ts.onnx --port 0 --max-batch 16 --max-delay-us 2000 \
  --name resnet >"$out/serve.log" &
server=$!
for _ in $(seq 300); do grep -q "^listening on" "$out/serve.log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$out/serve.log")
build/bin/inferopt loadgen "$url" --model resnet --concurrency 16 --requests 2000
kill -TERM "$server"
wait "$server"
echo
echo "== hostile input: every command validates first (a MaxPool with a zero stride; exit 2, one line) =="
if build/bin/inferopt optimize tests/fuzz/regressions/zero_stride_maxpool.onnx -o "$out/refused.onnx"; then
  echo "quickstart: the hostile model was accepted" >&2
  exit 1
fi
echo
echo "reports: $out/report.json $out/quant_report.json $out/prune_report.json"
