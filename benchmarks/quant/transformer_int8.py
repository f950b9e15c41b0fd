#!/usr/bin/env python3
"""INT8 transformers in onnxruntime, measured in one run on one machine (docs/BENCHMARKS.md):
the float model against `inferopt quantize` (dynamic, and static when calibration text is
given) and against onnxruntime's own quantizer (`quantize_dynamic`, per-channel int8
weights, the strongest baseline for dynamic INT8 on CPU).

For each variant: P50 latency in onnxruntime (ORT_ENABLE_ALL, 1 and 2 threads, alternating
rounds, the float model in every round), its ratio to float, the int8 kernels onnxruntime
actually runs (op histogram of the optimized graph it saves), and the mean cosine of the first
output with float on seeded random token ids (or, with --calib-text, on held-out sentences).

With --eval-text (one sentence per line, none of them in --calib-text) and --eval-paraphrase
(a paraphrase of each, line for line), the cosine is measured on those sentences' first output
(the sentence embedding), and a retrieval check runs: each paraphrase must find its sentence
among all evaluation sentences (top-1 accuracy and mean reciprocal rank, cosine similarity),
for float and every INT8 variant.

  python benchmarks/quant/transformer_int8.py --cli build/bin/inferopt MODEL.onnx [--seq 128]
      [--threads 1 2] [--rounds 4] [--iters 6] [--calib-text FILE --tokenizer T.json | --calib-random N]
      [--eval-text FILE --eval-paraphrase FILE]
"""
import argparse
import collections
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

INT8_KERNELS = ("DynamicQuantizeMatMul", "MatMulIntegerToFloat", "QLinearMatMul", "QGemm", "QAttention",
                "MatMulInteger", "DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear", "MatMul", "Gemm",
                "FusedMatMul", "Attention")


def add_encoder_arguments(ap):
    """The arguments every text-encoder benchmark of a compression command takes."""
    ap.add_argument("--cli", required=True)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--calib-text", required=True)
    ap.add_argument("--eval-text", required=True)


def feeds(model_path, seq, count, seed=0):
    """Seeded token ids (1..vocab/2), masks of ones, type ids of zeros, per graph input."""
    sess = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    m = onnx.load(str(model_path), load_external_data=False)
    vocab = max((i.dims[0] for i in m.graph.initializer if len(i.dims) == 2), default=1000)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        f = {}
        for i in sess.get_inputs():
            shape = [1, seq] if len(i.shape) == 2 else [d if isinstance(d, int) else 1 for d in i.shape]
            if "int" in i.type:
                if "mask" in i.name:
                    f[i.name] = np.ones(shape, np.int64)
                elif "type" in i.name:
                    f[i.name] = np.zeros(shape, np.int64)
                else:
                    f[i.name] = rng.integers(1, max(2, vocab // 2), shape, dtype=np.int64)
            else:
                f[i.name] = rng.standard_normal(shape).astype(np.float32)
        out.append(f)
    return out


def session(path, threads, optimized=None):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if optimized:
        so.optimized_model_filepath = str(optimized)
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def kernels(path, work):
    optimized = Path(work) / (Path(path).stem + ".ort_optimized.onnx")
    session(path, 1, optimized)
    ops = collections.Counter(n.op_type for n in onnx.load(str(optimized), load_external_data=False).graph.node)
    return {k: ops[k] for k in INT8_KERNELS if ops[k]}


def sentence_feeds(model_path, tokenizer, path, batch=16):
    """Batches of `path`'s lines through the tokenizer, padded per batch, for the model's inputs."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(tokenizer))
    tok.enable_truncation(128)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    names = [i.name for i in ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"]).get_inputs()]
    lines = [line for line in Path(path).read_text().splitlines() if line.strip()]
    out = []
    for k in range(0, len(lines), batch):
        enc = tok.encode_batch(lines[k:k + batch])
        f = {"input_ids": np.array([e.ids for e in enc], np.int64), "attention_mask": np.array([e.attention_mask for e in enc], np.int64),
             "token_type_ids": np.array([e.type_ids for e in enc], np.int64)}
        out.append({n: f[n] for n in names})
    return out


def embeddings(path, batches):
    s = session(path, 2)
    return np.concatenate([s.run(None, f)[0] for f in batches]).astype(np.float64)


def retrieval(sentences, paraphrases):
    """Top-1 accuracy and MRR of finding each paraphrase's sentence by cosine similarity."""
    a = sentences / np.linalg.norm(sentences, axis=1, keepdims=True)
    b = paraphrases / np.linalg.norm(paraphrases, axis=1, keepdims=True)
    sim = b @ a.T
    rank = (sim > np.diag(sim)[:, None]).sum(1)
    return float(np.mean(rank == 0)), float(np.mean(1.0 / (rank + 1)))


def embedding_check(reference, path, text, pairs):
    """Mean and min cosine of `path`'s embeddings of `text` with `reference`'s, and the
    retrieval check of its paraphrase embeddings (top-1, MRR)."""
    e = embeddings(path, text)
    cos = np.sum(e * reference, 1) / (np.linalg.norm(e, axis=1) * np.linalg.norm(reference, axis=1))
    top1, mrr = retrieval(e, embeddings(path, pairs))
    return float(np.mean(cos)), float(np.min(cos)), top1, mrr


def mean_cosine(reference, candidate, inputs):
    a, b = session(reference, 2), session(candidate, 2)
    cos = []
    for f in inputs:
        x = a.run(None, f)[0].astype(np.float64).reshape(-1)
        y = b.run(None, f)[0].astype(np.float64).reshape(-1)
        cos.append(float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y))))
    return statistics.mean(cos)


def latency(paths, inputs, threads, rounds, iters):
    """P50 milliseconds per variant, rounds alternating the variants (rotating the order)."""
    sessions = {k: session(p, threads) for k, p in paths.items()}
    samples = {k: [] for k in paths}
    names = list(paths)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            s = sessions[k]
            s.run(None, inputs[0])
            for it in range(iters):
                start = time.perf_counter()
                s.run(None, inputs[it % len(inputs)])
                samples[k].append((time.perf_counter() - start) * 1e3)
    return {k: statistics.median(v) for k, v in samples.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("model", type=Path)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--calib-text")
    ap.add_argument("--calib-random", type=int, help="static INT8 calibrated on N random inputs (images)")
    ap.add_argument("--tokenizer")
    ap.add_argument("--eval-text")
    ap.add_argument("--eval-paraphrase")
    ap.add_argument("--work", type=Path)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="int8_"))
    work.mkdir(parents=True, exist_ok=True)

    paths = {"float": args.model}
    t0 = time.perf_counter()
    paths["inferopt dynamic"] = work / "inferopt_dynamic.onnx"
    subprocess.run([args.cli, "quantize", args.model, "-o", paths["inferopt dynamic"], "--mode", "dynamic"],
                   check=True, stdout=subprocess.DEVNULL)
    print(f"inferopt dynamic: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    if args.calib_text or args.calib_random:
        t0 = time.perf_counter()
        paths["inferopt static"] = work / "inferopt_static.onnx"
        calibration = (["--calib-text", args.calib_text, "--tokenizer", args.tokenizer]
                       if args.calib_text else ["--calib-random", str(args.calib_random)])
        subprocess.run([args.cli, "quantize", args.model, "-o", paths["inferopt static"], *calibration], check=True,
                       stdout=subprocess.DEVNULL)
        print(f"inferopt static: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    from onnxruntime.quantization import QuantType, quantize_dynamic
    t0 = time.perf_counter()
    paths["ort quantize_dynamic"] = work / "ort_dynamic.onnx"
    quantize_dynamic(str(args.model), str(paths["ort quantize_dynamic"]), per_channel=True, weight_type=QuantType.QInt8)
    print(f"ort quantize_dynamic: {time.perf_counter() - t0:.1f} s", file=sys.stderr)

    inputs = feeds(args.model, args.seq, 4)
    print(f"model {args.model.name}, seq {args.seq}, onnxruntime {ort.__version__}")
    if args.eval_text:
        text = sentence_feeds(args.model, args.tokenizer, args.eval_text)
        pairs = sentence_feeds(args.model, args.tokenizer, args.eval_paraphrase)
        reference = embeddings(args.model, text)
        print(f"\n{len(reference)} evaluation sentences: variant | mean cosine with float | retrieval top-1 | MRR")
        for k, p in paths.items():
            cos, low, top1, mrr = embedding_check(reference, p, text, pairs)
            print(f"  {k} | {cos:.4f} (min {low:.4f}) | {100 * top1:.1f}% | {mrr:.4f}")
    info = {k: (mean_cosine(args.model, p, inputs) if k != "float" else 1.0, kernels(p, work)) for k, p in paths.items()}
    for threads in args.threads:
        p50 = latency(paths, inputs, threads, args.rounds, args.iters)
        print(f"\n{threads} thread(s): variant | P50 ms | speedup vs float | cosine | ORT kernels")
        for k in paths:
            print(f"  {k} | {p50[k]:.1f} | {p50['float'] / p50[k]:.2f}x | {info[k][0]:.4f} | {info[k][1]}")


if __name__ == "__main__":
    main()
