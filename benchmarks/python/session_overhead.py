#!/usr/bin/env python3
"""What Python adds to the executor: Session.run in a Python loop against the same session's
runs timed in C++ (Session.benchmark), alternating round by round in one process.

    PYTHONPATH=build/python .venv/bin/python benchmarks/python/session_overhead.py \
        tests/models/corpus/resnet_ts.onnx --threads 1 --rounds 15 --iters 200
"""

import argparse
import statistics
import time

import numpy as np

import inferopt


def feeds_for(session, seed=0):
    rng = np.random.default_rng(seed)
    return {i["name"]: rng.standard_normal([d if isinstance(d, int) else 1 for d in i["shape"]]).astype(i["dtype"])
            for i in session.inputs if not i["optional"]}


def python_loop_ms(session, feeds, iters):
    start = time.perf_counter()
    for _ in range(iters):
        session.run(feeds)
    return (time.perf_counter() - start) * 1000.0 / iters


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--iters", type=int, default=200)
    args = parser.parse_args()
    print(f"{'model':32} {'C++ ms':>9} {'Python ms':>10} {'ratio':>7}  (median of {args.rounds} rounds, "
          f"{args.iters} runs each, {args.threads} thread(s))")
    for path in args.models:
        session = inferopt.Session(inferopt.load(path), threads=args.threads)
        feeds = feeds_for(session)
        session.benchmark(feeds, args.iters)  # warm-up: plans, primitives, caches
        python_loop_ms(session, feeds, args.iters)
        native, python, ratios = [], [], []
        for r in range(args.rounds):
            if r % 2 == 0:  # alternate which goes first
                a = session.benchmark(feeds, args.iters)
                b = python_loop_ms(session, feeds, args.iters)
            else:
                b = python_loop_ms(session, feeds, args.iters)
                a = session.benchmark(feeds, args.iters)
            native.append(a)
            python.append(b)
            ratios.append(b / a)
        print(f"{path.split('/')[-1]:32} {statistics.median(native):9.4f} {statistics.median(python):10.4f} "
              f"{statistics.median(ratios):7.3f}")


if __name__ == "__main__":
    main()
