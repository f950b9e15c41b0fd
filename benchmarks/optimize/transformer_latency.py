#!/usr/bin/env python3
"""Latency of a BERT-family export before and after `inferopt optimize -O3`, in one run.

Three contenders on the same input (batch 1, --seq tokens, a padded tail in attention_mask),
alternating rounds so machine noise hits each alike:
  ort/original  onnxruntime (ORT_ENABLE_ALL) on the export as it is;
  ort/O3        onnxruntime (ORT_ENABLE_ALL) on our -O3 output (MultiHeadAttention, Gelu, ...);
  inferopt/O3   our executor (`inferopt bench --json`) on our -O3 output.
Prints a Markdown table of P50s and the ratios against ort/original, per thread count.

  benchmarks/optimize/transformer_latency.py --cli build/bin/inferopt MODEL.onnx --seq 128 --threads 1 2
"""
import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import numpy_helper


def feeds_for(sess, seq):
    rng = np.random.default_rng(0)
    feeds = {}
    for inp in sess.get_inputs():
        shape = [1, seq][: len(inp.shape)]
        if "mask" in inp.name:
            mask = np.ones(shape, np.int64)
            mask[..., seq - seq // 8:] = 0  # a padded tail, as batches of real text have
            feeds[inp.name] = mask
        else:
            feeds[inp.name] = rng.integers(0, 1000, shape).astype(np.int64)
    return feeds


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def ort_p50(sess, feeds, iters):
    sess.run(None, feeds)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def inferopt_p50(cli, model, inputs, threads, iters):
    args = [cli, "bench", str(model), "--json", "--warmup", "1", "--iters", str(iters), "--threads", str(threads)]
    for name, path in inputs.items():
        args += ["--input", f"{name}={path}"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["p50_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("model")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="transformer_latency_"))
    fused = work / "O3.onnx"
    subprocess.run([args.cli, "optimize", "-O3", args.model, "-o", str(fused)], check=True, capture_output=True)
    print("| threads | ort/original ms | ort/O3 ms | inferopt/O3 ms | ort/O3 ÷ original | inferopt/O3 ÷ ort/original |")
    print("|---:|---:|---:|---:|---:|---:|")
    for threads in args.threads:
        original, optimized = ort_session(args.model, threads), ort_session(fused, threads)
        feeds = feeds_for(original, args.seq)
        inputs = {}
        for name, value in feeds.items():
            inputs[name] = work / f"{name}.pb"
            inputs[name].write_bytes(numpy_helper.from_array(value, name).SerializeToString())
        rows = {"original": [], "O3": [], "inferopt": []}
        for _ in range(args.rounds):
            rows["original"].append(ort_p50(original, feeds, args.iters))
            rows["O3"].append(ort_p50(optimized, feeds, args.iters))
            rows["inferopt"].append(inferopt_p50(args.cli, fused, inputs, threads, args.iters))
        p = {k: statistics.median(v) for k, v in rows.items()}
        print(f"| {threads} | {p['original']:.1f} | {p['O3']:.1f} | {p['inferopt']:.1f} | "
              f"{p['O3'] / p['original']:.2f} | {p['inferopt'] / p['original']:.2f} |")


if __name__ == "__main__":
    main()
