#!/usr/bin/env python3
"""Exports the full-size models of issue 20's executor-against-onnxruntime table.

torchvision ResNet-18, MobileNetV3-Small, EfficientNet-B0, ConvNeXt-Tiny and RegNetY-400MF
(batch 1, 3x224x224) and a BERT-base and a MiniLM-L6 encoder shaped model (transformers'
BertModel from a config: hidden 768/12 layers and 384/6 layers; inputs input_ids and
attention_mask, batch 1, sequence dynamic). Weights are seeded random values: latency does not
depend on them (the encoders' biases are drawn too: at zero, as transformers starts them, an
optimizer would fold them away). TorchScript exporter, opset 17, eval mode, one file each (ConvNeXt-Tiny and
BERT-base are about 110 and 440 MB, so they are not committed; CI never needs this script).

Needs torch, torchvision, transformers and onnx.

  python benchmarks/runtime/export_bench_models.py --out DIR [--only NAME ...]
"""
import argparse
from pathlib import Path

import torch

IMAGE_MODELS = {
    "resnet18": "resnet18",
    "mobilenet_v3_small": "mobilenet_v3_small",
    "efficientnet_b0": "efficientnet_b0",
    "convnext_tiny": "convnext_tiny",
    "regnet_y_400mf": "regnet_y_400mf",
}
ENCODERS = {
    "bert_base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "minilm_l6": dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536),
}


def export_image_model(name, path):
    import torchvision
    model = getattr(torchvision.models, IMAGE_MODELS[name])(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(model, (x,), str(path), dynamo=False, opset_version=17, input_names=["input"],
                      output_names=["logits"])


class LastHidden(torch.nn.Module):
    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask):
        return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def export_encoder(name, path):
    from transformers import BertConfig, BertModel
    config = BertConfig(vocab_size=30522, attn_implementation="eager", **ENCODERS[name])
    model = LastHidden(BertModel(config, add_pooling_layer=False)).eval()
    # transformers starts biases at zero, which an optimizer would fold away; trained models have them.
    for name, param in model.named_parameters():
        if name.endswith("bias"):
            torch.nn.init.normal_(param, std=0.02)
    ids = torch.randint(0, config.vocab_size, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.int64)
    torch.onnx.export(model, (ids, mask), str(path), dynamo=False, opset_version=17,
                      input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                      dynamic_axes={"input_ids": {1: "sequence"}, "attention_mask": {1: "sequence"}})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--only", nargs="*", help="names to export (default: all)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    for name in args.only or [*IMAGE_MODELS, *ENCODERS]:
        path = args.out / f"{name}.onnx"
        with torch.no_grad():
            (export_image_model if name in IMAGE_MODELS else export_encoder)(name, path)
        print(path)


if __name__ == "__main__":
    main()
