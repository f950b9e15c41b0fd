#!/usr/bin/env python3
"""Writes --count calibration sentences for pruning the encoder that
benchmarks/quant/train_sentence_encoder.py trained: its calibration sentences, then its
training sentences, from the same seeded split (run it in the same Python environment), so
that no evaluation sentence is among them. A least-squares refit of a layer with K inputs
wants well over K calibration rows (tokens); 32 sentences are about 600.

  python benchmarks/prune/calibration_sentences.py --count 512 --out DIR/calib_prune.txt
      [--eval-count 500 --calib-count 32]   (the values the encoder was trained with)
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "quant"))
from train_sentence_encoder import split_sentences  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=512)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--eval-count", type=int, default=500)
    ap.add_argument("--calib-count", type=int, default=32)
    args = ap.parse_args()
    evaluation, calibration, training, _ = split_sentences(args.eval_count, args.calib_count)
    chosen = (calibration + training)[:args.count]
    assert not set(chosen) & set(evaluation)
    args.out.write_text("\n".join(chosen) + "\n")
    print(f"wrote {len(chosen)} sentences to {args.out}")


if __name__ == "__main__":
    main()
