#!/usr/bin/env python3
"""`inferopt tokenize` (the tokenizer behind `quantize --calib-text`) against Hugging Face's
`tokenizers` package, token for token.

Sentences: 400 seeded ones drawn from words of the fixture's training text, words it never saw
(random letters: unknown words and word pieces), accents in composed and decomposed form,
uppercase (İ, ß, É), CJK, emoji, punctuation of several scripts, tabs, non-breaking and
ideographic spaces, control and zero-width characters, the special tokens [MASK] and [SEP]
inside the text, words over max_input_chars_per_word (100), and lines over the length. Each
is encoded three ways: no truncation or padding, and truncated and padded to 16 and to 64.
Every ids, attention mask and type ids list must be equal.

Skips (exit 0, saying so) when `tokenizers` is not installed.
"""
import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

WORDS = ("the quick brown fox jumps over a lazy dog model runs faster keeps numbers graph tensor quantize "
         "calibration sentence encoder retrieval paraphrase café naïve résumé über straße façade jalapeño "
         "São Paulo Zürich 東京 中文 模型").split()
ODD = ["e\u0301t\u00e9", "\u0130stanbul", "STRASSE", "Stra\u00dfe", "\u00c9COLE", "\U0001F600", "a\u200db", "x\u00a0y",
       "tab\there", "ideo\u3000space", "ctrl\u0007bell", "bom\ufeffmark", "«quote»", "¿qué?", "—dash—", "1,000.50",
       "[MASK]", "a[SEP]b", "x" * 120, "é" * 101, "naïve" * 30, "日本語のテキスト", "ﬁligature", "Ⅻ roman"]


def sentences(count=400, seed=0):
    rng = random.Random(seed)
    out = []
    for i in range(count):
        parts = []
        for _ in range(rng.randint(1, 40 if i % 10 == 0 else 12)):
            r = rng.random()
            if r < 0.6:
                parts.append(rng.choice(WORDS).upper() if rng.random() < 0.1 else rng.choice(WORDS))
            elif r < 0.8:
                parts.append("".join(rng.choice("abcdefghijklmnopqrstuvwxyzäöüéè") for _ in range(rng.randint(1, 12))))
            else:
                parts.append(rng.choice(ODD))
        out.append(rng.choice([" ", "  ", " , ", ". "]).join(parts))
    return out + ODD


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--work", required=True, type=Path)
    args = parser.parse_args()
    try:
        from tokenizers import Tokenizer  # noqa: PLC0415 - optional oracle
    except ImportError:
        print("SKIP: the tokenizers package is not installed")
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    text = sentences()
    path = args.work / "sentences.txt"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    failures = 0
    for length in (0, 16, 64):
        cmd = [args.cli, "tokenize", args.tokenizer, "--text", str(path)] + (["--length", str(length)] if length else [])
        ours = [json.loads(line) for line in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()]
        reference = Tokenizer.from_file(args.tokenizer)
        if length:
            reference.enable_truncation(length)
            reference.enable_padding(length=length)
        theirs = reference.encode_batch(text)
        assert len(ours) == len(theirs), f"{len(ours)} encodings for {len(theirs)} sentences"
        for sentence, a, b in zip(text, ours, theirs):
            if (a["ids"], a["attention_mask"], a["type_ids"]) != (b.ids, b.attention_mask, b.type_ids):
                failures += 1
                if failures <= 5:
                    print(f"FAIL length {length}: {sentence!r}\n  ours   {a['ids']}\n  theirs {b.ids} {b.tokens}")
        print(f"length {length or 'none'}: {len(text)} sentences compared")
    print(f"{failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
