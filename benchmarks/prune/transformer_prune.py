#!/usr/bin/env python3
"""Structured pruning of a text encoder without retraining, measured in one run on one machine
(docs/BENCHMARKS.md): the float model against `inferopt prune` at each --ratio, with the
calibrated criterion and least-squares refit (`--criterion energy --global --calib-text`),
the same without the refit (`--no-refit`), optionally with the budget shared by measured
sensitivity (`--sensitivity`) or the sequential refit (`--sequential`), magnitude pruning
(`--criterion l1`) as the baseline a user has without calibration data, and pruning to a
measured speedup (`--target-speedups S ...`: prune's `--target-speedup`, timed in the
executor at --seq tokens; its predicted and measured executor speedups are printed beside
onnxruntime's).

For each variant: MACs after / before (prune's --report), mean cosine of the sentence
embedding (first output) with float on held-out sentences, the paraphrase retrieval check of
benchmarks/quant/transformer_int8.py (top-1 and MRR), and P50 latency in onnxruntime
(ORT_ENABLE_ALL, alternating rounds, float in every round) with its speedup.

  python benchmarks/prune/transformer_prune.py --cli build/bin/inferopt --model DIR/encoder.onnx
      --tokenizer DIR/tokenizer.json --calib-text DIR/calib.txt --eval-text DIR/eval.txt
      --eval-paraphrase DIR/eval_paraphrase.txt [--ratios 0.3 0.4] [--threads 1 2] [--seq 128]
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "quant"))
from transformer_int8 import add_encoder_arguments, embedding_check, embeddings, feeds, latency, sentence_feeds  # noqa: E402


def prune(cli, model, out, extra, calibration):
    report = out.with_suffix(".json")
    subprocess.run([cli, "prune", model, "-o", out, "--report", report, *extra, *calibration],
                   check=True, stdout=subprocess.DEVNULL)
    return json.loads(report.read_text())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_encoder_arguments(ap)
    ap.add_argument("--eval-paraphrase", required=True)
    ap.add_argument("--ratios", type=float, nargs="+", default=[0.3, 0.4])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--magnitude", action="store_true", help="also prune by L1 magnitude (no calibration)")
    ap.add_argument("--sensitivity", action="store_true", help="also share the budget by measured sensitivity")
    ap.add_argument("--sequential", action="store_true", help="also refit sequentially")
    ap.add_argument("--target-speedups", type=float, nargs="*", default=[], help="also prune to these measured speedups")
    ap.add_argument("--work", type=Path)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="prune_"))
    work.mkdir(parents=True, exist_ok=True)

    calibration = ["--calib-text", args.calib_text, "--tokenizer", args.tokenizer]
    paths, macs, executor = {"float": args.model}, {"float": 1.0}, {}
    variants = {}
    for ratio in args.ratios:
        common = ["--ratio", str(ratio), "--criterion", "energy", "--global"]
        variants[f"energy+refit {ratio}"] = common
        variants[f"energy, no refit {ratio}"] = common + ["--no-refit"]
        if args.sensitivity:
            variants[f"energy+refit, sensitivity {ratio}"] = common + ["--sensitivity"]
        if args.sequential:
            variants[f"energy+refit, sequential {ratio}"] = common + ["--sequential"]
        if args.magnitude:
            variants[f"l1 magnitude {ratio}"] = ["--ratio", str(ratio), "--criterion", "l1", "--global"]
    for speedup in args.target_speedups:
        variants[f"target {speedup}x"] = ["--criterion", "energy", "--target-speedup", str(speedup), "--latency-seq-len", str(args.seq)]
    for name, extra in variants.items():
        out = work / (name.replace(" ", "_").replace(",", "").replace("+", "_") + ".onnx")
        r = prune(args.cli, args.model, out, extra, calibration)
        macs[name] = r["macs"]["after"] / r["macs"]["before"]
        if r.get("latency"):
            executor[name] = (r["latency"]["predicted_speedup"], r["latency"]["measured_speedup"], len(r["latency"]["attempts"]))
        paths[name] = out

    text = sentence_feeds(args.model, args.tokenizer, args.eval_text)
    pairs = sentence_feeds(args.model, args.tokenizer, args.eval_paraphrase)
    reference = embeddings(args.model, text)
    print(f"model {args.model.name}, {len(reference)} evaluation sentences")
    print("variant | MACs after/before | mean cosine with float (min) | retrieval top-1 | MRR")
    for k, p in paths.items():
        cos, low, top1, mrr = embedding_check(reference, p, text, pairs)
        print(f"  {k} | {macs[k]:.3f} | {cos:.4f} ({low:.4f}) | {100 * top1:.1f}% | {mrr:.4f}")
    inputs = feeds(args.model, args.seq, 4)
    for threads in args.threads:
        p50 = latency(paths, inputs, threads, args.rounds, args.iters)
        print(f"\n{threads} thread(s), seq {args.seq}: variant | P50 ms | speedup vs float")
        for k in paths:
            print(f"  {k} | {p50[k]:.2f} | {p50['float'] / p50[k]:.2f}x")
    if executor:
        print("\nexecutor (1 thread): variant | predicted | measured | attempts")
        for k, (pred, meas, n) in executor.items():
            print(f"  {k} | {pred:.2f}x | {meas:.2f}x | {n}")


if __name__ == "__main__":
    main()
