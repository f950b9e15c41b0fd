#!/usr/bin/env python3
"""INT8 transformers through onnxruntime: which kernels it really runs on what `inferopt
quantize` writes, and whether the numbers stay.

For the corpus's BERT, MiniLM and ViT exports (both exporters):

- dynamic: `quantize --mode dynamic`. onnxruntime (ORT_ENABLE_ALL, its optimized graph saved
  with optimized_model_filepath) must fuse every MatMulInteger we wrote into one
  DynamicQuantizeMatMul, leaving no MatMulInteger, DynamicQuantizeLinear or float MatMul on
  weights behind. The first output keeps a mean cosine >= 0.99 with float (onnxruntime, no
  optimizations), and our executor (`inferopt run`) agrees with onnxruntime on the INT8 model.
- static: `quantize` with its defaults (calibrated on sentences through the fixture tokenizer,
  or on random images for ViT). Every int8 weight must end in an integer kernel (QLinearMatMul,
  MatMulIntegerToFloat, QGemm, ...): an int8 weight left as a float product on dequantized
  weights fails. onnxruntime fuses no QDQ product whose activation's QuantizeLinear feeds
  several DequantizeLinear, and merges duplicated QuantizeLinear nodes back into one, so
  attention's Q, K and V projections reading one LayerNorm output pass only because quantize
  packs them into one product first (merge-parallel-matmuls). The same cosine and executor
  checks.
- both: onnxruntime forms no SkipLayerNormalization (its CPU kernel is slower than its Add and
  LayerNormalization, so quantize writes the residual sum a norm reads as Sum) and keeps every
  LayerNormalization written.
"""
import argparse
import collections
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_harness import Skip, cosine, ort_session, read_tensor, run_checks, run_cli, transformer_feed  # noqa: E402

MODELS = ["bert_ts", "bert_dynamo", "minilm_ts", "minilm_dynamo", "vit_ts", "vit_dynamo"]
INTEGER_KERNELS = {"DynamicQuantizeMatMul", "MatMulIntegerToFloat", "QLinearMatMul", "QGemm", "QAttention",
                   "MatMulInteger", "QLinearConv"}
SENTENCES = ["The quick brown fox jumps over the lazy dog.", "A model runs faster and keeps its numbers.",
             "Quantize the graph, then check the tensor on a sentence encoder.", "Café naïve résumé über Zürich.",
             "Retrieval and paraphrase need embeddings that stay close.", "The lazy dog sleeps; the fox runs."]


def optimized_ops(path, work):
    """onnxruntime's op histogram of the optimized graph, and the int8 weights it still runs as
    float products, each as (DequantizeLinear name, whether the product's activation comes from a
    QuantizeLinear that feeds several DequantizeLinear: onnxruntime 1.2x/1.3x fuses none of them)."""
    import onnx
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.optimized_model_filepath = str(work / (path.stem + ".ort.onnx"))
    so.log_severity_level = 3
    ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    graph = onnx.load(so.optimized_model_filepath).graph
    int8_weights = {i.name for i in graph.initializer if i.data_type == onnx.TensorProto.INT8 and len(i.dims) >= 2}
    producer = {o: n for n in graph.node for o in n.output}
    readers = collections.defaultdict(list)
    for n in graph.node:
        for i in n.input:
            readers[i].append(n)

    def shared_quantize(dq):
        for product in readers[dq.output[0]]:
            for i in product.input:
                act = producer.get(i)
                if act is not None and act is not dq and act.op_type == "DequantizeLinear":
                    q = producer.get(act.input[0])
                    return q is not None and q.op_type == "QuantizeLinear" and len(readers[q.output[0]]) > 1
        return False

    weight_dq = [(n.name, shared_quantize(n)) for n in graph.node
                 if n.op_type == "DequantizeLinear" and n.input[0] in int8_weights]
    return collections.Counter(n.op_type for n in graph.node), weight_dq


def feeds(path, seed=0, count=3):
    rng = np.random.default_rng(seed)
    return [transformer_feed(path, rng) for _ in range(count)]


def write_feed(feed, folder):
    from onnx import numpy_helper

    folder.mkdir(parents=True, exist_ok=True)
    for k, (name, value) in enumerate(feed.items()):
        (folder / f"input_{k}.pb").write_bytes(numpy_helper.from_array(value, name).SerializeToString())


def check_numbers(cli, reference, quantized, work):
    """Mean cosine with float in onnxruntime, and the executor against onnxruntime on INT8."""
    inputs = feeds(reference)
    ref, q = ort_session(reference), ort_session(quantized)
    cosines, executor_gap = [], 0.0
    for k, f in enumerate(inputs):
        want = ref.run(None, f)[0]
        got = q.run(None, f)
        cosines.append(cosine(got[0], want))
        folder = work / f"{quantized.stem}_feed{k}"
        write_feed(f, folder)
        run_cli(cli, ["run", quantized, "--input-dir", folder, "--output-dir", folder / "out"])
        name = q.get_outputs()[0].name
        ours = dict(read_tensor(p) for p in (folder / "out").glob("*.pb"))[name]
        executor_gap = max(executor_gap, 1.0 - cosine(ours, got[0]))
    mean = float(np.mean(cosines))
    assert mean >= 0.99, f"mean cosine with float {mean:.4f} < 0.99"
    assert executor_gap < 1e-4, f"executor and onnxruntime differ on the INT8 model: 1 - cosine = {executor_gap:.2e}"
    return mean


def check_norms_kept(written, ops):
    assert not ops["SkipLayerNormalization"], f"onnxruntime formed {ops['SkipLayerNormalization']} SkipLayerNormalization"
    assert ops["LayerNormalization"] == written["LayerNormalization"], (
        f"{written['LayerNormalization']} LayerNormalization written, {ops['LayerNormalization']} run")


def written_ops(path):
    import onnx

    return collections.Counter(n.op_type for n in onnx.load(str(path)).graph.node)


def dynamic_check(cli, model, work):
    def check():
        out = work / f"{model.stem}.dynamic.onnx"
        run_cli(cli, ["quantize", model, "-o", out, "--mode", "dynamic"])
        written = written_ops(out)
        ops, _ = optimized_ops(out, work)
        check_norms_kept(written, ops)
        assert written["MatMulInteger"] > 0, "nothing was quantized"
        # One activation read by one layer: DynamicQuantizeMatMul; read by several (Q, K, V):
        # one shared DynamicQuantizeLinear and a MatMulIntegerToFloat each.
        fused = ops["DynamicQuantizeMatMul"] + ops["MatMulIntegerToFloat"]
        assert fused == written["MatMulInteger"], f"{written['MatMulInteger']} MatMulInteger written, {fused} fused: {dict(ops)}"
        assert not ops["MatMulInteger"], f"unfused: {dict(ops)}"
        mean = check_numbers(cli, model, out, work)
        return (f"{written['MatMulInteger']} layers -> {ops['DynamicQuantizeMatMul']} DynamicQuantizeMatMul + "
                f"{ops['MatMulIntegerToFloat']} MatMulIntegerToFloat, cosine {mean:.4f}")
    return check


def static_check(cli, model, tokenizer, work):
    def check():
        out = work / f"{model.stem}.static.onnx"
        if "vit" in model.stem:
            calibration = ["--calib-random", "8"]
        else:
            text = work / "sentences.txt"
            text.write_text("\n".join(SENTENCES * 2) + "\n")
            calibration = ["--calib-text", text, "--tokenizer", tokenizer, "--seq-len", "12"]
        run_cli(cli, ["quantize", model, "-o", out, *calibration])
        ops, weight_dq = optimized_ops(out, work)
        check_norms_kept(written_ops(out), ops)
        kernels = {k: v for k, v in ops.items() if k in INTEGER_KERNELS}
        assert kernels, f"onnxruntime runs no integer kernel: {dict(ops)}"
        shared = sum(1 for _, behind_shared_q in weight_dq if behind_shared_q)
        assert not weight_dq, (f"{len(weight_dq)} int8 weights run as float products on dequantized weights "
                               f"({shared} behind a QuantizeLinear with several readers): {weight_dq[:3]}")
        mean = check_numbers(cli, model, out, work)
        return f"kernels {kernels}, cosine {mean:.4f}"
    return check


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--corpus", required=True, type=Path)
    ap.add_argument("--tokenizer", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    checks = []
    for name in MODELS:
        model = args.corpus / f"{name}.onnx"
        if not model.exists():
            checks.append((name, lambda: (_ for _ in ()).throw(Skip("not in the corpus"))))
            continue
        checks.append((f"dynamic/{name}", dynamic_check(args.cli, model, args.work)))
        checks.append((f"static/{name}", static_check(args.cli, model, args.tokenizer, args.work)))
    return run_checks(checks)


if __name__ == "__main__":
    sys.exit(main())
