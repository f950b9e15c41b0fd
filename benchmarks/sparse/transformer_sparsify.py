#!/usr/bin/env python3
"""Block sparsity of a text encoder without retraining, measured in one run on one machine
(docs/BENCHMARKS.md): `inferopt sparsify` at each --sparsity, by magnitude and calibrated
(`--calib-text`, blocks chosen by their effect on each layer's output and the kept weights
updated; per-layer sparsities allocated, or --uniform; one-shot, or --sequential), against the dense model in our
executor (onnxruntime cannot run inferopt.BlockSparseMatMul).

For each variant: the mean cosine of the first output (the sentence embedding) with the dense
model on held-out sentences, as `sparsify --eval-text` measures it in the executor, and the
executor's P50 latency at --seq tokens (`inferopt bench`, rounds alternating the dense model
and every variant, rotating the order) with the speedup over dense, per round and its median.

  python benchmarks/sparse/transformer_sparsify.py --cli build/bin/inferopt --model DIR/encoder.onnx
      --tokenizer DIR/tokenizer.json --calib-text DIR/calib.txt --eval-text DIR/eval.txt
      [--sparsities 0.5 0.75] [--block 16x16] [--threads 1] [--seq 128] [--uniform] [--sequential]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "quant"))
from transformer_int8 import add_encoder_arguments, feeds  # noqa: E402


def sparsify(cli, model, out, sparsity, block, extra):
    report = out.with_suffix(".json")
    subprocess.run([cli, "sparsify", model, "-o", out, "--sparsity", str(sparsity), "--block", block, "--report", report, *extra],
                   check=True, stdout=subprocess.DEVNULL)
    r = json.loads(report.read_text())
    # Over every layer the sparsity is spread across (allocation leaves some dense).
    if "calibrated" in r:
        layers = r["calibrated"]["layers"]
        removed, total = sum(l["blocks_removed"] for l in layers), sum(l["blocks_total"] for l in layers)
    else:
        rewritten = [n for n in r["nodes"] if n["rewritten"]]
        removed = sum(n["blocks_total"] - n["blocks_kept"] for n in rewritten)
        total = sum(n["blocks_total"] for n in rewritten)
    return r["agreement"]["output_cosine"], removed / total


def write_inputs(model, seq, folder):
    """One seeded batch at `seq` tokens as input_K.pb in the graph's input order."""
    folder.mkdir(parents=True, exist_ok=True)
    for k, (name, value) in enumerate(feeds(model, seq, 1)[0].items()):
        (folder / f"input_{k}.pb").write_bytes(numpy_helper.from_array(value, name).SerializeToString())


def bench(cli, model, inputs, threads, iters):
    out = subprocess.run([cli, "bench", model, "--input-dir", inputs, "--threads", str(threads), "--iters", str(iters),
                          "--warmup", "3", "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["p50_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_encoder_arguments(ap)
    ap.add_argument("--sparsities", type=float, nargs="+", default=[0.5, 0.75])
    ap.add_argument("--block", default="16x16")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--uniform", action="store_true", help="also calibrated with the same sparsity in every layer")
    ap.add_argument("--sequential", action="store_true", help="also calibrated layer after layer (sparsify --sequential)")
    ap.add_argument("--target-speedups", type=float, nargs="*", default=[],
                    help="also calibrated to these measured speedups (sparsify --target-speedup, timed at --seq tokens)")
    a = ap.parse_args()

    data = ["--calib-text", a.calib_text, "--eval-text", a.eval_text, "--tokenizer", a.tokenizer]
    modes = {"magnitude": ["--criterion", "magnitude"], "calibrated": []}
    if a.uniform:
        modes["calibrated, uniform"] = ["--uniform"]
    if a.sequential:
        modes["calibrated, sequential"] = ["--sequential"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        paths, rows = {"dense": a.model}, []
        for s in a.sparsities:
            for mode, extra in modes.items():
                key = f"{mode} {s:.2f}"
                paths[key] = work / f"{mode.replace(', ', '_')}_{s}.onnx"
                cosine, achieved = sparsify(a.cli, a.model, paths[key], s, a.block, data + extra)
                rows.append((key, cosine, achieved))
                print(f"{key}: cosine {cosine:.4f}, block sparsity {achieved:.3f}", flush=True)
        for t in a.target_speedups:
            key = f"calibrated, target {t:.2f}x"
            paths[key] = work / f"target_{t}.onnx"
            cosine, achieved = sparsify(a.cli, a.model, paths[key], 0.5, a.block,
                                        data + ["--target-speedup", str(t), "--latency-seq-len", str(a.seq), "--latency-threads", str(a.threads)])
            rows.append((key, cosine, achieved))
            print(f"{key}: cosine {cosine:.4f}, block sparsity {achieved:.3f}", flush=True)
        inputs = work / "inputs"
        write_inputs(a.model, a.seq, inputs)
        samples = {k: [] for k in paths}
        names = list(paths)
        for r in range(a.rounds):
            for k in names[r % len(names):] + names[:r % len(names)]:
                samples[k].append(bench(a.cli, paths[k], inputs, a.threads, a.iters))
        print(f"\nexecutor, {a.threads} thread(s), seq {a.seq}, {a.rounds} alternating rounds of {a.iters} runs")
        print("| variant | block sparsity | embedding cosine | P50 ms | speedup (median of rounds) |")
        print("|---|---|---|---|---|")
        print(f"| dense | 0 | 1 | {statistics.median(samples['dense']):.1f} | 1.00x |")
        for key, cosine, achieved in rows:
            ratio = statistics.median(d / v for d, v in zip(samples["dense"], samples[key]))
            print(f"| {key} | {achieved:.3f} | {cosine:.4f} | {statistics.median(samples[key]):.1f} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
