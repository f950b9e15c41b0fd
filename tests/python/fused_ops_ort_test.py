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

PIPELINE = "fuse-conv-activation,fuse-gemm-activation,fuse-gelu{domain=com.microsoft},remove-unused"
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


def gelu_model(form, opset=17):
    """x [4,32] -> GELU written out as torch exports it (erf) or as GPT-2's gelu_new (tanh)."""
    inits = [const("half", np.array(0.5)), const("one", np.array(1.0))]
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
    return model_of(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])], "y", inits, opset)


def cases():
    """(name, model, expected count of each com.microsoft op; ops left out expect none)."""
    out = []
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
    return out


def session(path):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3  # the fused model keeps Clip's now unused bound initializers
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def check(cli, work, name, model, want):
    src, dst = work / f"{name}.onnx", work / f"{name}_fused.onnx"
    onnx.save(model, src)
    proc = subprocess.run([str(cli), "optimize", str(src), "-o", str(dst), "--passes", PIPELINE],
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"inferopt optimize exited {proc.returncode}: {proc.stderr.strip()}"
    fused = onnx.load(dst)
    onnx.checker.check_model(fused, full_check=True)
    ops = [(n.domain, n.op_type) for n in fused.graph.node]
    counts = {op: ops.count(("com.microsoft", op)) for op in ("FusedConv", "FusedGemm", "Gelu", "FastGelu")}
    assert counts == {op: want.get(op, 0) for op in counts}, f"ops after: {ops}"
    imports = {o.domain: o.version for o in fused.opset_import}
    if any(counts.values()):
        assert imports.get("com.microsoft") == 1, f"opset imports {imports}"
    assert [o.name for o in fused.graph.output] == [o.name for o in model.graph.output]
    original, optimized = session(src), session(dst)
    rng = np.random.default_rng(7)
    feed = {i.name: rng.standard_normal(i.shape).astype(np.float32) for i in original.get_inputs()}
    for want, got, info in zip(original.run(None, feed), optimized.run(None, feed), original.get_outputs()):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"output {info.name}")
    fused_ops = [f"{n} {op}" for op, n in counts.items() if n]
    return ", ".join(fused_ops + ["outputs match"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True, type=Path, help="the inferopt binary")
    parser.add_argument("--work", required=True, type=Path, help="scratch folder (emptied first)")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    failures = 0
    for name, model, want in cases():
        try:
            print(f"PASS {name}: {check(args.cli, args.work, name, model, want)}")
        except Exception:  # report every case, then fail once
            failures += 1
            print(f"FAIL {name}:\n{traceback.format_exc()}")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
