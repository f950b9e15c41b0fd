"""A small model shaped like a TorchScript export (torch.onnx.export, dynamo=False): layers
share equal initializers, most readers reach the shared bias through an Identity node, and
two 1x1 convs share one weight. The quantize and prune oracles run inferopt on it."""

import numpy as np
import onnx
from onnx import helper, numpy_helper

INPUT_SHAPE = [1, 3, 16, 16]
CLASSES = 10


def _constant(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def write_shared_constants_model(path, seed=0):
    """Writes x[1,3,16,16] -> 4 Conv+Relu (one bias for all, through Identity nodes for three;
    one weight for the last two) -> GlobalAveragePool -> Flatten -> Gemm -> y[1,10]."""
    rng = np.random.default_rng(seed)
    inits = [
        _constant("bias", rng.normal(0, 0.1, 8)),
        _constant("w1", rng.normal(0, 0.3, (8, 3, 3, 3))),
        _constant("w2", rng.normal(0, 0.2, (8, 8, 3, 3))),
        _constant("w_shared", rng.normal(0, 0.4, (8, 8, 1, 1))),
        _constant("fc.weight", rng.normal(0, 0.3, (CLASSES, 8))),
        _constant("fc.bias", rng.normal(0, 0.1, CLASSES)),
    ]
    nodes, h = [], "x"
    for k, (weight, bias_read, pads) in enumerate(
            [("w1", "bias", 1), ("w2", "id1", 1), ("w_shared", "id2", 0), ("w_shared", "id3", 0)]):
        if bias_read != "bias":
            nodes.append(helper.make_node("Identity", ["bias"], [bias_read], name=f"/Identity_{bias_read}"))
        nodes.append(helper.make_node("Conv", [h, weight, bias_read], [f"conv{k}"], name=f"/conv{k}/Conv",
                                      pads=[pads] * 4))
        nodes.append(helper.make_node("Relu", [f"conv{k}"], [f"relu{k}"], name=f"/relu{k}/Relu"))
        h = f"relu{k}"
    nodes += [
        helper.make_node("GlobalAveragePool", [h], ["pool"], name="/pool/GlobalAveragePool"),
        helper.make_node("Flatten", ["pool"], ["flat"], name="/Flatten"),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["y"], name="/fc/Gemm", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "shared_constants",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, INPUT_SHAPE)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, CLASSES])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))


def assert_distinct_node_names(path):
    """onnxruntime refuses a graph with two nodes of one name; say which one repeats."""
    seen = set()
    for n in onnx.load(str(path)).graph.node:
        assert not n.name or n.name not in seen, f"{path}: two nodes named {n.name!r}"
        seen.add(n.name)
