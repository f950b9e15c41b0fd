#!/usr/bin/env python3
"""Calibration on Ray: one task per shard, states merged in shard order, checked against one
process over the same samples, and timed against it.

    PYTHONPATH=build/python python examples/python/ray_calibrate.py \
        --model ../shared/models/onnx-light/light_resnet50.onnx --samples 256 --workers 2

Prints the single-process times (1 thread, and --workers threads), Ray's start-up, the Ray
calibration's time, the ratios, and whether state and ranges are identical.
"""

import argparse
import pathlib
import time

import numpy as np

import inferopt
from inferopt import distributed

ROOT = pathlib.Path(__file__).resolve().parents[2]


def samples_for(model, count, seed):
    session = inferopt.Session(model, threads=1)
    rng = np.random.default_rng(seed)
    return [{i["name"]: rng.standard_normal([d if isinstance(d, int) else 1 for d in i["shape"]]).astype(i["dtype"])
             for i in session.inputs if not i["optional"]} for _ in range(count)]


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(ROOT / "tests" / "models" / "corpus" / "resnet_ts.onnx"))
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--method", default="entropy")
    args = parser.parse_args()

    import ray

    model = inferopt.load(args.model)
    samples = samples_for(model, args.samples, seed=0)
    prepared = inferopt.prepare_for_quantization(model)
    (state, ranges), single_1 = timed(lambda: inferopt.calibrate(prepared, samples, method=args.method, threads=1))
    _, single_n = timed(lambda: inferopt.calibrate(prepared, samples, method=args.method, threads=args.workers))

    _, startup = timed(lambda: ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False))
    # Contiguous shards, one per worker: the merge in shard order is the single pass's order.
    bounds = np.linspace(0, len(samples), args.workers + 1).astype(int)
    shards = [samples[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    result, on_ray = timed(lambda: distributed.calibrate(model, shards, method=args.method))
    ray.shutdown()

    print(f"model {pathlib.Path(args.model).name}, {args.samples} samples, {args.workers} Ray workers, method {args.method}")
    print(f"single process, 1 thread:          {single_1:8.2f} s")
    print(f"single process, {args.workers} threads:         {single_n:8.2f} s")
    print(f"Ray start-up (ray.init):           {startup:8.2f} s")
    print(f"Ray calibration ({len(shards)} tasks):        {on_ray:8.2f} s   "
          f"speedup {single_1 / on_ray:.2f}x over 1 thread, {single_n / on_ray:.2f}x over {args.workers} threads")
    print(f"state identical: {result['state'] == state} ({len(state)} bytes); ranges identical: {result['ranges'] == ranges} "
          f"({len(ranges)} tensors)")
    if result["state"] != state or result["ranges"] != ranges:
        raise SystemExit("the merged calibration differs from the single process's")


if __name__ == "__main__":
    main()
