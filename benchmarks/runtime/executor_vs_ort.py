#!/usr/bin/env python3
"""Latency of inferopt's executor against onnxruntime, in one run, alternating.

For each model: `inferopt optimize -O<level>` (default -O3), then for each thread count,
rounds that alternate `inferopt bench --json` on the optimized file and onnxruntime
(ORT_ENABLE_ALL, sequential execution, the same thread count) on the original file (or the
optimized one with --ort-on optimized), on the same inputs: float inputs a ramp, integer
inputs seeded token ids below 100, inputs named *mask* ones; symbolic dims are 1, or --seq
for the second dim of integer inputs. Prints a Markdown table (P50s, the ratio per thread
count, the executor's 1 -> 2 thread scaling) and the executor's per-op profile (from one more,
untimed `bench --profile` call). Each round runs the two in turn, the order flipped every round,
and the ratio is the median of the rounds' paired ratios. 1-thread runs of both are pinned to
one core (--pin, default 0).

  benchmarks/runtime/executor_vs_ort.py --cli build/bin/inferopt MODEL.onnx [...] --threads 1 2
"""
import argparse
import json
import os
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


def inferopt_bench(cli, path, threads, iters, warmup, input_dir, extra=(), cpu=None):
    """`inferopt bench --json` (pinned to `cpu` when given); timed runs are never profiled."""
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    cmd = [*pin, cli, "bench", str(path), "--json", "--threads", str(threads), "--iters", str(iters),
           "--warmup", str(warmup), "--input-dir", str(input_dir), *extra]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


class pinned:
    """This process (onnxruntime's single-thread runs happen on the calling thread) on `cpu`."""

    def __init__(self, cpu):
        self.cpu = cpu

    def __enter__(self):
        self.saved = os.sched_getaffinity(0)
        if self.cpu is not None:
            os.sched_setaffinity(0, {self.cpu})

    def __exit__(self, *exc):
        os.sched_setaffinity(0, self.saved)


def write_inputs(feeds, folder):
    folder.mkdir()
    for i, (name, value) in enumerate(feeds.items()):
        (folder / f"input_{i}.pb").write_bytes(nh.from_array(value, name).SerializeToString())


def measure(args, model, tmp):
    """{threads: (inferopt P50, onnxruntime P50, inferopt per-op profile, --variant's ratio or None, ratio)}:
    P50s are medians over rounds, ratios medians of each round's paired ratio."""
    opt = tmp / (model.stem + f".O{args.level}.onnx")
    subprocess.run([args.cli, "optimize", str(model), "-o", str(opt), f"-O{args.level}"], check=True,
                   capture_output=True)
    feeds = make_inputs(model, args.seq)
    input_dir = tmp / (model.stem + "_inputs")
    write_inputs(feeds, input_dir)
    result = {}
    for threads in args.threads:
        # One thread pinned to one core for both runtimes: the vCPUs of a shared VM run at
        # different speeds, and each process would otherwise land on either.
        cpu = args.pin if threads == 1 else None
        sess = ort_session(opt if args.ort_on == "optimized" else model, threads)
        ours, theirs, variant, ratios = [], [], [], []
        for r in range(args.rounds):
            def run_ours():
                ours.append(inferopt_bench(args.cli, opt, threads, args.iters, args.warmup, input_dir, cpu=cpu)["p50_ms"])

            def run_theirs():
                with pinned(cpu):
                    theirs.append(ort_p50(sess, feeds, args.iters, args.warmup))

            # Each round's pair in turn order, so that neither runtime always runs first.
            for run in ((run_ours, run_theirs) if r % 2 == 0 else (run_theirs, run_ours)):
                run()
            ratios.append(ours[-1] / theirs[-1])
            if args.variant:
                variant.append(inferopt_bench(args.cli, opt, threads, args.iters, args.warmup, input_dir,
                                              args.variant.split(), cpu=cpu)["p50_ms"] / theirs[-1])
        profile = {} if args.no_profile else inferopt_bench(args.cli, opt, threads, args.iters, args.warmup, input_dir,
                                                             ["--profile"], cpu=cpu).get("profile_ms", {})
        result[threads] = (statistics.median(ours), statistics.median(theirs), profile,
                           statistics.median(variant) if variant else None, statistics.median(ratios))
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
    ap.add_argument("--pin", type=int, default=0,
                    help="core both runtimes' 1-thread runs are pinned to (-1: not pinned)")
    ap.add_argument("models", nargs="+", type=Path)
    args = ap.parse_args()
    args.pin = None if args.pin < 0 else args.pin
    print(f"onnxruntime {ort.__version__} on the {args.ort_on} model, inferopt on -O{args.level}; "
          f"{args.rounds} rounds x {args.iters} runs, alternating (each round's order flipped); ratio: median of the "
          f"rounds' paired ratios; 1 thread {'on core ' + str(args.pin) if args.pin is not None else 'unpinned'}\n")
    extra = f" | {{t}} thr ratio with {args.variant}" if args.variant else ""
    head = " | ".join(f"{t} thr inferopt ms | {t} thr ORT ms | {t} thr ratio" + extra.format(t=t) for t in args.threads)
    print(f"| model | {head} | inferopt {args.threads[0]}->{args.threads[-1]} thr scaling |")
    print("|---" * (2 + (4 if args.variant else 3) * len(args.threads)) + "|")
    profiles = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            result = measure(args, model, Path(tmp))
            cells = " | ".join(f"{a:.2f} | {b:.2f} | **{q:.2f}**" + (f" | {v:.2f}" if v else "")
                               for a, b, _, v, q in result.values())
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
