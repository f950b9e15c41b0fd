#!/usr/bin/env python3
"""onnxruntime CPU latency of channel-pruned light ResNet-50 against the unpruned model, in one run.

The model goes through `inferopt optimize -O1` (the baseline), then `inferopt prune` at each
ratio (default 0.3 and 0.5, criterion l1) and each --round-to (default 8 and 16: the channel
blocks of AVX2 and AVX-512 machines) with `--report`, whose MACs before and after give the MACs
ratio. `--executor build/python` also times inferopt's executor (the Python package there) in
the same interleaved rounds. For each thread count, one onnxruntime session per model with the
same options (ORT_ENABLE_ALL, intra_op_num_threads = T, inter_op 1, sequential); each is warmed
up, then the models are timed in interleaved rounds (every round runs ITERS runs of each model,
in an order that rotates per round) so that drift on a shared machine hits them all. Latency
is the median over all rounds; the ratio is pruned / unpruned, so lower is better. The spread
of the per-round ratios (min..max) shows how noisy the run was.

Every weight of a light model is the same constant, so the L1 scores tie and the kept channels
are arbitrary; which channels go does not change the latency, only how many do.

  benchmarks/prune/prune_latency.py --cli build/bin/inferopt --shared ../shared \
      [--ratios 0.3 0.5] [--round-to 8 16] [--threads 1 2] [--iters 5] [--rounds 10] \
      [--executor build/python] [--json prune_latency.json]
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
import onnxruntime as ort


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def cli_run(cli, *args):
    proc = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"inferopt {args[0]} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def report_macs(report):
    """(MACs before, MACs after, prunable groups) from a prune report."""
    return int(report["macs"]["before"]), int(report["macs"]["after"]), report["prunable_groups"]


EXECUTOR = " (executor)"


class ExecutorSession:
    """inferopt's executor behind onnxruntime's run(None, feeds) call."""

    def __init__(self, inferopt, path, threads):
        self.session = inferopt.Session(inferopt.load(str(path)), threads=threads)

    def run(self, _, feeds):
        return list(self.session.run(feeds).values())


def make_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def readme_input(sess):
    inp = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
    n = int(np.prod(shape))
    return {inp.name: (np.arange(n, dtype=np.float64) / n).astype(np.float32).reshape(shape)}


def time_models(paths, threads, warmup, iters, rounds, inferopt=None):
    """Per-model lists of per-round latencies (ms), timed in interleaved, rotating rounds; with
    `inferopt` (the Python package) each model also runs on the executor, as NAME + EXECUTOR."""
    sessions = {k: make_session(p, threads) for k, p in paths.items()}
    feeds = {k: readme_input(s) for k, s in sessions.items()}
    if inferopt is not None:
        for k, p in paths.items():
            sessions[k + EXECUTOR] = ExecutorSession(inferopt, p, threads)
            feeds[k + EXECUTOR] = feeds[k]
    names = list(sessions)
    shapes = {k: [o.shape for o in s.run(None, feeds[k])] for k, s in sessions.items()}
    assert all(v == shapes[names[0]] for v in shapes.values()), f"output shapes differ: {shapes}"
    for k in names:
        for _ in range(warmup):
            sessions[k].run(None, feeds[k])
    per_round = {k: [] for k in names}  # [round][iteration] ms
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            times = []
            for _ in range(iters):
                t = time.perf_counter()
                sessions[k].run(None, feeds[k])
                times.append((time.perf_counter() - t) * 1000.0)
            per_round[k].append(times)
    return per_round


def latency_row(per_round):
    """Median latency per model, and its ratio to the unpruned model on the same runtime."""
    med = {k: statistics.median([t for rnd in v for t in rnd]) for k, v in per_round.items()}
    row = {"median_ms": med, "ratio_vs_unpruned": {}, "round_ratio_range": {}}
    for k in per_round:
        base = "unpruned" + EXECUTOR if k.endswith(EXECUTOR) else "unpruned"
        if k == base:
            continue
        row["ratio_vs_unpruned"][k] = med[k] / med[base]
        rr = [statistics.median(a) / statistics.median(b) for a, b in zip(per_round[k], per_round[base])]
        row["round_ratio_range"][k] = [min(rr), max(rr)]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True, type=Path, help="the inferopt binary")
    ap.add_argument("--shared", type=Path, default=Path("../shared"), help="the shared folder beside the repository")
    ap.add_argument("--model", type=Path, help="default: SHARED/models/onnx-light/light_resnet50.onnx")
    ap.add_argument("--ratios", type=float, nargs="+", default=[0.3, 0.5])
    ap.add_argument("--criterion", default="l1")
    ap.add_argument("--round-to", type=int, nargs="+", default=[8, 16], help="one pruned model per value and ratio")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="intra_op threads, one table row each")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=5, help="runs per model per round")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--executor", type=Path, help="the inferopt Python package's folder (build/python): time the executor too")
    ap.add_argument("--json", type=Path, default=Path("prune_latency.json"))
    args = ap.parse_args()
    inferopt = None
    if args.executor:
        sys.path.insert(0, str(args.executor))
        import inferopt
    model = args.model or args.shared / "models" / "onnx-light" / "light_resnet50.onnx"
    if not model.exists():
        sys.exit(f"{model} is absent")

    result = {"model": model.name, "onnxruntime": ort.__version__, "python": platform.python_version(),
              "cpu": cpu_model(), "logical_cpus": os.cpu_count(),
              "criterion": args.criterion, "round_to": args.round_to, "warmup": args.warmup,
              "iters": args.iters, "rounds": args.rounds, "load_average_start": list(os.getloadavg()),
              "variants": {}, "latency": {}}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = tmp / "O1.onnx"
        cli_run(args.cli, "optimize", model, "-o", base, "-O1")
        paths = {"unpruned": base}
        for ratio in args.ratios:
            for round_to in args.round_to:
                key = f"prune {ratio:g}, round-to {round_to}"
                out, rep = tmp / f"pruned_{ratio:g}_{round_to}.onnx", tmp / f"pruned_{ratio:g}_{round_to}.json"
                cli_run(args.cli, "prune", base, "-o", out, "--ratio", ratio, "--criterion", args.criterion,
                        "--round-to", round_to, "--report", rep)
                before, after, groups = report_macs(json.loads(rep.read_text()))
                result["variants"][key] = {"ratio": ratio, "round_to": round_to, "macs_before": before,
                                           "macs_after": after, "macs_ratio": after / before, "prunable_groups": groups}
                paths[key] = out

        for threads in args.threads:
            per_round = time_models(paths, threads, args.warmup, args.iters, args.rounds, inferopt)
            result["latency"][str(threads)] = latency_row(per_round)
    result["load_average_end"] = list(os.getloadavg())

    print(f"{model.name} after -O1, criterion {args.criterion}; onnxruntime {ort.__version__} CPU (ORT_ENABLE_ALL)"
          f"{' and the executor' if inferopt else ''}; {args.warmup} warmup, {args.rounds} rounds x {args.iters} "
          f"runs per model\n")
    print("| model | MACs (G) | MACs ratio | runtime | threads | median ms | latency ratio vs unpruned (per-round range) |")
    print("|---|---|---|---|---|---|---|")
    macs_before = next(iter(result["variants"].values()))["macs_before"]
    for threads in args.threads:
        row = result["latency"][str(threads)]
        for k in row["median_ms"]:
            name, runtime = (k[:-len(EXECUTOR)], "executor") if k.endswith(EXECUTOR) else (k, "onnxruntime")
            if name == "unpruned":
                print(f"| unpruned | {macs_before / 1e9:.2f} | 1 | {runtime} | {threads} | {row['median_ms'][k]:.1f} | "
                      f"1 (baseline) |")
                continue
            v = result["variants"][name]
            lo, hi = row["round_ratio_range"][k]
            print(f"| {name} | {v['macs_after'] / 1e9:.2f} | {v['macs_ratio']:.3f} | {runtime} | {threads} | "
                  f"{row['median_ms'][k]:.1f} | **{row['ratio_vs_unpruned'][k]:.3f}** ({lo:.3f}..{hi:.3f}) |")
    print(f"\nload average at start {result['load_average_start'][0]:.2f}, at end {result['load_average_end'][0]:.2f}")
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
