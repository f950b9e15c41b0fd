#!/usr/bin/env python3
"""Export ViT-B/16 to ONNX with a hidden-state output, for timing INT8 and judging its cosine.

The model is `transformers.ViTModel(ViTConfig())`: ViT-B/16 at 224x224 (12 layers, hidden 768,
12 heads, MLP 3072, about 86 M parameters). Its weights are RANDOM (seeded; fill the zero
biases with `tests/python/check_harness.py:with_trained_biases` before timing, as for BERT-base).
Unlike torchvision's `vit_b_16(weights=None)`, whose classifier head starts at
zeros (all-zero logits, no cosine to judge), this exports `last_hidden_state` first and
`pooler_output` second.

TorchScript exporter (dynamo=False), opset 17 by default; input pixel_values [batch, 3, 224,
224] (batch dynamic). Needs torch and transformers, NOT project or CI dependencies; write the
output outside the repository.

  python benchmarks/quant/export_vit.py --out /some/dir/vit_b16.onnx [--opset 17]
"""
import argparse
from pathlib import Path

import torch
from transformers import ViTConfig, ViTModel


class Encoder(torch.nn.Module):
    """ViTModel returning a plain tuple, so the tracer names the outputs' order."""

    def __init__(self, vit):
        super().__init__()
        self.vit = vit

    def forward(self, pixel_values):
        out = self.vit(pixel_values=pixel_values)
        return out.last_hidden_state, out.pooler_output


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="output .onnx file")
    ap.add_argument("--opset", type=int, default=17, help="ONNX opset version")
    args = ap.parse_args()

    torch.manual_seed(0)
    vit = ViTModel(ViTConfig())  # ViT-B/16 defaults
    model = Encoder(vit).eval()
    pixels = torch.randn(1, 3, vit.config.image_size, vit.config.image_size)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(model, (pixels,), str(args.out), dynamo=False, opset_version=args.opset,
                          input_names=["pixel_values"], output_names=["last_hidden_state", "pooler_output"],
                          dynamic_axes={"pixel_values": {0: "batch"}, "last_hidden_state": {0: "batch"},
                                        "pooler_output": {0: "batch"}})
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB, opset {args.opset})")


if __name__ == "__main__":
    main()
