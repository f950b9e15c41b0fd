#!/usr/bin/env python3
"""onnxruntime's CPU SkipLayerNormalization against its own Add + LayerNormalization kernels
(why `residual-sum-before-norm` exists; docs/BENCHMARKS.md).

One residual block, LayerNormalization(Relu(x) + Relu(skip)), at each shape and thread
count, in two sessions of the same onnxruntime (ORT_ENABLE_ALL): the residual written as Add,
which onnxruntime fuses into SkipLayerNormalization (checked in the optimized graph it
saves), and written as Sum, which it leaves as two kernels. Rounds alternate the two; the
report is the median time per run and the ratio fused / unfused (above 1: the fusion costs).

  python benchmarks/quant/ort_skip_layer_norm.py [--shapes 1x128x384 1x128x768 4x128x768]
      [--threads 1 2] [--rounds 8] [--iters 100]
"""
import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def residual_block(op, dims):
    """LayerNormalization(op(Relu(x), Relu(skip))): the operands are computed values, as in a model."""
    hidden = dims[-1]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, dims) for n in ("x", "skip", "y")]
    nodes = [helper.make_node("Relu", ["x"], ["xr"]), helper.make_node("Relu", ["skip"], ["sr"]),
             helper.make_node(op, ["xr", "sr"], ["s"]),
             helper.make_node("LayerNormalization", ["s", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-12)]
    weights = [numpy_helper.from_array(np.ones(hidden, np.float32), "gamma"),
               numpy_helper.from_array(np.zeros(hidden, np.float32), "beta")]
    graph = helper.make_graph(nodes, "residual", io[:2], io[2:], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def session(op, dims, threads, work):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    so.optimized_model_filepath = str(work / f"{op}.onnx")
    s = ort.InferenceSession(residual_block(op, dims).SerializeToString(), so, providers=["CPUExecutionProvider"])
    kernels = [n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node]
    return s, "SkipLayerNormalization" in kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", nargs="+", default=["1x128x384", "1x128x768", "4x128x768"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--iters", type=int, default=100)
    a = ap.parse_args()
    print(f"onnxruntime {ort.__version__}")
    print("| shape | threads | SkipLayerNormalization (Add) us | Add + LayerNormalization (Sum) us | fused / unfused | max diff |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for text in a.shapes:
            dims = [int(d) for d in text.split("x")]
            feed = {"x": rng.standard_normal(dims, np.float32), "skip": rng.standard_normal(dims, np.float32)}
            for threads in a.threads:
                fused, fused_formed = session("Add", dims, threads, Path(tmp))
                plain, plain_formed = session("Sum", dims, threads, Path(tmp))
                if not fused_formed or plain_formed:
                    raise SystemExit(f"{text}: onnxruntime fused Add: {fused_formed}, Sum: {plain_formed}; the comparison needs yes, no")
                times = {"fused": [], "plain": []}
                for _ in range(a.rounds):
                    for name, s in (("fused", fused), ("plain", plain)):
                        start = time.perf_counter()
                        for _ in range(a.iters):
                            s.run(None, feed)
                        times[name].append((time.perf_counter() - start) / a.iters * 1e6)
                f, p = statistics.median(times["fused"]), statistics.median(times["plain"])
                diff = float(np.abs(fused.run(None, feed)[0] - plain.run(None, feed)[0]).max())
                print(f"| {text} | {threads} | {f:.0f} | {p:.0f} | {f / p:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
