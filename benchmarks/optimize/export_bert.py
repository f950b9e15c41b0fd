#!/usr/bin/env python3
"""Export a BERT-base encoder to ONNX, as a transformer-sized model for timing `inferopt optimize`.

The model is `transformers.BertModel(BertConfig())`: BERT-base (12 layers, hidden 768, 12 heads,
intermediate 3072, vocab 30522, about 110 M parameters, about 440 MB of float32 weights). Its
weights are RANDOM (seeded, torch.manual_seed(0)): nothing is downloaded, and the file is only
good for measuring compile/optimize time and memory, not for accuracy.

It is exported with the TorchScript exporter (dynamo=False) at opset 17 (default), with inputs
input_ids and attention_mask ([batch, seq] int64, traced at [1, --seq]; both axes dynamic) and
outputs last_hidden_state and pooler_output.

Needs torch and transformers (and onnx), which are NOT dependencies of the project or its CI:
install them in a separate virtualenv. Write the output outside the repository; it must not be
committed.

  python benchmarks/optimize/export_bert.py --out /some/dir/bert_base_seq128.onnx [--seq 128] [--opset 17]
"""
import argparse
import time
from pathlib import Path

import torch
from transformers import BertConfig, BertModel


class Encoder(torch.nn.Module):
    """BertModel called with keyword arguments, returning a plain tuple.

    The TorchScript tracer calls its module positionally, which transformers' forward
    decorators do not accept for BertModel; this wrapper gives the tracer a two-argument
    forward and names the outputs' order.
    """

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
        return out.last_hidden_state, out.pooler_output


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="output .onnx file")
    ap.add_argument("--seq", type=int, default=128, help="sequence length of the traced inputs")
    ap.add_argument("--opset", type=int, default=17, help="ONNX opset version")
    args = ap.parse_args()

    torch.manual_seed(0)
    bert = BertModel(BertConfig())  # BERT-base defaults, random weights
    model = Encoder(bert).eval()

    # Token ids in the vocabulary, all positions attended to.
    input_ids = torch.randint(0, bert.config.vocab_size, (1, args.seq), dtype=torch.int64)
    attention_mask = torch.ones(1, args.seq, dtype=torch.int64)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with torch.no_grad():
        torch.onnx.export(
            model,
            (input_ids, attention_mask),
            str(args.out),
            dynamo=False,
            opset_version=args.opset,
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state", "pooler_output"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"},
                "last_hidden_state": {0: "batch", 1: "sequence"},
                "pooler_output": {0: "batch"},
            },
        )
    seconds = time.perf_counter() - start
    size_mb = args.out.stat().st_size / 1e6
    print(f"wrote {args.out} ({size_mb:.1f} MB, opset {args.opset}, seq {args.seq}) in {seconds:.1f} s")


if __name__ == "__main__":
    main()
