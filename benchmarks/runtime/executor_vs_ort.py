#!/usr/bin/env python3
"""Latency of inferopt's executor against onnxruntime, in one run, alternating.

For each model: `inferopt optimize -O<level>` (default -O3), then for each thread count,
rounds that alternate `inferopt bench --json --profile` on the optimized file and onnxruntime
(ORT_ENABLE_ALL, sequential execution, the same thread count) on the original file (or the
optimized one with --ort-on optimized), on the same inputs: float inputs a ramp, integer
inputs seeded token ids below 100, inputs named *mask* ones; symbolic dims are 1, or --seq
for the second dim of integer inputs. Prints a Markdown table (P50s, the ratio per thread
count, the executor's 1 -> 2 thread scaling) and the executor's per-op profile.

  benchmarks/runtime/executor_vs_ort.py --cli build/bin/inferopt MODEL.onnx [...] --threads 1 2
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
import onnx.numpy_helper as nh
import onnxruntime as ort

ORT_TYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
             "tensor(bool)": np.bool_, "tensor(double)": np.float64}


def make_inputs(path, seq):
    """One seeded feed for every input of the model at `path`."""
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for inp in sess.get_inputs():
        dtype = ORT_TYPES[inp.type]
        integer = np.issubdtype(dtype, np.integer)
        shape = [d if isinstance(d, int) else (seq if integer and i == 1 else 1) for i, d in enumerate(inp.shape)]
        n = int(np.prod(shape))
        if "mask" in inp.name:
            value = np.ones(shape, dtype)
        elif integer:
            value = rng.integers(0, 100, size=shape).astype(dtype)
        else:
            value = (np.arange(n, dtype=np.float64) / max(n, 1)).astype(dtype).reshape(shape)
        feeds[inp.name] = value
    return feeds


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def ort_p50(sess, feeds, iters, warmup):
    for _ in range(warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1000.0)
    return statistics.median(times)


def inferopt_bench(cli, path, threads, iters, warmup, input_dir, extra=()):
    cmd = [cli, "bench", str(path), "--json", "--profile", "--threads", str(threads), "--iters", str(iters),
           "--warmup", str(warmup), "--input-dir", str(input_dir), *extra]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def write_inputs(feeds, folder):
    folder.mkdir()
    for i, (name, value) in enumerate(feeds.items()):
        (folder / f"input_{i}.pb").write_bytes(nh.from_array(value, name).SerializeToString())


def measure(args, model, tmp):
    """{threads: (inferopt P50, onnxruntime P50, inferopt per-op profile, P50 with --variant or None)}."""
    opt = tmp / (model.stem + f".O{args.level}.onnx")
    subprocess.run([args.cli, "optimize", str(model), "-o", str(opt), f"-O{args.level}"], check=True,
                   capture_output=True)
    feeds = make_inputs(model, args.seq)
    input_dir = tmp / (model.stem + "_inputs")
    write_inputs(feeds, input_dir)
    result = {}
    for threads in args.threads:
        sess = ort_session(opt if args.ort_on == "optimized" else model, threads)
        ours, theirs, variant, profile = [], [], [], {}
        for _ in range(args.rounds):
            j = inferopt_bench(args.cli, opt, threads, args.iters, args.warmup, input_dir)
            ours.append(j["p50_ms"])
            profile = j.get("profile_ms", {})
            theirs.append(ort_p50(sess, feeds, args.iters, args.warmup))
            if args.variant:
                variant.append(inferopt_bench(args.cli, opt, threads, args.iters, args.warmup, input_dir,
                                              args.variant.split())["p50_ms"])
        result[threads] = (statistics.median(ours), statistics.median(theirs), profile,
                           statistics.median(variant) if variant else None)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--level", default="3", choices=["1", "2", "3"])
    ap.add_argument("--seq", type=int, default=128, help="sequence length of integer (token) inputs")
    ap.add_argument("--ort-on", default="original", choices=["original", "optimized"])
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--variant", default="", help="bench flags of a third candidate in every round, e.g. --no-winograd")
    ap.add_argument("models", nargs="+", type=Path)
    args = ap.parse_args()
    print(f"onnxruntime {ort.__version__} on the {args.ort_on} model, inferopt on -O{args.level}; "
          f"{args.rounds} rounds x {args.iters} runs, alternating\n")
    extra = f" | {{t}} thr ratio with {args.variant}" if args.variant else ""
    head = " | ".join(f"{t} thr inferopt ms | {t} thr ORT ms | {t} thr ratio" + extra.format(t=t) for t in args.threads)
    print(f"| model | {head} | inferopt {args.threads[0]}->{args.threads[-1]} thr scaling |")
    print("|---" * (2 + (4 if args.variant else 3) * len(args.threads)) + "|")
    profiles = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            result = measure(args, model, Path(tmp))
            cells = " | ".join(f"{a:.2f} | {b:.2f} | **{a / b:.2f}**" + (f" | {v / b:.2f}" if v else "")
                               for a, b, _, v in result.values())
            first, last = result[args.threads[0]][0], result[args.threads[-1]][0]
            print(f"| {model.stem} | {cells} | {first / last:.2f}x |")
            sys.stdout.flush()
            profiles[model.stem] = result[args.threads[0]][2]
    if args.no_profile:
        return
    for model, prof in profiles.items():
        total = sum(prof.values()) or 1.0
        print(f"\nper-op profile of inferopt on {model}, {args.threads[0]} thread(s) (ms per run, share):")
        for op, t in sorted(prof.items(), key=lambda kv: -kv[1])[:12]:
            print(f"  {op:28s} {t:9.3f} {100 * t / total:6.1f}%")


if __name__ == "__main__":
    main()
