#!/usr/bin/env python3
"""ONNX Runtime as the oracle for the com.microsoft fusions.

For small Conv + activation, Conv + Add + activation, Gemm + activation and GELU models
(built here with the onnx helpers and shape-inferred, so that value types are known):

1. `inferopt optimize MODEL -o OUT --passes PIPELINE` (the three com.microsoft fusions)
   succeeds and OUT holds the expected number of FusedConv / FusedGemm / Gelu / FastGelu
   nodes (zero where the pass must decline, e.g. Gemm + Clip, which FusedGemm rejects);
2. OUT passes onnx.checker and imports com.microsoft version 1 when it uses the domain;
3. onnxruntime (CPU, graph optimizations off, so it runs the graphs as written) gives the
   same outputs for MODEL and OUT on a seeded random input, within rtol 1e-4, atol 1e-5
   (the fused kernels sum the same float32 products; only the order of the additions differs).

Exit status: 0 when every check passed, 1 otherwise.
"""

import argparse
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

PIPELINE = ("fuse-conv-activation,fuse-gemm-activation,fuse-gelu{domain=com.microsoft},fuse-skip-layer-norm,"
            "fuse-bias-gelu,remove-unused")
FUSED_OPS = ("FusedConv", "FusedGemm", "Gelu", "FastGelu", "BiasGelu", "QuickGelu", "SkipLayerNormalization",
             "SkipSimplifiedLayerNormalization", "Attention", "MultiHeadAttention")
STANDARD_OPS = ("LayerNormalization", "RMSNormalization", "SimplifiedLayerNormalization", "Attention")  # ai.onnx
RTOL, ATOL = 1e-4, 1e-5


def const(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def model_of(nodes, inputs, output_name, initializers, opset):
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, None)],
                              initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def activation_nodes(kind, src, dst, opset):
    """The activation `kind` from src to dst, plus the initializers it needs."""
    if kind == "LeakyRelu":
        return [helper.make_node("LeakyRelu", [src], [dst], alpha=0.1)], []
    if kind == "HardSigmoid":
        return [helper.make_node("HardSigmoid", [src], [dst], alpha=0.3, beta=0.4)], []
    if kind == "Clip" and opset < 11:
        return [helper.make_node("Clip", [src], [dst], min=-0.5, max=0.7)], []
    if kind == "Clip":
        return [helper.make_node("Clip", [src, "clip_lo", "clip_hi"], [dst])], [const("clip_lo", -0.5), const("clip_hi", 0.7)]
    return [helper.make_node(kind, [src], [dst])], []


def conv_model(kind, opset=17, residual=None, group=1, stride=1, bias=True):
    """x [1,4,10,10] -> Conv(3x3, pad 1) -> [Add residual] -> [activation] -> y."""
    rng = np.random.default_rng(1)
    channels = 8
    w = rng.standard_normal((channels, 4 // group, 3, 3)) * 0.3
    inits = [const("w", w), const("b", rng.standard_normal(channels))]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 10, 10])]
    conv_inputs = ["x", "w", "b"] if bias else ["x", "w"]
    nodes = [helper.make_node("Conv", conv_inputs, ["c"], pads=[1, 1, 1, 1], group=group, strides=[stride, stride])]
    last = "c"
    out = 10 // stride
    if residual == "input":
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, channels, out, out]))
        nodes.append(helper.make_node("Add", ["c", "r"], ["s"]))
        last = "s"
    elif residual == "branch":
        # The residual comes from a 1x1 conv computed after the main one.
        inits.append(const("w1", rng.standard_normal((channels, 4, 1, 1)) * 0.3))
        nodes.append(helper.make_node("Conv", ["x", "w1"], ["r"], strides=[stride, stride]))
        nodes.append(helper.make_node("Add", ["r", "c"], ["s"]))
        last = "s"
    if kind:
        act, act_inits = activation_nodes(kind, last, "y", opset)
        nodes += act
        inits += act_inits
    else:
        nodes.append(helper.make_node("Identity", [last], ["y"]))  # keeps the output name "y"
    return model_of(nodes, inputs, "y", inits, opset)


def gemm_model(kind):
    """x [5,16] -> Gemm(transB, alpha, beta) -> activation -> y."""
    rng = np.random.default_rng(2)
    inits = [const("w", rng.standard_normal((12, 16)) * 0.3), const("b", rng.standard_normal(12))]
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1, alpha=0.8, beta=1.2)]
    act, act_inits = activation_nodes(kind, "g", "y", 17)
    return model_of(nodes + act, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 16])], "y",
                    inits + act_inits, 17)


def gelu_model(form, opset=17, bias=False):
    """x [4,32] [+ bias] -> GELU written out as torch exports it (erf) or as GPT-2's gelu_new
    (tanh)."""
    inits = [const("half", np.array(0.5)), const("one", np.array(1.0))]
    pre = []
    if bias:
        inits.append(const("bias", np.linspace(-1, 1, 32)))
        pre = [helper.make_node("Add", ["x_in", "bias"], ["x"])]
    if form == "erf":
        inits.append(const("sqrt2", np.array(np.sqrt(2.0))))
        nodes = [helper.make_node("Div", ["x", "sqrt2"], ["s"]), helper.make_node("Erf", ["s"], ["e"])]
    else:
        inits += [const("three", np.array(3.0)), const("k", np.array(0.044715)),
                  const("c", np.array(np.sqrt(2.0 / np.pi)))]
        nodes = [helper.make_node("Pow", ["x", "three"], ["cube"]), helper.make_node("Mul", ["k", "cube"], ["kc"]),
                 helper.make_node("Add", ["x", "kc"], ["inner"]), helper.make_node("Mul", ["inner", "c"], ["s"]),
                 helper.make_node("Tanh", ["s"], ["e"])]
    nodes += [helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["x", "a"], ["m"]),
              helper.make_node("Mul", ["m", "half"], ["y"])]
    inputs = [helper.make_tensor_value_info("x_in" if bias else "x", TensorProto.FLOAT, [4, 32])]
    return model_of(pre + nodes, inputs, "y", inits, opset)


def quick_gelu_model():
    """x [4,32] -> x * Sigmoid(1.702 x)."""
    nodes = [helper.make_node("Mul", ["x", "alpha"], ["ax"]), helper.make_node("Sigmoid", ["ax"], ["s"]),
             helper.make_node("Mul", ["x", "s"], ["y"])]
    return model_of(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])], "y",
                    [const("alpha", np.array(1.702))], 17)


def residual_norm_model(rms=False, bias=False, sum_read_on=False, skip_dims=(2, 5, 16)):
    """x, skip -> [x + bias] + skip -> LayerNormalization (or RMSNormalization, opset 23) ->
    y [+ the sum, when the sum is read on as in pre-LN blocks]."""
    d = 16
    rng = np.random.default_rng(3)
    inits = [const("gamma", rng.standard_normal(d)), const("beta", rng.standard_normal(d) * 0.5),
             const("bias", rng.standard_normal(d) * 0.5)]
    nodes = [helper.make_node("Add", ["x", "bias"], ["xb"])] if bias else []
    nodes.append(helper.make_node("Add", ["xb" if bias else "x", "skip"], ["s"]))
    norm_inputs = ["s", "gamma"] if rms else ["s", "gamma", "beta"]
    nodes.append(helper.make_node("RMSNormalization" if rms else "LayerNormalization", norm_inputs, ["n"],
                                  axis=-1, epsilon=1e-6))
    nodes.append(helper.make_node("Add", ["n", "s"], ["y"]) if sum_read_on else helper.make_node("Identity", ["n"], ["y"]))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, d]),
              helper.make_tensor_value_info("skip", TensorProto.FLOAT, list(skip_dims))]
    return model_of(nodes, inputs, "y", inits, 23 if rms else 17)


NORM_EXPORTS = Path(__file__).resolve().parents[1] / "models" / "norms"  # see export_norms.py there


def norm_export_cases():
    """The torch exports of written-out norms, through -O3: one norm op each."""
    out = []
    for path in sorted(NORM_EXPORTS.glob("*.onnx")):
        rms = not path.name.startswith("ln")
        op = "LayerNormalization" if not rms else ("RMSNormalization" if "23" in path.name else "SimplifiedLayerNormalization")
        out.append((f"export_{path.stem}", onnx.load(str(path)), {f"ai.onnx.{op}": 1}, "-O3"))
    return out


def sdpa_block_model(opset, mask=True, classic_mask=False):
    """x [2,5,16] -> torch's SDPA attention block (Q/K/V MatMul + bias, heads split 4 x 4, the
    scale on Q and K^T, an additive mask [2,1,5,5], Softmax, V product, heads merged). With
    `classic_mask`, the mask comes from an int64 attention_mask [2,5] through the classic BERT
    chain (Unsqueeze, Cast, 1 - m, * -10000) as [2,1,1,5], broadcast over the queries."""
    b, s, d, n, h = 2, 5, 16, 4, 4
    rng = np.random.default_rng(11)
    inits, nodes = [], []
    for p in "qkv":
        inits += [const(f"w{p}", rng.standard_normal((d, d)) * 0.3), const(f"b{p}", rng.standard_normal(d) * 0.1)]
        nodes += [helper.make_node("MatMul", ["x", f"w{p}"], [f"{p}0"]), helper.make_node("Add", [f"{p}0", f"b{p}"], [p]),
                  helper.make_node("Reshape", [p, "split"], [f"{p}4"])]
    inits += [numpy_helper.from_array(np.array([b, s, n, h], np.int64), "split"),
              numpy_helper.from_array(np.array([b, s, d], np.int64), "merge"), const("scale", np.array(0.5))]
    nodes += [helper.make_node("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]),
              helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
              helper.make_node("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3]),
              helper.make_node("Mul", ["qh", "scale"], ["qs"]), helper.make_node("Mul", ["kt", "scale"], ["ks"]),
              helper.make_node("MatMul", ["qs", "ks"], ["scores"])]
    last = "scores"
    if classic_mask:
        inits += [numpy_helper.from_array(np.array([1, 2], np.int64), "mask_axes"), const("one", np.array(1.0)),
                  const("filter", np.array(-10000.0))]
        nodes += [helper.make_node("Unsqueeze", ["attention_mask", "mask_axes"], ["m4"]),
                  helper.make_node("Cast", ["m4"], ["mf"], to=TensorProto.FLOAT),
                  helper.make_node("Sub", ["one", "mf"], ["inverted"]), helper.make_node("Mul", ["inverted", "filter"], ["mask"])]
    if mask:
        nodes.append(helper.make_node("Add", ["scores", "mask"], ["masked"]))
        last = "masked"
    nodes += [helper.make_node("Softmax", [last], ["p"], axis=-1), helper.make_node("MatMul", ["p", "vh"], ["ctx"]),
              helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ctx_t", "merge"], ["y"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, s, d])]
    if classic_mask:
        inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [b, s]))
    elif mask:
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [b, 1, s, s]))
    m = model_of(nodes, inputs, "y", inits, opset)
    m.ir_version = 10
    return m


def cases():
    """(name, model, expected count of each fused op (com.microsoft's by name, ai.onnx's as
    "ai.onnx.NAME"); ops left out expect none[, the optimize arguments, when not the fusion
    pipeline])."""
    out = norm_export_cases()
    out.append(("attention_opset23_O2", sdpa_block_model(23), {"ai.onnx.Attention": 1}, "-O2"))
    out.append(("attention_opset23_O2_no_mask", sdpa_block_model(23, mask=False), {"ai.onnx.Attention": 1}, "-O2"))
    out.append(("attention_opset17_O2_declined", sdpa_block_model(17), {}, "-O2"))
    out.append(("attention_classic_mask_O3", sdpa_block_model(17, classic_mask=True), {"Attention": 1}, "-O3"))
    for kind in ("Relu", "LeakyRelu", "Tanh", "Sigmoid", "Clip", "HardSigmoid", "HardSwish"):
        out.append((f"conv_{kind.lower()}", conv_model(kind), {"FusedConv": 1}))
    out.append(("conv_clip_opset10", conv_model("Clip", opset=10), {"FusedConv": 1}))
    out.append(("conv_grouped_relu", conv_model("Relu", group=2), {"FusedConv": 1}))
    out.append(("conv_depthwise_strided_relu", conv_model("Relu", group=4, stride=2), {"FusedConv": 1}))
    out.append(("conv_add_input_relu", conv_model("Relu", residual="input"), {"FusedConv": 1}))
    out.append(("conv_add_branch_relu", conv_model("Relu", residual="branch"), {"FusedConv": 1}))
    out.append(("conv_add_only", conv_model(None, residual="input"), {"FusedConv": 1}))
    out.append(("conv_no_bias_add_sigmoid", conv_model("Sigmoid", residual="input", bias=False), {"FusedConv": 1}))
    for kind in ("Relu", "LeakyRelu", "Tanh", "Sigmoid", "HardSigmoid"):
        out.append((f"gemm_{kind.lower()}", gemm_model(kind), {"FusedGemm": 1}))
    out.append(("gemm_clip_declined", gemm_model("Clip"), {}))
    out.append(("gemm_hardswish_declined", gemm_model("HardSwish"), {}))
    out.append(("gelu_erf", gelu_model("erf"), {"Gelu": 1}))
    out.append(("gelu_tanh", gelu_model("tanh"), {"FastGelu": 1}))
    out.append(("bias_gelu_erf", gelu_model("erf", bias=True), {"BiasGelu": 1}))
    out.append(("bias_gelu_tanh", gelu_model("tanh", bias=True), {"FastGelu": 1}))
    out.append(("quick_gelu", quick_gelu_model(), {"QuickGelu": 1}))
    out.append(("skip_layer_norm", residual_norm_model(), {"SkipLayerNormalization": 1}))
    out.append(("skip_layer_norm_bias_sum_out", residual_norm_model(bias=True, sum_read_on=True),
                {"SkipLayerNormalization": 1}))
    out.append(("skip_layer_norm_skip_per_token", residual_norm_model(skip_dims=(1, 5, 16)), {"SkipLayerNormalization": 1}))
    out.append(("skip_rms_norm_bias", residual_norm_model(rms=True, bias=True), {"SkipSimplifiedLayerNormalization": 1}))
    out.append(("skip_rms_norm_sum_out", residual_norm_model(rms=True, sum_read_on=True),
                {"SkipSimplifiedLayerNormalization": 1}))
    return out


def session(path):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3  # the fused model keeps Clip's now unused bound initializers
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def check(cli, work, name, model, want, level=None):
    src, dst = work / f"{name}.onnx", work / f"{name}_fused.onnx"
    onnx.save(model, src)
    how = [level] if level else ["--passes", PIPELINE]
    proc = subprocess.run([str(cli), "optimize", str(src), "-o", str(dst), *how], capture_output=True, text=True)
    assert proc.returncode == 0, f"inferopt optimize exited {proc.returncode}: {proc.stderr.strip()}"
    fused = onnx.load(dst)
    # onnxruntime defines SimplifiedLayerNormalization in the ai.onnx domain itself (its own
    # transformer optimizer writes it too); onnx.checker, which does not know it, is skipped.
    if not any(n.op_type == "SimplifiedLayerNormalization" for n in fused.graph.node):
        onnx.checker.check_model(fused, full_check=True)
    ops = [(n.domain, n.op_type) for n in fused.graph.node]
    counts = {op: ops.count(("com.microsoft", op)) for op in FUSED_OPS}
    counts.update({f"ai.onnx.{op}": ops.count(("", op)) for op in STANDARD_OPS})
    assert counts == {op: want.get(op, 0) for op in counts}, f"ops after: {ops}"
    imports = {o.domain: o.version for o in fused.opset_import}
    if any(counts[op] for op in FUSED_OPS):
        assert imports.get("com.microsoft") == 1, f"opset imports {imports}"
    assert [o.name for o in fused.graph.output] == [o.name for o in model.graph.output]
    original, optimized = session(src), session(dst)
    rng = np.random.default_rng(7)
    feed = {}
    for i in original.get_inputs():
        if i.type == "tensor(int64)":  # an attention mask: ones, the last key padded
            feed[i.name] = np.ones(i.shape, np.int64)
            feed[i.name][..., -1] = 0
        else:
            feed[i.name] = rng.standard_normal(i.shape).astype(np.float32)
    reference = original.run(None, feed)
    for want, got, info in zip(reference, optimized.run(None, feed), original.get_outputs()):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"output {info.name}")
    for want, got, info in zip(reference, executor_run(cli, work / name, dst, feed), original.get_outputs()):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"executor, output {info.name}")
    fused_ops = [f"{n} {op}" for op, n in counts.items() if n]
    return ", ".join(fused_ops + ["outputs match"])


def executor_run(cli, folder, model, feed):
    """The executor (`inferopt run`) on `model` with `feed`: its outputs in graph order."""
    folder.mkdir(parents=True, exist_ok=True)
    args = [str(cli), "run", str(model), "--threads", "1", "--output-dir", str(folder / "out")]
    for name, array in feed.items():
        path = folder / f"{name}.pb"
        path.write_bytes(numpy_helper.from_array(array, name).SerializeToString())
        args += ["--input", f"{name}={path}"]
    proc = subprocess.run(args, capture_output=True, text=True)
    assert proc.returncode == 0, f"inferopt run exited {proc.returncode}: {proc.stderr.strip()}"
    got = {}
    for path in sorted((folder / "out").glob("output_*.pb")):
        t = onnx.TensorProto()
        t.ParseFromString(path.read_bytes())
        got[t.name] = numpy_helper.to_array(t)
    return [got[o.name] for o in onnx.load(str(model)).graph.output]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True, type=Path, help="the inferopt binary")
    parser.add_argument("--work", required=True, type=Path, help="scratch folder (emptied first)")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    failures = 0
    for name, model, want, *level in cases():
        try:
            print(f"PASS {name}: {check(args.cli, args.work, name, model, want, *level)}")
        except Exception:  # report every case, then fail once
            failures += 1
            print(f"FAIL {name}:\n{traceback.format_exc()}")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
