#!/usr/bin/env python3
"""Trains a small sentence encoder from scratch, so that INT8 is judged on a trained model
(issue 18), and exports it the way users export theirs.

- Text: sentences of the docstrings of Python's standard library (offline, on every machine),
  shuffled with a seed and split three ways: training, calibration (--calib-count, for
  `inferopt quantize --calib-text`) and evaluation (--eval-count); no sentence is in two.
- Tokenizer: a lowercasing BERT WordPiece (`tokenizers`, vocabulary --vocab), saved as
  tokenizer.json: what `--calib-text ... --tokenizer` reads.
- Model: `transformers.BertModel` (MiniLM-L6's shape by default: 6 layers, hidden 384, 12
  heads, FFN 1536) with mean pooling over the attention mask, trained contrastively (SimCSE
  style, InfoNCE with in-batch negatives, temperature 0.05) to map a sentence and a corrupted
  copy of it (words dropped, swapped and masked) to the same embedding.
- Export: TorchScript exporter, opset 17, eval mode; inputs input_ids and attention_mask
  ([batch, sequence], both dynamic), outputs sentence_embedding [batch, hidden] (first, so it
  is what quantize's cosine judges) and last_hidden_state.
- Writes OUT/encoder.onnx (and the trained weights, OUT/encoder.pt), OUT/tokenizer.json, OUT/calib.txt, OUT/eval.txt and
  OUT/eval_paraphrase.txt (a second corruption of each evaluation sentence, unseen in training).

Needs torch, transformers, tokenizers and onnx; not a project or CI dependency. The weights
are real (trained), small, and only as good as a few minutes of CPU make them: the point is a
model whose activations come from training, and a retrieval check that can fail.

  python benchmarks/quant/train_sentence_encoder.py --out DIR [--steps 400] [--layers 6] [--hidden 384]
"""
import argparse
import pkgutil
import random
import re
import time
import warnings
from pathlib import Path


def stdlib_sentences():
    """Distinct sentences of 5-40 words from the standard library's docstrings."""
    import importlib
    import inspect
    seen, out = set(), []
    for info in sorted(pkgutil.iter_modules(), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in {"antigravity", "this", "idlelib", "tkinter", "turtledemo"}:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mod = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - optional modules missing here
            continue
        docs = [inspect.getdoc(mod) or ""]
        for _, obj in inspect.getmembers(mod):
            if inspect.isfunction(obj) or inspect.isclass(obj):
                docs.append(inspect.getdoc(obj) or "")
        for doc in docs:
            for s in re.split(r"(?<=[.!?])\s+", " ".join(doc.split())):
                words = s.split()
                if 5 <= len(words) <= 40 and s not in seen and not any(c in s for c in "{}>|="):
                    seen.add(s)
                    out.append(s)
    return out


def corrupt(sentence, rng):
    """A paraphrase-like corruption: ~15% of words dropped, a neighbour swap, ~10% masked."""
    words = sentence.split()
    kept = [w for w in words if rng.random() > 0.15] or words[:1]
    if len(kept) > 2:
        i = rng.randrange(len(kept) - 1)
        kept[i], kept[i + 1] = kept[i + 1], kept[i]
    return " ".join("[MASK]" if rng.random() < 0.1 else w for w in kept)


def train_tokenizer(lines, vocab, path):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(lines, trainers.WordPieceTrainer(vocab_size=vocab, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    tok.save(str(path))
    return tok


def export_mean_pooled(bert, ids, mask, path):
    """Exports `bert` (a transformers BertModel) with mean pooling over the attention mask:
    TorchScript exporter, opset 17, eval mode, batch and sequence dynamic; outputs
    sentence_embedding (first) and last_hidden_state."""
    import torch

    class Encoder(torch.nn.Module):
        """Mean-pooled BertModel, the module the exporter traces (bert is a submodule, so its
        weights become initializers)."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            h = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            m = attention_mask.unsqueeze(-1).to(h.dtype)
            return (h * m).sum(1) / m.sum(1).clamp(min=1.0), h

    with torch.no_grad():
        torch.onnx.export(Encoder(bert).eval(), (ids, mask), str(path), dynamo=False, opset_version=17,
                          input_names=["input_ids", "attention_mask"], output_names=["sentence_embedding", "last_hidden_state"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                                        "sentence_embedding": {0: "batch"}, "last_hidden_state": {0: "batch", 1: "sequence"}})


def split_sentences(eval_count, calib_count):
    """The seeded split: evaluation, calibration and training sentences, and the generator
    that training goes on drawing from."""
    rng = random.Random(0)
    sentences = stdlib_sentences()
    rng.shuffle(sentences)
    evaluation = sentences[:eval_count]
    calibration = sentences[eval_count:eval_count + calib_count]
    return evaluation, calibration, sentences[eval_count + calib_count:], rng


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--batch", type=int, default=48)
    ap.add_argument("--max-len", type=int, default=48)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--calib-count", type=int, default=32)
    ap.add_argument("--eval-count", type=int, default=500)
    args = ap.parse_args()

    import torch
    from transformers import BertConfig, BertModel

    args.out.mkdir(parents=True, exist_ok=True)
    evaluation, calibration, training, rng = split_sentences(args.eval_count, args.calib_count)
    print(f"{len(evaluation) + len(calibration) + len(training)} sentences: {len(training)} training, "
          f"{len(calibration)} calibration, {len(evaluation)} evaluation")
    (args.out / "calib.txt").write_text("\n".join(calibration) + "\n")
    (args.out / "eval.txt").write_text("\n".join(evaluation) + "\n")
    eval_rng = random.Random(12345)
    (args.out / "eval_paraphrase.txt").write_text("\n".join(corrupt(s, eval_rng) for s in evaluation) + "\n")
    tok = train_tokenizer(training, args.vocab, args.out / "tokenizer.json")
    tok.enable_truncation(args.max_len)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")

    torch.manual_seed(0)
    config = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=args.hidden, num_hidden_layers=args.layers,
                        num_attention_heads=args.heads, intermediate_size=4 * args.hidden, max_position_embeddings=512)
    bert = BertModel(config, add_pooling_layer=False)

    def embed(ids, mask):
        h = bert(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).to(h.dtype)
        return (h * m).sum(1) / m.sum(1).clamp(min=1.0), h

    def batch_of(texts):
        enc = tok.encode_batch(texts)
        return (torch.tensor([e.ids for e in enc]), torch.tensor([e.attention_mask for e in enc]))

    opt = torch.optim.AdamW(bert.parameters(), lr=3e-4, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-4, total_steps=args.steps, pct_start=0.1)
    bert.train()
    start = time.perf_counter()
    for step in range(args.steps):
        texts = rng.sample(training, args.batch)
        a = embed(*batch_of([corrupt(t, rng) for t in texts]))[0]
        b = embed(*batch_of([corrupt(t, rng) for t in texts]))[0]
        logits = torch.nn.functional.normalize(a, dim=-1) @ torch.nn.functional.normalize(b, dim=-1).T / 0.05
        loss = torch.nn.functional.cross_entropy(logits, torch.arange(args.batch))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step}: loss {loss.item():.3f} ({time.perf_counter() - start:.0f} s)", flush=True)

    torch.save(bert.state_dict(), args.out / "encoder.pt")  # what training cost, kept whatever export does

    ids, mask = batch_of(evaluation[:2])
    export_mean_pooled(bert, ids, mask, args.out / "encoder.onnx")
    print(f"wrote {args.out / 'encoder.onnx'}")


if __name__ == "__main__":
    main()
