#!/usr/bin/env python3
"""onnxruntime's int8 kernels as the oracle for the executor's (src/runtime/int8_groups.hpp).

Each case is one QDQ group whose quantized input is a graph input, so both sides start from
the same int8 tensor: DequantizeLinear -> Conv (int8 weights per output channel or per tensor,
int32 bias) -> [Relu] -> QuantizeLinear, which onnxruntime (ORT_ENABLE_ALL) runs as QLinearConv;
DequantizeLinear x 2 -> Add -> [Relu] -> QuantizeLinear (QLinearAdd); DequantizeLinear ->
MaxPool -> QuantizeLinear (its int8 MaxPool); DequantizeLinear -> GlobalAveragePool ->
QuantizeLinear (QLinearGlobalAveragePool); DequantizeLinear -> Gemm with int8 weights and a float
output (QGemm). Checks, per case:

1. onnxruntime fused the group (its optimized graph holds the int8 op, no float Conv / Add),
   except where it keeps a conv in float (int8 activations on x86; a Relu before a zero point
   above the type's minimum), which the executor still runs in int8;
2. `inferopt bench --profile` ran the executor's int8 kernel for it;
3. `inferopt run` gives the int8 output within one unit of onnxruntime's everywhere (the
   issue's bound: the requantization rounds float products that may fall either side of a tie),
   and reports how many elements differ at all; a float output within 1e-5 relative.

Exit status: 0 when every check passed, 1 otherwise.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

U8, S8 = TensorProto.UINT8, TensorProto.INT8
NP = {U8: np.uint8, S8: np.int8}


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def qparams(prefix, scale, zero, qtype):
    return [init(prefix + "_scale", np.float32(scale)), init(prefix + "_zero", NP[qtype](zero))]


def quantized_input(name, shape, qtype, scale, zero):
    return helper.make_tensor_value_info(name, qtype, shape), qparams(name, scale, zero, qtype)


def conv_case(rng, c, h, m, k, group=1, stride=1, pad=None, dilation=1, qtype=U8, zx=0, zy=0, per_channel=True,
              relu=True):
    pad = k // 2 if pad is None else pad
    x_scale, y_scale = 0.02, 0.05
    x, inits = quantized_input("x", [1, c, h, h], qtype, x_scale, zx)
    w = rng.integers(-127, 128, size=(m, c // group, k, k)).astype(np.int8)
    w_scale = (rng.uniform(0.001, 0.004, m) if per_channel else np.full(1, 0.003)).astype(np.float32)
    bias = rng.integers(-3000, 3000, m).astype(np.int32)
    inits += [init("w", w), init("w_scale", w_scale if per_channel else w_scale[0]),
              init("w_zero", np.zeros(m if per_channel else (), np.int8)),
              init("b", bias), init("b_scale", (x_scale * w_scale).astype(np.float32) if per_channel else np.float32(x_scale * w_scale[0]))]
    inits += qparams("y", y_scale, zy, qtype)
    axis = {"axis": 0} if per_channel else {}
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero"], ["wd"], **axis),
             helper.make_node("DequantizeLinear", ["b", "b_scale"], ["bd"], **axis),
             helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], kernel_shape=[k, k], strides=[stride, stride],
                              pads=[pad] * 4, dilations=[dilation, dilation], group=group)]
    last = "c"
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["r"]))
        last = "r"
    nodes.append(helper.make_node("QuantizeLinear", [last, "y_scale", "y_zero"], ["y"]))
    name = f"conv c{c} h{h} m{m} k{k} g{group} s{stride} d{dilation} {'u8' if qtype == U8 else 's8'} zx{zx} zy{zy}" \
           f"{' per-tensor' if not per_channel else ''}{' relu' if relu else ''}"
    feeds = {"x": rng.integers(np.iinfo(NP[qtype]).min, np.iinfo(NP[qtype]).max + 1, (1, c, h, h)).astype(NP[qtype])}
    # onnxruntime 1.32 keeps in float an int8-activation conv on x86 (its QLinearConv takes
    # uint8 activations there) and a Relu before a zero point above the type's minimum (it
    # drops only a Relu that saturation repeats); the oracle is then its float path.
    fused = qtype == U8 and (not relu or zy == 0)
    return name, make_model(nodes, [x], inits), feeds, "QLinearConv" if fused else None, "inferopt.cpu.QLinearConvNhwc"


def add_case(rng, relu, qtype=U8):
    shape = [1, 32, 14, 14]
    a, inits_a = quantized_input("a", shape, qtype, 0.11, 119 if qtype == U8 else -9)
    b, inits_b = quantized_input("b", shape, qtype, 0.17, 152 if qtype == U8 else 24)
    inits = inits_a + inits_b + qparams("y", 0.09, 0 if relu else 128 if qtype == U8 else 0, qtype)
    nodes = [helper.make_node("DequantizeLinear", ["a", "a_scale", "a_zero"], ["ad"]),
             helper.make_node("DequantizeLinear", ["b", "b_scale", "b_zero"], ["bd"]),
             helper.make_node("Add", ["ad", "bd"], ["s"])]
    last = "s"
    if relu:
        nodes.append(helper.make_node("Relu", ["s"], ["r"]))
        last = "r"
    nodes.append(helper.make_node("QuantizeLinear", [last, "y_scale", "y_zero"], ["y"]))
    info = np.iinfo(NP[qtype])
    feeds = {n: rng.integers(info.min, info.max + 1, shape).astype(NP[qtype]) for n in ("a", "b")}
    name = f"add {'u8' if qtype == U8 else 's8'}{' relu' if relu else ''}"
    # The executor's QLinearAdd reads its operands channels-last only inside a conv chain; here
    # it runs in the model's layout, which an elementwise op does not mind.
    return name, make_model(nodes, [a, b], inits), feeds, "QLinearAdd", "inferopt.cpu.QLinearAdd"


def max_pool_case(rng):
    x, inits = quantized_input("x", [1, 24, 17, 17], U8, 0.03, 0)
    inits += qparams("y", 0.03, 0, U8)
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero"], ["xd"]),
             helper.make_node("MaxPool", ["xd"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["p", "y_scale", "y_zero"], ["y"])]
    feeds = {"x": rng.integers(0, 256, (1, 24, 17, 17)).astype(np.uint8)}
    return "max-pool 3x3 s2", make_model(nodes, [x], inits), feeds, "MaxPool", "inferopt.cpu.MaxPoolNhwc"


def global_average_case(rng):
    x, inits = quantized_input("x", [1, 64, 7, 7], U8, 0.9, 5)
    inits += qparams("y", 0.7, 2, U8)
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero"], ["xd"]),
             helper.make_node("GlobalAveragePool", ["xd"], ["p"]),
             helper.make_node("QuantizeLinear", ["p", "y_scale", "y_zero"], ["y"])]
    feeds = {"x": rng.integers(0, 256, (1, 64, 7, 7)).astype(np.uint8)}
    return "global-average-pool", make_model(nodes, [x], inits), feeds, "QLinearGlobalAveragePool", \
        "inferopt.cpu.QLinearGlobalAveragePoolNhwc"


def gemm_case(rng, per_column):
    x, inits = quantized_input("x", [2, 96], U8, 0.05, 7)
    w = rng.integers(-127, 128, size=(40, 96)).astype(np.int8)
    w_scale = rng.uniform(0.001, 0.004, 40).astype(np.float32) if per_column else np.float32(0.003)
    bias_scale = (0.05 * w_scale).astype(np.float32)
    inits += [init("w", w), init("w_scale", w_scale), init("w_zero", np.zeros(40 if per_column else (), np.int8)),
              init("b", rng.integers(-3000, 3000, 40).astype(np.int32)), init("b_scale", bias_scale)]
    axis = {"axis": 0} if per_column else {}
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero"], ["wd"], **axis),
             helper.make_node("DequantizeLinear", ["b", "b_scale"], ["bd"], **axis),
             helper.make_node("Gemm", ["xd", "wd", "bd"], ["y"], transB=1)]
    feeds = {"x": rng.integers(0, 256, (2, 96)).astype(np.uint8)}
    return f"gemm transB{' per-column' if per_column else ''}", make_model(nodes, [x], inits), feeds, "QGemm", \
        "inferopt.cpu.QGemm"


def make_model(nodes, inputs, inits):
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)
    onnx.checker.check_model(m)
    return m


def cases():
    rng = np.random.default_rng(7)
    yield conv_case(rng, 16, 12, 32, 3)
    yield conv_case(rng, 16, 12, 32, 3, zx=117, zy=128, relu=False)
    yield conv_case(rng, 20, 9, 24, 1, zx=3, zy=7, per_channel=False)
    yield conv_case(rng, 3, 30, 16, 7, stride=2, pad=3)
    yield conv_case(rng, 32, 10, 32, 3, group=32, zx=9)
    yield conv_case(rng, 32, 8, 48, 3, group=2, zy=5, relu=False)
    yield conv_case(rng, 16, 13, 16, 3, pad=2, dilation=2)
    yield conv_case(rng, 64, 14, 128, 1, stride=2, pad=0, relu=False)
    yield conv_case(rng, 16, 12, 32, 3, qtype=S8, relu=False)
    yield add_case(rng, relu=True)
    yield add_case(rng, relu=False)
    yield add_case(rng, relu=False, qtype=S8)
    yield max_pool_case(rng)
    yield global_average_case(rng)
    yield gemm_case(rng, True)
    yield gemm_case(rng, False)


def ort_run(path, feeds, work):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    so.optimized_model_filepath = str(work / "ort_optimized.onnx")
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    out = sess.run(["y"], feeds)[0]
    ops = {n.op_type for n in onnx.load(str(work / "ort_optimized.onnx")).graph.node}
    return out, ops


def ours(cli, path, feeds, work):
    folder = work / "feeds"
    folder.mkdir(exist_ok=True)
    for f in folder.iterdir():
        f.unlink()
    args = []
    for name, value in feeds.items():
        (folder / f"{name}.pb").write_bytes(numpy_helper.from_array(value, name).SerializeToString())
        args += ["--input", f"{name}={folder / (name + '.pb')}"]
    subprocess.run([cli, "run", str(path), *args, "--output-dir", str(folder), "--threads", "1"], check=True,
                   stdout=subprocess.DEVNULL)
    t = onnx.TensorProto()
    t.ParseFromString((folder / "output_0.pb").read_bytes())
    profile = subprocess.run([cli, "bench", str(path), *args, "--iters", "1", "--warmup", "0", "--threads", "1",
                              "--profile", "--json"], check=True, capture_output=True, text=True).stdout
    return numpy_helper.to_array(t), json.loads(profile)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    args = ap.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, model, feeds, ort_op, our_op in cases():
            path = work / "case.onnx"
            onnx.save(model, str(path))
            try:
                want, ort_ops = ort_run(path, feeds, work)
                got, report = ours(args.cli, path, feeds, work)
                if want.dtype == np.float32:
                    # A float output (QGemm): the same int32 sums, scaled in float32.
                    diff, bound, unit = np.abs(got - want) / (np.abs(want) + 1e-3), 1e-5, "relative"
                else:
                    diff, bound, unit = np.abs(got.astype(np.int32) - want.astype(np.int32)), 1, "units"
                ran = json.dumps(report)
                problems = []
                if ort_op and (ort_op not in ort_ops or ({"Conv", "Add"} & ort_ops)):
                    problems.append(f"onnxruntime did not fuse the group: {sorted(ort_ops)}")
                if our_op not in ran:
                    problems.append(f"the executor did not run {our_op}")
                if got.shape != want.shape or got.dtype != want.dtype or diff.max() > bound:
                    problems.append(f"output off by {diff.max()} {unit}")
                status = "FAIL " + "; ".join(problems) if problems else "ok"
                print(f"{name:48s} max diff {diff.max():.3g} {unit}, {int((diff > 0).sum())} of {diff.size} differ: {status}")
                failures += bool(problems)
            except Exception as e:  # noqa: BLE001  (report every case)
                print(f"{name:48s} FAIL {e}")
                failures += 1
    print("PASS" if failures == 0 else f"FAIL: {failures} case(s)")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
