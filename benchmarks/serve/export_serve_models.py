#!/usr/bin/env python3
"""Exports full-size torchvision CNNs with a symbolic batch dimension, for serve_bench.py.

Dynamic batching pays where one image leaves the hardware idle: a network whose weights are
read once per batch instead of once per image. AlexNet is the classic case (58.6 M of its
61.1 M weights are in the three fully connected layers, a matrix-vector product per image at
batch 1); ResNet-18 is the opposite (convolutions, 11.7 M weights, little to share). Both are
exported so that the batching table shows the two ends.

TorchScript exporter, opset 17, eval mode, input float32[batch, 3, 224, 224], seeded random
weights (throughput does not depend on them). AlexNet is about 233 MB, so the files are not
committed; CI never needs this script.

Needs torch, torchvision and onnx.

  python benchmarks/serve/export_serve_models.py --out DIR [--only alexnet resnet18]
"""
import argparse
from pathlib import Path

import torch

MODELS = ("alexnet", "resnet18")


def export(name, path):
    import torchvision
    model = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(model, (x,), str(path), dynamo=False, opset_version=17, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--only", nargs="*", choices=MODELS, help="names to export (default: all)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    for name in args.only or MODELS:
        path = args.out / f"{name}_dynbatch.onnx"
        with torch.no_grad():
            export(name, path)
        print(path)


if __name__ == "__main__":
    main()
