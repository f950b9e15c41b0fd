#!/usr/bin/env python3
"""Writes the regression corpus: one small model for every contract break found so far.

Each model is something a command once crashed on, hung on, exited 3 on, or accepted though
onnxruntime refuses it. `expected.tsv` pairs each file with a phrase the one error line must
contain; tests/cli/regression_corpus_test.cpp runs every command on every file and checks
exit code 2, that one line, no output and an untouched input.

Models found by the fuzzers are committed as they were found (minimized) and listed in
`expected.tsv` by hand; this script leaves such files alone.

    python tests/fuzz/regressions/make_regressions.py tests/fuzz/regressions
"""

import argparse
import os

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

OPSET = 17


def model(nodes, inputs, outputs, initializers=(), opset=OPSET):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="regressions")
    m.ir_version = 8
    return m


def tensor(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def weights(name, shape):
    return numpy_helper.from_array(np.full(shape, 0.5, dtype=np.float32), name)


def windowed(op, strides, **attrs):
    """Conv, MaxPool or AveragePool over 1x2x8x8 with the given strides."""
    inputs = ["x", "w"] if op == "Conv" else ["x"]
    init = [weights("w", [2, 2, 3, 3])] if op == "Conv" else []
    extra = {} if op == "Conv" else {"kernel_shape": [3, 3]}
    node = helper.make_node(op, inputs, ["y"], name="window", strides=strides, **extra, **attrs)
    return model([node], [tensor("x", [1, 2, 8, 8])], [tensor("y", None)], init)


def fused_conv_with_pads(pads):
    """com.microsoft FusedConv (Conv's attributes) over 1x4x10x10 with the given pads: found by
    fuzz_execute, whose INT64_MIN pad overflowed the window arithmetic of shape inference."""
    node = helper.make_node("FusedConv", ["x", "w", "b"], ["y"], name="conv", domain="com.microsoft", pads=pads,
                            strides=[1, 1], activation="Relu")
    m = model([node], [tensor("x", [1, 4, 10, 10])], [tensor("y", None)], [weights("w", [8, 4, 3, 3]), weights("b", [8])])
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


def concat_of_copies(count):
    node = helper.make_node("Concat", ["x"] * count, ["y"], name="cat", axis=0)
    return model([node], [tensor("x", [1, 4])], [tensor("y", [count, 4])])


def relu_with_extra_output():
    node = helper.make_node("Relu", ["x"], ["y", "extra"], name="relu")
    return model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4])])


def huge_constant_of_shape():
    shape = numpy_helper.from_array(np.array([2**33], dtype=np.int64), "shape")
    node = helper.make_node("ConstantOfShape", ["shape"], ["c"], name="fill")
    add = helper.make_node("Add", ["x", "c"], ["y"], name="add")
    return model([node, add], [tensor("x", [1])], [tensor("y", None)], [shape])


def relu_on(input_type):
    x = helper.make_value_info("x", input_type)
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    return model([node], [x], [tensor("y", [1, 4])])


def conv_on_int_input():
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv")
    # The output is declared int32 too, so only the op's type constraint can refuse it.
    return model([node], [tensor("x", [1, 2, 8, 8], TensorProto.INT32)], [tensor("y", None, TensorProto.INT32)],
                 [weights("w", [2, 2, 3, 3])])


def declared_output_type_wrong():
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    return model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4], TensorProto.INT64)])


def with_extra_inputs(op, count, **attrs):
    names = ["x"] + [f"extra{i}" for i in range(count - 1)]
    init = [weights(n, [1]) for n in names[1:]]
    node = helper.make_node(op, names, ["y"], name="node", **attrs)
    return model([node], [tensor("x", [1, 2, 8, 8])], [tensor("y", None)], init)


def conv_with_five_inputs():
    init = [weights("w", [2, 2, 3, 3]), weights("b", [2]), weights("p", [2]), weights("q", [2])]
    node = helper.make_node("Conv", ["x", "w", "b", "p", "q"], ["y"], name="conv")
    return model([node], [tensor("x", [1, 2, 8, 8])], [tensor("y", None)], init)


def external_offset(offset):
    w = TensorProto()
    w.name, w.data_type = "w", TensorProto.FLOAT
    w.dims.extend([1, 4])
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "offset_weights.bin"), ("offset", offset), ("length", "16")):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    return model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4])], [w])


def transpose_perm(perm):
    node = helper.make_node("Transpose", ["x"], ["y"], name="transpose", perm=perm)
    return model([node], [tensor("x", [2, 3, 4])], [tensor("y", None)])


def nested_ifs(depth):
    """`depth` If nodes, each holding the next in its then-branch; else-branches return x."""
    def leaf(name):
        node = helper.make_node("Identity", ["x"], [name], name=f"id_{name}")
        return helper.make_graph([node], f"g_{name}", [], [tensor(name, [1, 4])])

    graph = leaf("r0")
    for level in range(1, depth):
        out = f"r{level}"
        node = helper.make_node("If", ["cond"], [out], name=f"if{level}", then_branch=graph,
                                else_branch=leaf(f"e{level}"))
        graph = helper.make_graph([node], f"branch{level}", [], [tensor(out, [1, 4])])
    top = helper.make_node("If", ["cond"], ["y"], name="top", then_branch=graph, else_branch=leaf("e_top"))
    return model([top], [tensor("cond", [], TensorProto.BOOL), tensor("x", [1, 4])], [tensor("y", [1, 4])])


def reshape_to_shape_of_length(length):
    """Reshape whose shape input claims `length` entries: a rank nothing could allocate."""
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")
    return model([node], [tensor("x", [1, 4]), tensor("shape", [length], TensorProto.INT64)], [tensor("y", None)])


def pad_by(amount):
    pads = numpy_helper.from_array(np.array([0, 0, 0, amount, 0, 0, 0, amount], dtype=np.int64), "pads")
    node = helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")
    return model([node], [tensor("x", [1, 2, 8, 8])], [tensor("y", None)], [pads])


def resize_by(scale):
    scales = numpy_helper.from_array(np.array([1, 1, scale, scale], dtype=np.float32), "scales")
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize")
    return model([node], [tensor("x", [1, 2, 8, 8])], [tensor("y", None)], [scales])


def gelu_with_extra_output():
    node = helper.make_node("Gelu", ["x"], ["y", "extra"], name="gelu")
    return model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4])], opset=20)


def with_bytes_replaced(m, old, new):
    """The serialized model with `old` replaced by `new`: how a name that is not UTF-8 (which
    the protobuf library refuses to set) gets into a file."""
    data = m.SerializeToString()
    assert data.count(old) == 1
    return data.replace(old, new)


def op_type_not_utf8():
    node = helper.make_node("MaXMul", ["x", "x"], ["y"], name="proj")
    return with_bytes_replaced(model([node], [tensor("x", [4, 4])], [tensor("y", [4, 4])]), b"MaXMul", b"Ma\xf4Mul")


def unknown_domain_op():
    node = helper.make_node("Relu", ["x"], ["y"], name="relu", domain="bogus.domain")
    m = model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4])])
    m.opset_import.append(helper.make_opsetid("bogus.domain", 1))
    return m


def local_function_call():
    """A node calling a model-local function of a custom domain: valid, and onnxruntime runs it."""
    body = helper.make_node("Relu", ["a"], ["b"])
    function = helper.make_function("local.fns", "MyRelu", ["a"], ["b"], [body],
                                    [helper.make_opsetid("", OPSET)])
    node = helper.make_node("MyRelu", ["x"], ["y"], name="call", domain="local.fns")
    m = model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4])])
    m.opset_import.append(helper.make_opsetid("local.fns", 1))
    m.functions.append(function)
    return m


def if_output_declared(elem):
    def branch(name):
        node = helper.make_node("Identity", ["x"], [name], name=f"id_{name}")
        return helper.make_graph([node], f"g_{name}", [], [tensor(name, [1, 4])])

    node = helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=branch("t"), else_branch=branch("e"))
    return model([node], [tensor("cond", [], TensorProto.BOOL), tensor("x", [1, 4])], [tensor("y", [1, 4], elem)])


def batch_norm_with_int4_mean():
    """A BatchNormalization at opset 20 whose running mean claims int4 (the bytes are floats)."""
    params = [weights(name, [2]) for name in ("scale", "bias", "var")]
    mean = weights("mean", [2])
    mean.data_type = 22  # INT4: newer than the ONNX library we link, checked by our own table
    node = helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"], name="bn")
    return model([node], [tensor("x", [1, 2, 4, 4])], [tensor("y", [1, 2, 4, 4])], params + [mean], opset=20)


def fused_gemm_with_one_input():
    node = helper.make_node("FusedGemm", ["x"], ["y"], name="fc", domain="com.microsoft")
    m = model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4])])
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


def negative_constant_of_shape_in_branch():
    """A ConstantOfShape in an If branch reading a shape of -1 from the main graph."""
    shape = numpy_helper.from_array(np.array([-1], dtype=np.int64), "shape")
    fill = helper.make_node("ConstantOfShape", ["shape"], ["e"], name="fill")
    other = helper.make_node("Identity", ["x"], ["t"], name="same")
    node = helper.make_node("If", ["cond"], ["y"], name="branch",
                            then_branch=helper.make_graph([other], "then", [], [tensor("t", None)]),
                            else_branch=helper.make_graph([fill], "else", [], [tensor("e", None)]))
    return model([node], [tensor("cond", [], TensorProto.BOOL), tensor("x", [4])], [tensor("y", None)], [shape])


def pad_with_matrix_pads():
    pads = numpy_helper.from_array(np.zeros([8, 1], dtype=np.int64), "pads")
    node = helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")
    return model([node], [tensor("x", [1, 2, 8, 8])], [tensor("y", None)], [pads])


def conv_with_matrix_bias():
    init = [weights("w", [2, 2, 3, 3]), weights("b", [2, 1])]
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv")
    return model([node], [tensor("x", [1, 2, 8, 8])], [tensor("y", None)], init)


def gemm_with_bias(shape):
    init = [weights("w", [4, 3]), weights("c", shape)]
    node = helper.make_node("Gemm", ["x", "w", "c"], ["y"], name="fc")
    return model([node], [tensor("x", [2, 4])], [tensor("y", None)], init)


def layer_norm_without_bias():
    """Valid (B is optional), but onnxruntime crashes on the empty name: we write it left out."""
    node = helper.make_node("LayerNormalization", ["x", "scale", ""], ["y"], name="norm", axis=-1)
    return model([node], [tensor("x", [2, 4])], [tensor("y", [2, 4])], [weights("scale", [4])])


def if_branch_declared(dims):
    """An If whose then-branch declares its Relu's output with `dims` (it computes 1x4)."""
    relu = helper.make_node("Relu", ["x"], ["t"], name="relu")
    same = helper.make_node("Identity", ["x"], ["e"], name="same")
    node = helper.make_node("If", ["cond"], ["y"], name="branch",
                            then_branch=helper.make_graph([relu], "then", [], [tensor("t", dims)]),
                            else_branch=helper.make_graph([same], "else", [], [tensor("e", None)]))
    return model([node], [tensor("cond", [], TensorProto.BOOL), tensor("x", [1, 4])], [tensor("y", None)])


def corrupt_node_metadata():
    """A node's metadata_props entry (ONNX 1.16+, unknown to the linked schema) with a length
    that runs past its end: our parser keeps the field as opaque bytes, onnxruntime's fails."""
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    entry = node.metadata_props.add()
    entry.key, entry.value = "origin", "None"
    m = model([node], [tensor("x", [1, 4])], [tensor("y", [1, 4])])
    return with_bytes_replaced(m, b"\x12\x04None", b"\x12\x84None")


def cases():
    """(file name, model, phrase the error line must contain)."""
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [1, 4]))
    mapping = helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, [4]))
    optional = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [1, 4]))
    yield "zero_stride_conv.onnx", windowed("Conv", [0, 0]), "strides [0,0] has an entry below 1"
    yield "zero_stride_maxpool.onnx", windowed("MaxPool", [2, 0]), "strides [2,0] has an entry below 1"
    yield "zero_stride_averagepool.onnx", windowed("AveragePool", [0, 1]), "strides [0,1] has an entry below 1"
    yield "negative_pad_conv.onnx", windowed("Conv", [1, 1], pads=[0, -1, 0, 0]), "pads [0,-1,0,0] has an entry below 0"
    yield "fused_conv_int64_min_pad.onnx", fused_conv_with_pads([1, 0, 1, -(2**63)]), "has an entry below 0"
    yield "zero_group_conv.onnx", windowed("Conv", [1, 1], group=0), "group 0 is below 1"
    yield "concat_30000_inputs.onnx", concat_of_copies(30000), "has 30000 inputs, over the limit of 16384"
    yield "relu_extra_output.onnx", relu_with_extra_output(), "output size 2 not in range"
    yield "constant_of_shape_2pow33.onnx", huge_constant_of_shape(), "more than 2147483648 elements"
    yield "sequence_input_to_relu.onnx", relu_on(seq), "input 'x' is not a tensor"
    yield "map_input_to_relu.onnx", relu_on(mapping), "input 'x' is not a tensor"
    yield "optional_input_to_relu.onnx", relu_on(optional), "input 'x' is not a tensor"
    yield "int32_input_to_conv.onnx", conv_on_int_input(), "input 'x' is int32"
    yield "output_declared_int64.onnx", declared_output_type_wrong(), "is declared int64 but computes float"
    yield "softmax_two_inputs.onnx", with_extra_inputs("Softmax", 2), "input size 2 not in range"
    yield "resize_five_inputs.onnx", with_extra_inputs("Resize", 5), "input size 5 not in range"
    yield "conv_five_inputs.onnx", conv_with_five_inputs(), "input size 5 not in range"
    yield "transpose_perm_repeats.onnx", transpose_perm([0, 0, 1]), "perm [0,0,1] is not a permutation"
    yield "cast_to_unknown_type.onnx", model([helper.make_node("Cast", ["x"], ["y"], name="cast", to=99)],
                                              [tensor("x", [1, 4])], [tensor("y", None)]), "to 99 is not an ONNX data type"
    yield "ifs_nested_20_deep.onnx", nested_ifs(20), "over the limit of 16"
    # Found by the libFuzzer targets (each crashed or overflowed inside our code).
    yield "fuzz_reshape_shape_length_2pow40.onnx", reshape_to_shape_of_length(2**40), "more than 2147483648 elements"
    yield "fuzz_conv_group_2pow62.onnx", windowed("Conv", [1, 1], group=2**62), "group 4611686018427387904 is above"
    yield "fuzz_pad_2pow62.onnx", pad_by(2**62), "is beyond any tensor's size"
    yield "fuzz_resize_scale_1e30.onnx", resize_by(1e30), "makes a dim beyond any tensor's size"
    yield "fuzz_gelu_extra_output.onnx", gelu_with_extra_output(), "output size 2 not in range"
    # Found by the mutation campaign (we accepted the model; onnxruntime refused our output).
    yield "gelu_unknown_attribute.onnx", model([helper.make_node("Gelu", ["x"], ["y"], name="gelu", axis=1)],
                                               [tensor("x", [1, 4])], [tensor("y", [1, 4])], opset=20), \
        "Unrecognized attribute: axis for operator Gelu"
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
    yield "reduce_mean_axes_attribute_at_18.onnx", model(
        [helper.make_node("ReduceMean", ["x"], ["y"], name="mean", axes=[1])],
        [tensor("x", [1, 4])], [tensor("y", None)], opset=18), "Unrecognized attribute: axes for operator ReduceMean"
    yield "unknown_op_at_opset_20.onnx", model([helper.make_node("MaMul", ["x", "x"], ["y"], name="proj")],
                                              [tensor("x", [4, 4])], [tensor("y", [4, 4])], opset=20), \
        "ai.onnx opset 20 has no operator 'MaMul'"
    yield "op_type_not_utf8.onnx", op_type_not_utf8(), "op type 'Ma\\xf4Mul' is not valid UTF-8"
    yield "unknown_domain_op.onnx", unknown_domain_op(), "which is neither an operator onnxruntime or inferopt knows"
    yield "local_function_call.onnx", local_function_call(), "*"
    yield "if_output_declared_uint64.onnx", if_output_declared(TensorProto.UINT64), \
        "output 'y' is declared uint64 but"
    yield "concat_blank_input.onnx", model([helper.make_node("Concat", ["", "x"], ["y"], name="cat", axis=0)],
                                           [tensor("x", [1, 4])], [tensor("y", None)]), \
        "input 0 (inputs) is required but empty"
    scales3 = numpy_helper.from_array(np.array([1, 2, 2], dtype=np.float32), "scales")
    yield "resize_scales_for_three_axes.onnx", model(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize")],
        [tensor("x", [1, 2, 8, 8])], [tensor("y", None)], [scales3]), "scales has 3 entries but Resize resizes 4 axes"
    yield "batch_norm_int4_mean_at_20.onnx", batch_norm_with_int4_mean(), \
        "input 'mean' is int4, a type BatchNormalization does not take"
    yield "fused_gemm_one_input.onnx", fused_gemm_with_one_input(), "has input size 1 not in range [min=2, max=3]"
    yield "constant_of_shape_negative_in_branch.onnx", negative_constant_of_shape_in_branch(), \
        "shape has a negative dim -1"
    yield "pad_matrix_pads.onnx", pad_with_matrix_pads(), "input 'pads' must be a vector, not of shape 8x1"
    yield "resize_without_scales_or_sizes.onnx", model([helper.make_node("Resize", ["x"], ["y"], name="resize")],
                                                       [tensor("x", [1, 2, 8, 8])], [tensor("y", None)]), \
        "give Resize scales or sizes"
    yield "graph_without_outputs.onnx", model([], [], []), "the graph has no outputs"
    yield "layer_norm_without_bias.onnx", layer_norm_without_bias(), "*"
    yield "if_branch_shape_contradiction.onnx", if_branch_declared([1, 5]), "is declared 1x5 but computes 1x4"
    yield "corrupt_node_metadata.onnx", corrupt_node_metadata(), "field 9 of NodeProto (unknown to this ONNX schema) is malformed"
    yield "layer_norm_nan_epsilon.onnx", model(
        [helper.make_node("LayerNormalization", ["x", "scale"], ["y"], name="norm", epsilon=float("nan"))],
        [tensor("x", [2, 4])], [tensor("y", [2, 4])], [weights("scale", [4])]), "epsilon nan must be finite and not negative"
    # Accepted once though onnxruntime then failed on every input: operands of shapes no data fits.
    yield "conv_matrix_bias.onnx", conv_with_matrix_bias(), "bias must be a vector, not of rank 2"
    yield "gemm_bias_not_broadcasting.onnx", gemm_with_bias([2, 2]), "does not broadcast to the product's"
    yield "global_pool_rank_2.onnx", model([helper.make_node("GlobalAveragePool", ["x"], ["y"], name="gap")],
                                           [tensor("x", [2, 4])], [tensor("y", None)]), "input must have rank 3 or more"
    for name, offset in (("space", " 5"), ("plus", "+0"), ("minus", "-0"), ("zeros", "00"), ("trailing_space", "0 ")):
        yield f"external_offset_{name}.onnx", external_offset(offset), "is not a non-negative decimal integer"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    folder = parser.parse_args().folder
    os.makedirs(folder, exist_ok=True)
    # The external-data cases read 16 bytes from here; the offset string is what is wrong.
    with open(os.path.join(folder, "offset_weights.bin"), "wb") as f:
        f.write(np.arange(8, dtype=np.float32).tobytes())
    generated = []
    for name, m, phrase in cases():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(m if isinstance(m, bytes) else m.SerializeToString())
        generated.append((name, phrase))
    manifest = os.path.join(folder, "expected.tsv")
    kept = []
    if os.path.exists(manifest):  # fuzzer findings, listed by hand, stay
        names = {name for name, _ in generated}
        with open(manifest) as f:
            kept = [line.rstrip("\n").split("\t", 1) for line in f if line.strip() and not line.startswith("#")]
        kept = [row for row in kept if row[0] not in names]
    with open(manifest, "w") as f:
        f.write("# file\tphrase its one error line contains (every command); * for a valid model no command may crash on\n")
        for name, phrase in generated + [tuple(row) for row in kept]:
            f.write(f"{name}\t{phrase}\n")


if __name__ == "__main__":
    main()
