#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus: tiny valid models, one per family of graph the commands
meet (convolutions and pools, an MLP, attention, LayerNorm, shape arithmetic, resizing and
slicing, QDQ, an If with subgraphs, symbolic batch), each loading and running in
onnxruntime. Tiny keeps every execution fast; the mutator grows them.

    python tests/fuzz/corpus/make_seeds.py tests/fuzz/corpus
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def tensor(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "seed", inputs, outputs, initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="fuzz-seeds")
    m.ir_version = 8
    return m


def rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 0.5


def conv_relu_pool():
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["y"], name="flat")]
    init = [const("w", rand([4, 2, 3, 3], 0)), const("b", rand([4], 1)), const("s", np.ones(4, np.float32)),
            const("bb", np.zeros(4, np.float32)), const("m", np.zeros(4, np.float32)), const("v", np.ones(4, np.float32))]
    return model(nodes, [tensor("x", [1, 2, 8, 8])], [tensor("y", [1, 4])], init)


def gemm_mlp():
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
             helper.make_node("Sigmoid", ["h"], ["a"], name="act"),
             helper.make_node("MatMul", ["a", "w2"], ["o"], name="fc2"),
             helper.make_node("Add", ["o", "b2"], ["y"], name="bias")]
    init = [const("w1", rand([8, 4], 2)), const("b1", rand([8], 3)), const("w2", rand([8, 3], 4)), const("b2", rand([3], 5))]
    return model(nodes, [tensor("x", [2, 4])], [tensor("y", [2, 3])], init)


def attention():
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="q"),
             helper.make_node("MatMul", ["x", "wk"], ["k"], name="k"),
             helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
             helper.make_node("Div", ["s", "scale"], ["d"], name="scale"),
             helper.make_node("Softmax", ["d"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "x"], ["y"], name="context")]
    init = [const("wq", rand([8, 8], 6)), const("wk", rand([8, 8], 7)), const("scale", np.array(2.0, np.float32))]
    return model(nodes, [tensor("x", [1, 4, 8])], [tensor("y", [1, 4, 8])], init)


def layer_norm_decomposed():
    nodes = [helper.make_node("ReduceMean", ["x"], ["mu"], name="mean", axes=[-1]),
             helper.make_node("Sub", ["x", "mu"], ["dx"], name="sub"),
             helper.make_node("Pow", ["dx", "two"], ["sq"], name="pow"),
             helper.make_node("ReduceMean", ["sq"], ["var"], name="var", axes=[-1]),
             helper.make_node("Add", ["var", "eps"], ["ve"], name="add_eps"),
             helper.make_node("Sqrt", ["ve"], ["sd"], name="sqrt"),
             helper.make_node("Div", ["dx", "sd"], ["nx"], name="div"),
             helper.make_node("Mul", ["nx", "gamma"], ["g"], name="scale"),
             helper.make_node("Add", ["g", "beta"], ["ln"], name="shift"),
             helper.make_node("Erf", ["ln"], ["e"], name="erf"),
             helper.make_node("Mul", ["ln", "e"], ["y"], name="gate")]
    init = [const("two", np.array(2.0, np.float32)), const("eps", np.array(1e-5, np.float32)),
            const("gamma", np.ones(8, np.float32)), const("beta", np.zeros(8, np.float32))]
    return model(nodes, [tensor("x", [2, 3, 8])], [tensor("y", [2, 3, 8])], init)


def shape_arithmetic():
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["b"], name="batch", axis=0),
             helper.make_node("Unsqueeze", ["b", "zero_axes"], ["bu"], name="unsq"),
             helper.make_node("Concat", ["bu", "minus_one"], ["target"], name="cat", axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape")]
    init = [const("zero", np.array(0, np.int64)), const("zero_axes", np.array([0], np.int64)),
            const("minus_one", np.array([-1], np.int64))]
    return model(nodes, [tensor("x", ["batch", 3, 4])], [tensor("y", ["batch", 12])], init)


def resize_slice_concat():
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["r"], name="resize", mode="nearest"),
             helper.make_node("Slice", ["r", "starts", "ends", "axes"], ["s"], name="slice"),
             helper.make_node("Pad", ["s", "pads"], ["p"], name="pad"),
             helper.make_node("Concat", ["p", "p"], ["y"], name="cat", axis=1)]
    init = [const("scales", np.array([1, 1, 2, 2], np.float32)), const("starts", np.array([1], np.int64)),
            const("ends", np.array([7], np.int64)), const("axes", np.array([2], np.int64)),
            const("pads", np.array([0, 0, 1, 0, 0, 0, 1, 0], np.int64))]
    return model(nodes, [tensor("x", [1, 2, 4, 4])], [tensor("y", [1, 4, 8, 8])], init)


def qdq():
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["qx"], name="qx"),
             helper.make_node("DequantizeLinear", ["qx", "sx", "zx"], ["dx"], name="dqx"),
             helper.make_node("DequantizeLinear", ["qw", "sw", "zw"], ["dw"], name="dqw"),
             helper.make_node("Conv", ["dx", "dw"], ["y"], name="conv")]
    init = [const("sx", np.array(0.05, np.float32)), const("zx", np.array(0, np.uint8)),
            const("qw", np.arange(36, dtype=np.int8).reshape(2, 2, 3, 3)), const("sw", np.array(0.01, np.float32)),
            const("zw", np.array(0, np.int8))]
    return model(nodes, [tensor("x", [1, 2, 6, 6])], [tensor("y", [1, 2, 4, 4])], init)


def if_subgraphs():
    then_graph = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="then_relu")], "then", [],
                                   [tensor("t", [1, 4])])
    else_graph = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="else_neg")], "else", [],
                                   [tensor("e", [1, 4])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["total"], name="sum", keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["cond"], name="positive"),
             helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_graph, else_branch=else_graph)]
    return model(nodes, [tensor("x", [1, 4])], [tensor("y", [1, 4])], [const("zero", np.array(0.0, np.float32))])


def dynamo_style():
    nodes = [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["n"], name="ln", axis=-1),
             helper.make_node("MatMul", ["n", "w"], ["h"], name="proj"),
             helper.make_node("Gelu", ["h"], ["g"], name="gelu"),
             helper.make_node("ReduceMean", ["g", "axes"], ["y"], name="mean", keepdims=1)]
    init = [const("gamma", np.ones(8, np.float32)), const("beta", np.zeros(8, np.float32)),
            const("w", rand([8, 8], 8)), const("axes", np.array([-1], np.int64))]
    return model(nodes, [tensor("x", ["batch", "sequence", 8])], [tensor("y", ["batch", "sequence", 1])], init, opset=20)


SEEDS = {
    "conv_relu_pool.onnx": conv_relu_pool,
    "gemm_mlp.onnx": gemm_mlp,
    "attention.onnx": attention,
    "layer_norm_decomposed.onnx": layer_norm_decomposed,
    "shape_arithmetic.onnx": shape_arithmetic,
    "resize_slice_concat.onnx": resize_slice_concat,
    "qdq.onnx": qdq,
    "if_subgraphs.onnx": if_subgraphs,
    "dynamo_style_opset20.onnx": dynamo_style,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    folder = parser.parse_args().folder
    os.makedirs(folder, exist_ok=True)
    for name, make in SEEDS.items():
        m = make()
        onnx.checker.check_model(m, full_check=True)
        onnx.save(m, os.path.join(folder, name))


if __name__ == "__main__":
    main()
