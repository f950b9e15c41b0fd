#!/usr/bin/env python3
"""Writes the norm exports in this folder: LayerNorm and RMSNorm modules written out the way
model code writes them (a hand-written LayerNorm; LlamaRMSNorm with torch.rsqrt; T5LayerNorm,
which casts to float32 first), exported in eval mode by the TorchScript exporter (opset 17) and
the dynamo exporter (opsets 20 and 23), external data folded into each file. fuse-layer-norm
must recognise every one (tests/python/fused_ops_ort_test.py). Needs torch; CI reads only the
committed files.

    python export_norms.py   (from this folder)
"""

import onnx
import torch
from torch import nn

HIDDEN = 16


class WrittenOutLayerNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(HIDDEN))
        self.bias = nn.Parameter(torch.randn(HIDDEN))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        variance = (x - mean).pow(2).mean(-1, keepdim=True)
        return self.weight * ((x - mean) / torch.sqrt(variance + 1e-5)) + self.bias


class LlamaStyleRMSNorm(nn.Module):
    def __init__(self, upcast=False):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(HIDDEN))
        self.upcast = upcast  # T5LayerNorm's x.to(float32)

    def forward(self, x):
        squares = (x.to(torch.float32) if self.upcast else x).pow(2)
        return self.weight * (x * torch.rsqrt(squares.mean(-1, keepdim=True) + 1e-6))


def main():
    torch.manual_seed(0)
    x = torch.randn(2, 5, HIDDEN)
    modules = {"ln": WrittenOutLayerNorm(), "rms": LlamaStyleRMSNorm(), "t5": LlamaStyleRMSNorm(upcast=True)}
    for name, module in modules.items():
        module.eval()
        torch.onnx.export(module, (x,), f"{name}_ts.onnx", opset_version=17, dynamo=False)
        for opset in (20, 23):
            path = f"{name}_dynamo{opset}.onnx"
            torch.onnx.export(module, (x,), path, opset_version=opset, dynamo=True)
            onnx.save(onnx.load(path), path)  # the weights inline, no .data file beside it


if __name__ == "__main__":
    main()
