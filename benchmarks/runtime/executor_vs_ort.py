#!/usr/bin/env python3
"""Latency of inferopt's reference executor against onnxruntime, in one run.

For each model: `inferopt optimize -O1`, then `inferopt bench --json --profile` on the result
and onnxruntime (ORT_ENABLE_ALL, the same thread count, sequential execution) on the same
file with the same input, alternating rounds so machine noise hits both. Prints a Markdown
table (P50s and the ratio) and the executor's per-op profile.

  benchmarks/runtime/executor_vs_ort.py --cli build/bin/inferopt MODEL.onnx [...] --threads 2
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort


def readme_input(sess):
    inp = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in inp.shape]
    n = int(np.prod(shape))
    return inp.name, (np.arange(n, dtype=np.float64) / n).astype(np.float32).reshape(shape)


def ort_latencies(path, threads, iters, warmup):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    name, x = readme_input(sess)
    for _ in range(warmup):
        sess.run(None, {name: x})
    out = []
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, {name: x})
        out.append((time.perf_counter() - t) * 1000.0)
    return out


def inferopt_bench(cli, path, threads, iters, warmup, input_dir):
    cmd = [cli, "bench", str(path), "--json", "--profile", "--threads", str(threads), "--iters", str(iters),
           "--warmup", str(warmup), "--input-dir", str(input_dir)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    print(f"onnxruntime {ort.__version__}, {args.threads} threads, {args.rounds} rounds x {args.iters} iterations\n")
    print("| model | inferopt P50 ms | onnxruntime P50 ms | ratio (inferopt / ORT) |")
    print("|---|---|---|---|")
    profiles = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for model in args.models:
            model = Path(model)
            opt = tmp / (model.stem + ".O1.onnx")
            subprocess.run([args.cli, "optimize", str(model), "-o", str(opt), "-O1"], check=True, capture_output=True)
            # The same README input for both runtimes, written as a TensorProto.
            import onnx.numpy_helper as nh
            sess = ort.InferenceSession(str(opt), providers=["CPUExecutionProvider"])
            name, x = readme_input(sess)
            input_dir = tmp / (model.stem + "_inputs")
            input_dir.mkdir()
            (input_dir / "input_0.pb").write_bytes(nh.from_array(x, name).SerializeToString())
            ours, theirs = [], []
            for r in range(args.rounds):
                j = inferopt_bench(args.cli, opt, args.threads, args.iters, 3, input_dir)
                ours.append(j["p50_ms"])
                theirs.append(statistics.median(ort_latencies(opt, args.threads, args.iters, 3)))
                profiles[model.stem] = j.get("profile_ms", {})
            a, b = statistics.median(ours), statistics.median(theirs)
            print(f"| {model.stem} | {a:.2f} | {b:.2f} | {a / b:.2f} |")
            sys.stdout.flush()
    for model, prof in profiles.items():
        total = sum(prof.values()) or 1.0
        print(f"\nper-op profile of inferopt on {model} (ms per run, share):")
        for op, t in sorted(prof.items(), key=lambda kv: -kv[1]):
            print(f"  {op:24s} {t:9.3f} {100 * t / total:6.1f}%")


if __name__ == "__main__":
    main()
