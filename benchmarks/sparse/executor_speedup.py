#!/usr/bin/env python3
"""Executor speedup of sparsified (or pruned) models over their dense original, with one or
more builds of the CLI in the same run (docs/BENCHMARKS.md): for each round, every
(build, model) pair is timed by `inferopt bench` (P50 of --iters runs after 3 warm-ups, one
seeded batch at --seq tokens, --threads threads), the order reversed every other round; each
build's speedup is the median over rounds of dense / model.

  python benchmarks/sparse/executor_speedup.py --cli new=build/bin/inferopt [--cli old=OTHER]
      DENSE.onnx SPARSE.onnx [SPARSE2.onnx ...] [--seq 128] [--rounds 5] [--iters 10]
"""
import argparse
import statistics
import tempfile
from pathlib import Path

from transformer_sparsify import bench, write_inputs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", action="append", required=True, help="NAME=PATH of an inferopt build (repeatable)")
    ap.add_argument("dense", type=Path)
    ap.add_argument("models", type=Path, nargs="+")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    clis = dict(c.split("=", 1) for c in args.cli)
    inputs = Path(tempfile.mkdtemp(prefix="speedup_inputs_"))
    write_inputs(args.dense, args.seq, inputs)
    models = [args.dense, *args.models]
    pairs = [(c, m) for m in models for c in clis]
    ms = {p: [] for p in pairs}
    for r in range(args.rounds):
        for c, m in (pairs if r % 2 == 0 else pairs[::-1]):
            ms[(c, m)].append(bench(clis[c], m, inputs, args.threads, args.iters))
        print(f"round {r}: " + ", ".join(f"{c}:{m.stem} {ms[(c, m)][-1]:.2f} ms" for c, m in pairs), flush=True)
    for c in clis:
        print(f"{c}: dense P50 {statistics.median(ms[(c, args.dense)]):.2f} ms (median of rounds)")
        for m in args.models:
            ratios = [d / s for d, s in zip(ms[(c, args.dense)], ms[(c, m)])]
            print(f"  {m.stem}: speedup {statistics.median(ratios):.3f} (rounds {', '.join(f'{x:.2f}' for x in ratios)})")


if __name__ == "__main__":
    main()
