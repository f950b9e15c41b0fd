#!/usr/bin/env python3
"""Writes wordpiece_tokenizer.json: a small BERT-style WordPiece tokenizer (lowercasing
BertNormalizer, BertPreTokenizer, [CLS] $A [SEP]) trained with the `tokenizers` package on
seeded sentences that mix English, accented Latin, German, a little CJK and punctuation. It is
the fixture of the tokenizer tests (tests/python/tokenizer_test.py, tests/quant/
wordpiece_tokenizer_test.cpp); a real model's tokenizer.json has the same structure.

  python tests/data/tokenizer/make_tokenizer.py   (needs: pip install tokenizers)
"""
import random
from pathlib import Path

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

WORDS = ("the quick brown fox jumps over a lazy dog while the model runs faster and keeps its numbers "
         "graph node value tensor quantize calibration sentence encoder retrieval paraphrase embedding "
         "café naïve résumé über straße façade coöperate jalapeño São Paulo Zürich "
         "東京 北京 中文 模型 ! ? , . ; : ' \" ( ) - 2026 3.14 100%").split()


def main():
    rng = random.Random(0)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14))) for _ in range(5000)]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(lines, trainers.WordPieceTrainer(vocab_size=600, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    out = Path(__file__).resolve().parent / "wordpiece_tokenizer.json"
    tok.save(str(out))
    print(f"wrote {out} ({tok.get_vocab_size()} tokens)")


if __name__ == "__main__":
    main()
