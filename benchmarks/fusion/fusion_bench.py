#!/usr/bin/env python3
"""Fusion benchmarks, all measured in one run on the same machine (docs/BENCHMARKS.md):

(a) optimize wall time: `inferopt optimize -O2` (a process: load, passes, save) against
    onnxoptimizer with its fuse and eliminate passes (in-process: onnx.load, optimize,
    onnx.save), on light ResNet-50 and on a ResNet-50 with real-sized random weights (~100 MB);
(b) onnxruntime latency of our -O3 output run with ORT's graph optimizations disabled, against
    the original run with ORT_ENABLE_ALL (ORT fusing the graph itself); goal <= 1.02x;
(c) inferopt executor latency before and after fusion (`inferopt bench`, P50).

Timings alternate between the candidates so that load on a shared machine hits both alike.
Prints a Markdown table and writes JSON with every sample.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

try:
    import onnxoptimizer
except ImportError:  # (a) is skipped without it
    onnxoptimizer = None



def onnxoptimizer_passes():
    """Every fuse_* and eliminate_* pass this onnxoptimizer has (its whole fusion toolbox)."""
    return sorted(p for p in onnxoptimizer.get_available_passes() if p.startswith(("fuse_", "eliminate_")))


def real_sized_resnet50(light, dst, seed=0):
    """light ResNet-50 with every ConstantOfShape weight replaced by a random initializer."""
    model = onnx.load(str(light))
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    uses = {}
    for n in g.node:
        for k, name in enumerate(n.input):
            uses.setdefault(name, []).append((n.op_type, k))
    rng = np.random.default_rng(seed)
    keep = []
    for n in g.node:
        if n.op_type != "ConstantOfShape" or n.input[0] not in inits:
            keep.append(n)
            continue
        shape = [int(d) for d in numpy_helper.to_array(inits[n.input[0]]).reshape(-1)]
        users = uses.get(n.output[0], [])
        if any(op == "BatchNormalization" and k in (1, 4) for op, k in users):
            values = rng.uniform(0.5, 1.5, shape)
        elif len(shape) >= 2:
            values = rng.standard_normal(shape) * np.sqrt(2.0 / max(int(np.prod(shape[1:])), 1))
        else:
            values = rng.standard_normal(shape) * 0.1
        g.initializer.append(numpy_helper.from_array(values.astype(np.float32), n.output[0]))
    del g.node[:]
    g.node.extend(keep)
    onnx.save(model, str(dst))


def op_histogram(path):
    counts = {}
    for n in onnx.load(str(path), load_external_data=False).graph.node:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    return counts


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(cmd):
    subprocess.run([str(c) for c in cmd], check=True, stdout=subprocess.DEVNULL)


def optimize_wall_times(cli, model, work, repeats):
    """(a): alternating samples of inferopt -O2 and onnxoptimizer, load to save."""
    ours, theirs = [], []
    ours_out, theirs_out = work / "inferopt_O2.onnx", work / "onnxoptimizer.onnx"
    passes = onnxoptimizer_passes() if onnxoptimizer else []

    def with_onnxoptimizer():
        m = onnx.load(str(model))
        onnx.save(onnxoptimizer.optimize(m, passes), str(theirs_out))

    for _ in range(repeats):
        ours.append(timed(lambda: run([cli, "optimize", model, "-o", ours_out, "-O2"])))
        if onnxoptimizer:
            theirs.append(timed(with_onnxoptimizer))
    result = {"inferopt_s": ours, "inferopt_nodes": sum(op_histogram(ours_out).values())}
    if onnxoptimizer:
        result.update(onnxoptimizer_s=theirs, onnxoptimizer_nodes=sum(op_histogram(theirs_out).values()))
    return result


def ort_session(path, level, threads):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def ort_latencies(original, fused, threads, warmup, iters):
    """(b): P50 latency of fused (ORT optimizations off) vs original under ORT_ENABLE_ALL, and
    under ORT_ENABLE_EXTENDED (ORT's fusions without its NCHWc layout transformation)."""
    sessions = {
        "ort_enable_all_ms": ort_session(original, ort.GraphOptimizationLevel.ORT_ENABLE_ALL, threads),
        "ort_enable_extended_ms": ort_session(original, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, threads),
        "inferopt_O3_ort_disable_all_ms": ort_session(fused, ort.GraphOptimizationLevel.ORT_DISABLE_ALL, threads),
    }
    inp = sessions["ort_enable_all_ms"].get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in inp.shape]
    feed = {inp.name: np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
    ours = sessions["inferopt_O3_ort_disable_all_ms"].run(None, feed)[0]
    max_diff = float(np.max(np.abs(sessions["ort_enable_all_ms"].run(None, feed)[0] - ours)))
    for _ in range(warmup):
        for s in sessions.values():
            s.run(None, feed)
    samples = {k: [] for k in sessions}
    for _ in range(iters):
        for k, s in sessions.items():
            samples[k].append(timed(lambda: s.run(None, feed)) * 1e3)
    samples["max_abs_diff"] = max_diff
    return samples


def bench_p50(cli, model, threads, iters):
    out = subprocess.run([str(cli), "bench", str(model), "--json", "--threads", str(threads), "--iters", str(iters),
                          "--warmup", "3"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["p50_ms"]


def executor_latencies(cli, original, fused, threads, iters, rounds):
    """(c): alternating `inferopt bench` P50s before and after fusion."""
    before, after = [], []
    for _ in range(rounds):
        before.append(bench_p50(cli, original, threads, iters))
        after.append(bench_p50(cli, fused, threads, iters))
    return {"before_p50_ms": before, "after_p50_ms": after}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", type=Path, required=True)
    parser.add_argument("--shared", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3, help="optimize runs per tool and model")
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--json", type=Path, default=Path("fusion_bench.json"))
    args = parser.parse_args()

    light = args.shared / "models" / "onnx-light" / "light_resnet50.onnx"
    if not light.exists():
        sys.exit(f"{light} is absent")
    results = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
               "onnxruntime": ort.__version__,
               "onnxoptimizer": getattr(onnxoptimizer, "__version__", None), "threads": args.threads}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        big = work / "resnet50_real_sized.onnx"
        real_sized_resnet50(light, big)
        results["real_sized_mb"] = big.stat().st_size / 1e6
        for name, model in (("light_resnet50", light), ("resnet50_real_sized", big)):
            (work / name).mkdir()
            results[f"optimize_{name}"] = optimize_wall_times(args.cli, model, work / name, args.repeats)

        fused = work / "resnet50_O3.onnx"
        run([args.cli, "optimize", big, "-o", fused, "-O3"])
        results["ops_original"] = op_histogram(big)
        results["ops_O3"] = op_histogram(fused)
        results["ort"] = ort_latencies(big, fused, args.threads, 5, args.iters)
        results["executor"] = executor_latencies(args.cli, big, fused, args.threads, args.iters // 3, 3)

    args.json.write_text(json.dumps(results, indent=1))
    med = statistics.median
    print(f"machine: {results['machine']}; onnxruntime {results['onnxruntime']}, "
          f"onnxoptimizer {results['onnxoptimizer']}; threads {args.threads}")
    print("\n| measurement | inferopt | baseline | ratio (inferopt / baseline) |\n|---|---|---|---|")
    for name in ("light_resnet50", "resnet50_real_sized"):
        r = results[f"optimize_{name}"]
        if "onnxoptimizer_s" in r:
            print(f"| (a) optimize wall time, {name} | {med(r['inferopt_s']):.3f} s ({r['inferopt_nodes']} nodes) | "
                  f"{med(r['onnxoptimizer_s']):.3f} s ({r['onnxoptimizer_nodes']} nodes) | "
                  f"{med(r['inferopt_s']) / med(r['onnxoptimizer_s']):.2f} |")
    o = results["ort"]
    print(f"| (b) ORT latency P50: our -O3 (ORT opts off) vs original (ORT_ENABLE_ALL) | "
          f"{med(o['inferopt_O3_ort_disable_all_ms']):.2f} ms | {med(o['ort_enable_all_ms']):.2f} ms | "
          f"{med(o['inferopt_O3_ort_disable_all_ms']) / med(o['ort_enable_all_ms']):.3f} |")
    print(f"| (b') same, against the original under ORT_ENABLE_EXTENDED (no NCHWc layout) | "
          f"{med(o['inferopt_O3_ort_disable_all_ms']):.2f} ms | {med(o['ort_enable_extended_ms']):.2f} ms | "
          f"{med(o['inferopt_O3_ort_disable_all_ms']) / med(o['ort_enable_extended_ms']):.3f} |")
    e = results["executor"]
    print(f"| (c) inferopt executor P50: after -O3 vs before | {med(e['after_p50_ms']):.2f} ms | "
          f"{med(e['before_p50_ms']):.2f} ms | {med(e['after_p50_ms']) / med(e['before_p50_ms']):.3f} |")
    print(f"\nops before: {results['ops_original']}\nops after -O3: {results['ops_O3']}")
    print(f"(b) max |ORT output difference| {o['max_abs_diff']:.3g}; samples in {args.json}")


if __name__ == "__main__":
    main()
