#!/usr/bin/env python3
"""Latency of a BERT-family export before and after `inferopt optimize -O3`, in one run.

Four contenders on the same input (batch 1, --seq tokens, a padded tail in attention_mask),
alternating rounds so machine noise hits each alike:
  ort/original  onnxruntime (ORT_ENABLE_ALL) on the export as it is;
  ort/ortopt    onnxruntime (ORT_ENABLE_ALL) on onnxruntime's transformer optimizer's output
                (onnxruntime.transformers.optimizer, model type bert, opt_level 0 and 1; the
                faster of the two);
  ort/O3        onnxruntime (ORT_ENABLE_ALL) on our -O3 output (MultiHeadAttention, Gelu, ...);
  inferopt/O3   our executor (`inferopt bench --json`) on our -O3 output.
Prints a Markdown table of P50s and the ratios, per thread count, then the node counts of each
model by op type.

Untrained exports (BertModel(BertConfig())) have all-zero biases, which every optimizer drops;
a trained model has them. Unless --keep-zero-biases, every all-zero float vector initializer is
filled with seeded random values first, and all contenders run that model.

The transformer optimizer's opt_level 1 runs onnxruntime's basic optimizations first through a
function that imports torch only to read torch.version; a stand-in module answers it, so this
script needs no torch. It needs sympy (pip install sympy).

  benchmarks/optimize/transformer_latency.py --cli build/bin/inferopt MODEL.onnx --seq 128 --threads 1 2
"""
import argparse
import collections
import json
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
from check_harness import with_trained_biases  # noqa: E402 - the corpus test's, so both fill biases alike


def feeds_for(sess, seq):
    rng = np.random.default_rng(0)
    feeds = {}
    for inp in sess.get_inputs():
        shape = [1, seq][: len(inp.shape)]
        if "mask" in inp.name:
            mask = np.ones(shape, np.int64)
            mask[..., seq - seq // 8:] = 0  # a padded tail, as batches of real text have
            feeds[inp.name] = mask
        else:
            feeds[inp.name] = rng.integers(0, 1000, shape).astype(np.int64)
    return feeds


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def ort_p50(sess, feeds, iters):
    sess.run(None, feeds)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def inferopt_p50(cli, model, inputs, threads, iters):
    args = [cli, "bench", str(model), "--json", "--warmup", "1", "--iters", str(iters), "--threads", str(threads)]
    for name, path in inputs.items():
        args += ["--input", f"{name}={path}"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["p50_ms"]


def bert_shape(path):
    """(heads, hidden) of a BertModel export, from its first query weight [hidden, hidden]."""
    model = onnx.load(str(path), load_external_data=False)
    hidden = next(int(i.dims[0]) for i in model.graph.initializer if len(i.dims) == 2 and i.dims[0] == i.dims[1])
    return max(1, hidden // 64), hidden


def ort_transformer_optimizer(model, work):
    """onnxruntime's transformer optimizer at opt_level 0 and 1: {level: output path}."""
    if "torch" not in sys.modules:  # optimize_by_onnxruntime reads torch.version.hip only
        torch = types.ModuleType("torch")
        torch.version = types.ModuleType("torch.version")
        torch.version.hip = None
        torch.version.cuda = None
        sys.modules["torch"], sys.modules["torch.version"] = torch, torch.version
    from onnxruntime.transformers import optimizer  # noqa: PLC0415 - needs the stand-in above

    heads, hidden = bert_shape(model)
    out = {}
    for level in (0, 1):
        path = work / f"ortopt{level}.onnx"
        optimizer.optimize_model(str(model), model_type="bert", num_heads=heads, hidden_size=hidden,
                                 opt_level=level).save_model_to_file(str(path))
        out[level] = path
    return out


def op_counts(path):
    return collections.Counter(n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep-zero-biases", action="store_true", help="run the export as it is")
    ap.add_argument("model")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="transformer_latency_"))
    model = Path(args.model)
    if not args.keep_zero_biases:
        model = work / "trained_biases.onnx"
        with_trained_biases(args.model, model)
    fused = work / "O3.onnx"
    subprocess.run([args.cli, "optimize", "-O3", str(model), "-o", str(fused)], check=True, capture_output=True)
    ortopt = ort_transformer_optimizer(model, work)
    print("| threads | ort/original ms | ort/ortopt ms | ort/O3 ms | inferopt/O3 ms | ort/O3 ÷ ort/ortopt | "
          "inferopt/O3 ÷ ort/original |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for threads in args.threads:
        original, optimized = ort_session(model, threads), ort_session(fused, threads)
        feeds = feeds_for(original, args.seq)
        # The faster of the transformer optimizer's two levels, on this thread count.
        ortopt_sessions = {level: ort_session(path, threads) for level, path in ortopt.items()}
        best = min(ortopt_sessions, key=lambda level: ort_p50(ortopt_sessions[level], feeds, 3))
        reference = ortopt_sessions[best]
        inputs = {}
        for name, value in feeds.items():
            inputs[name] = work / f"{name}.pb"
            inputs[name].write_bytes(numpy_helper.from_array(value, name).SerializeToString())
        rows = {"original": [], "ortopt": [], "O3": [], "inferopt": []}
        for _ in range(args.rounds):
            rows["original"].append(ort_p50(original, feeds, args.iters))
            rows["ortopt"].append(ort_p50(reference, feeds, args.iters))
            rows["O3"].append(ort_p50(optimized, feeds, args.iters))
            rows["inferopt"].append(inferopt_p50(args.cli, fused, inputs, threads, args.iters))
        p = {k: statistics.median(v) for k, v in rows.items()}
        print(f"| {threads} | {p['original']:.1f} | {p['ortopt']:.1f} (level {best}) | {p['O3']:.1f} | {p['inferopt']:.1f} | "
              f"{p['O3'] / p['ortopt']:.2f} | {p['inferopt'] / p['original']:.2f} |")
    print()
    for name, path in (("original", model), ("ortopt level 0", ortopt[0]), ("ortopt level 1", ortopt[1]), ("inferopt -O3", fused)):
        counts = op_counts(path)
        print(f"- {name}: {sum(counts.values())} nodes; " + ", ".join(f"{op} {n}" for op, n in counts.most_common(12)))


if __name__ == "__main__":
    main()
