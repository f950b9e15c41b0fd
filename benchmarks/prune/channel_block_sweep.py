#!/usr/bin/env python3
"""What a convolution costs as its channel count moves past a multiple of 8 or 16, in onnxruntime
and inferopt's executor: the evidence behind prune's default --round-to.

One 3x3 convolution (C -> C channels, 28x28, pad 1, random weights) per channel count, each
timed on both runtimes with 1 thread in interleaved rounds (best of ROUNDS medians of ITERS
runs). Both runtimes hold activations in blocks of channels (16 wide on AVX-512, 8 on AVX2),
so a count just past a block boundary costs about as much as the next multiple.
`--matmul` sweeps a transformer FFN's width instead: [128, 384] x [384, N].

  benchmarks/prune/channel_block_sweep.py --executor build/python [--channels 88 89 ... 128] [--matmul]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def conv_model(channels, rng):
    w = numpy_helper.from_array((rng.standard_normal((channels, channels, 3, 3)) * 0.1).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "conv",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 28, 28])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, 28, 28])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


def matmul_model(width, rng):
    w = numpy_helper.from_array(rng.standard_normal((384, width)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "ffn_up",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [128, 384])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [128, width])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


def median_ms(run, iters):
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        run()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executor", required=True, type=Path, help="the inferopt Python package's folder (build/python)")
    ap.add_argument("--channels", type=int, nargs="+", help="counts (or widths with --matmul) to sweep")
    ap.add_argument("--matmul", action="store_true", help="sweep [128, 384] x [384, N] MatMuls over N = --channels")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(args.executor))
    import inferopt

    rng = np.random.default_rng(0)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    runners = {}
    if args.channels is None:
        args.channels = ([1072, 1073, 1076, 1080, 1084, 1088, 1096, 1104, 1120] if args.matmul else
                         [88, 89, 92, 96, 97, 100, 104, 112, 113, 120, 128])
    for c in args.channels:
        model = matmul_model(c, rng) if args.matmul else conv_model(c, rng)
        shape = (128, 384) if args.matmul else (1, c, 28, 28)
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        o = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        e = inferopt.Session(inferopt.Model.from_bytes(model), threads=1)
        runners[c] = {"onnxruntime": lambda o=o, f=feeds: o.run(None, f), "executor": lambda e=e, f=feeds: e.run(f)}
    best = {(c, r): float("inf") for c in runners for r in ("onnxruntime", "executor")}
    for rnd in range(args.rounds):
        order = args.channels[rnd % len(args.channels):] + args.channels[:rnd % len(args.channels)]
        for c in order:
            for r, run in runners[c].items():
                run()
                best[c, r] = min(best[c, r], median_ms(run, args.iters))

    what = "[128, 384] x [384, N] MatMul" if args.matmul else "3x3 Conv C -> C on 28x28"
    print(f"{what}, 1 thread, best of {args.rounds} interleaved medians of {args.iters} runs; "
          f"ms per GMAC shows the waste (equal cost per useful multiply-add is flat)\n")
    print("| channels | C mod 16 | onnxruntime ms | onnxruntime ms/GMAC | executor ms | executor ms/GMAC |")
    print("|---|---|---|---|---|---|")
    for c in args.channels:
        gmac = (128 * 384 * c if args.matmul else c * c * 9 * 28 * 28) / 1e9
        o, e = best[c, "onnxruntime"], best[c, "executor"]
        print(f"| {c} | {c % 16} | {o:.3f} | {o / gmac:.1f} | {e:.3f} | {e / gmac:.1f} |")


if __name__ == "__main__":
    main()
