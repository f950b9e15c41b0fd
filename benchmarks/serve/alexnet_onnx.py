#!/usr/bin/env python3
"""torchvision's AlexNet as ONNX without torch: the same layers, seeded random weights.

export_serve_models.py exports AlexNet through torch; this script writes the same network
(torchvision's layer sizes, input float32[batch, 3, 224, 224], opset 17) with onnx.helper and
numpy, for machines without torch. At 224x224 the adaptive 6x6 average pool is the identity,
so it is left out; dropout is the identity in eval mode. Throughput does not depend on the
weights. About 244 MB, so not committed.

  python benchmarks/serve/alexnet_onnx.py --out alexnet_dynbatch.onnx
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# (out channels, kernel, stride, pad, max pool after) of torchvision's AlexNet features.
CONVS = [(64, 11, 4, 2, True), (192, 5, 1, 2, True), (384, 3, 1, 1, False), (256, 3, 1, 1, False), (256, 3, 1, 1, True)]
FULLY_CONNECTED = [(256 * 6 * 6, 4096, True), (4096, 4096, True), (4096, 1000, False)]


def build(rng):
    nodes, weights = [], []

    def weight(name, shape, fan_in):
        weights.append(numpy_helper.from_array((rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32), name))
        return name

    x, channels = "input", 3
    for i, (out, k, stride, pad, pool) in enumerate(CONVS):
        w = weight(f"conv{i}.weight", (out, channels, k, k), channels * k * k)
        b = weight(f"conv{i}.bias", (out,), channels * k * k)
        nodes.append(helper.make_node("Conv", [x, w, b], [f"conv{i}"], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4))
        nodes.append(helper.make_node("Relu", [f"conv{i}"], [f"relu{i}"]))
        x, channels = f"relu{i}", out
        if pool:
            nodes.append(helper.make_node("MaxPool", [x], [f"pool{i}"], kernel_shape=[3, 3], strides=[2, 2]))
            x = f"pool{i}"
    nodes.append(helper.make_node("Flatten", [x], ["flat"], axis=1))
    x = "flat"
    for i, (fan_in, out, relu) in enumerate(FULLY_CONNECTED):
        w = weight(f"fc{i}.weight", (out, fan_in), fan_in)
        b = weight(f"fc{i}.bias", (out,), fan_in)
        y = f"fc{i}" if relu or i + 1 < len(FULLY_CONNECTED) else "logits"
        nodes.append(helper.make_node("Gemm", [x, w, b], [y], transB=1))
        x = y
        if relu:
            nodes.append(helper.make_node("Relu", [x], [f"fc_relu{i}"]))
            x = f"fc_relu{i}"
    graph = helper.make_graph(nodes, "alexnet", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1000])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="inferopt alexnet_onnx.py")
    model.ir_version = 8  # what opset 17 came with (the torch exporter writes 8 too), not the onnx package's newest
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    onnx.save(build(np.random.default_rng(args.seed)), args.out)
    print(args.out)


if __name__ == "__main__":
    main()
