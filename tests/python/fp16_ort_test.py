#!/usr/bin/env python3
"""`inferopt optimize --passes to-fp16` checked through ONNX Runtime.

Our executor has no float16 Conv/Gemm/BatchNormalization kernels, so onnxruntime is the
numeric oracle for converted convolutional models. For each model below, the CLI writes the
float16 model; it must pass `onnx.checker.check_model(full_check=True)`, keep its graph input
and output names and float32 types (keep-io-types is the default), hold float16 Conv weights,
and run in onnxruntime (CPU; graph optimizations off so the graph runs as written) with
outputs close to the float model's:

1. the trained digits CNN (tests/data/digits, see its README): top-1 accuracy of the float
   and float16 models on the 500 held-out images, and their top-1 agreement, which must be
   at least 99.9%;
2. the default model (example 00 writes it), when --make-default is given: top-1 agreement
   over 64 seeded random inputs, at least 99.9%, and max |diff| of the outputs within 2% of
   the largest output magnitude;
3. light_squeezenet from ../shared/models/onnx-light, when present, with seeded random
   weights held in Constant nodes (whose `value` attributes the pass converts): outputs
   finite and within 2% of the largest output magnitude on a seeded random input.

4. the corpus's transformer exports (BERT, MiniLM, ViT, both exporters), as exported and with
   their word embeddings (or ViT's patch projection) scaled so that the residual stream holds
   values of about 10^3, as trained transformers' outlier dimensions do: outputs finite,
   within 2% of the largest output magnitude, cosine >= 0.999;
5. a LayerNorm written out as ops (what exporters write below opset 17) over values of a few
   hundred: converted with the default keep-norm-statistics, its squares stay float32 and
   the output matches float. (onnxruntime's CPU provider runs float16 ReduceMean in float32
   through inserted Casts, so here the all-float16 form does not overflow; in our executor
   it does, which tests/quant/to_fp16_test.cpp checks.)

Exit status: 0 when every check passed (skips allowed), 1 otherwise.
"""

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from check_harness import Skip, run_checks, transformer_feed

MIN_AGREEMENT = 0.999
MAX_RELATIVE_DIFF = 0.02  # float16 keeps 11 bits; a dozen layers stay well inside 2%


def to_fp16(cli, model, out):
    proc = subprocess.run([str(cli), "optimize", str(model), "-o", str(out), "--passes", "to-fp16"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"inferopt optimize {model} exited {proc.returncode}: {proc.stderr.strip()}")
    onnx.checker.check_model(str(out), full_check=True)
    before, after = onnx.load(str(model)), onnx.load(str(out))
    def feeds(m):  # IR < 4 lists every initializer as an input too; those are not feeds
        inits = {t.name for t in m.graph.initializer}
        return [v for v in m.graph.input if v.name not in inits]

    for kind, old, new in (("input", feeds(before), feeds(after)),
                           ("output", before.graph.output, after.graph.output)):
        assert [v.name for v in old] == [v.name for v in new], f"graph {kind} names changed"
        assert [v.type.tensor_type.elem_type for v in old] == [v.type.tensor_type.elem_type for v in new], \
            f"graph {kind} types changed"
    inits = {t.name: t for t in after.graph.initializer}
    weights = [inits[n.input[1]].data_type for n in after.graph.node if n.op_type == "Conv" and n.input[1] in inits]
    assert all(t == onnx.TensorProto.FLOAT16 for t in weights), "a Conv weight is not float16"
    return after


def session(path):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def read_tensor(path):
    t = onnx.TensorProto()
    t.ParseFromString(Path(path).read_bytes())
    return numpy_helper.to_array(t)


def relative_diff(a, b):
    return float(np.max(np.abs(a.astype(np.float64) - b)) / max(float(np.max(np.abs(b))), 1e-12))


def check_digits(cli, data, work):
    model = data / "digits_cnn.onnx"
    if not model.exists():
        raise Skip(f"{model} is absent")
    out = work / "digits_cnn_fp16.onnx"
    to_fp16(cli, model, out)
    x, labels = read_tensor(data / "x.pb"), read_tensor(data / "labels.pb")
    ref = session(model).run(None, {"x": x})[0]
    half = session(out).run(None, {"x": x})[0]
    assert half.dtype == np.float32 and np.all(np.isfinite(half)), "float16 logits are not finite float32"
    float_acc = float(np.mean(ref.argmax(1) == labels))
    half_acc = float(np.mean(half.argmax(1) == labels))
    agreement = float(np.mean(ref.argmax(1) == half.argmax(1)))
    assert agreement >= MIN_AGREEMENT, f"top-1 agreement {agreement:.4f} < {MIN_AGREEMENT}"
    return (f"top-1 accuracy float {float_acc:.4f}, float16 {half_acc:.4f}, agreement {agreement:.4f} "
            f"on {len(labels)} images, max |diff| {relative_diff(half, ref):.2g} of max |logit|, "
            f"{model.stat().st_size / 1024:.0f} KB -> {out.stat().st_size / 1024:.0f} KB")


def check_default(cli, make_default, work):
    if make_default is None:
        raise Skip("no --make-default given (examples not built)")
    model, out = work / "default_cnn.onnx", work / "default_cnn_fp16.onnx"
    subprocess.run([str(make_default), str(model)], check=True, capture_output=True)
    to_fp16(cli, model, out)
    ref, half = session(model), session(out)
    inp = ref.get_inputs()[0]
    shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
    rng = np.random.default_rng(0)
    agree, worst = 0, 0.0
    runs = 64
    for _ in range(runs):
        x = rng.standard_normal(shape).astype(np.float32)
        a, b = ref.run(None, {inp.name: x})[0], half.run(None, {inp.name: x})[0]
        agree += int(np.array_equal(a.reshape(len(a), -1).argmax(1), b.reshape(len(b), -1).argmax(1)))
        worst = max(worst, relative_diff(b, a))
    assert agree / runs >= MIN_AGREEMENT, f"top-1 agreement {agree}/{runs}"
    assert worst <= MAX_RELATIVE_DIFF, f"max |diff| {worst:.3g} of max |output|"
    return f"top-1 agreement {agree}/{runs} random inputs, max |diff| {worst:.2g} of max |output|"


def check_light(cli, shared, work):
    model = shared / "models" / "onnx-light" / "light_squeezenet.onnx"
    if not model.exists():
        raise Skip(f"{model} is absent")
    # Every weight of a light model is 0.02, which drives squeezenet's activations to about
    # 1e10, far past float16's 65504 (in float32 already): the seeded He-scaled variant of the
    # ONNX Runtime oracle test keeps them O(1). Its weights are Constant nodes, so this also
    # checks the conversion of Constant `value` attributes.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ort_oracle_test import randomize_weights  # noqa: E402 - a sibling test's helper

    variant, out = work / "light_squeezenet_random.onnx", work / "light_squeezenet_random_fp16.onnx"
    randomize_weights(model, variant, seed=len("squeezenet"))
    after = to_fp16(cli, variant, out)
    assert not any(n.op_type == "Constant" and n.attribute[0].t.data_type == onnx.TensorProto.FLOAT
                   for n in after.graph.node), "a float32 Constant is left"
    ref, half = session(variant), session(out)
    feed = {}
    rng = np.random.default_rng(1)
    for i in ref.get_inputs():
        feed[i.name] = rng.standard_normal([d if isinstance(d, int) and d > 0 else 1 for d in i.shape]).astype(np.float32)
    worst = 0.0
    for a, b in zip(ref.run(None, feed), half.run(None, feed)):
        assert np.all(np.isfinite(b)), "non-finite float16 outputs"
        worst = max(worst, relative_diff(b, a))
    assert worst <= MAX_RELATIVE_DIFF, f"max |diff| {worst:.3g} of max |output|"
    return f"max |diff| {worst:.2g} of max |output|"


CORPUS = Path(__file__).resolve().parents[1] / "models" / "corpus"
TRANSFORMERS = ["bert_ts", "bert_dynamo", "minilm_ts", "minilm_dynamo", "vit_ts", "vit_dynamo"]


def with_outliers(src, dst, target_std=300.0):
    """`src` with its token embedding table (or ViT's patch Conv) rescaled to std `target_std`."""
    m = onnx.load(str(src))
    inits = {i.name: i for i in m.graph.initializer}
    first = next((n for n in m.graph.node if n.op_type in ("Gather", "Conv") and len(n.input) > 1 and
                  (n.input[0] if n.op_type == "Gather" else n.input[1]) in inits), None)
    assert first is not None, "no embedding table or patch projection"
    table = inits[first.input[0] if first.op_type == "Gather" else first.input[1]]
    values = numpy_helper.to_array(table)
    table.CopyFrom(numpy_helper.from_array((values / values.std() * target_std).astype(np.float32), table.name))
    onnx.save(m, str(dst))


def check_transformers(cli, work):
    results = []
    for name in TRANSFORMERS:
        model = CORPUS / f"{name}.onnx"
        if not model.exists():
            raise Skip(f"{model} is absent")
        for variant, path in (("as exported", model), ("residual ~1e3", work / f"{name}_outliers.onnx")):
            if path != model:
                with_outliers(model, path)
            out = work / f"{path.stem}_fp16.onnx"
            to_fp16(cli, path, out)
            feed = transformer_feed(path, np.random.default_rng(3))
            a, b = session(path).run(None, feed)[0], session(out).run(None, feed)[0]
            assert np.all(np.isfinite(b)), f"{name} ({variant}): non-finite float16 outputs"
            rel = relative_diff(b, a)
            cos = float(a.ravel().astype(np.float64) @ b.ravel() / (np.linalg.norm(a) * np.linalg.norm(b)))
            assert rel <= MAX_RELATIVE_DIFF and cos >= 0.999, f"{name} ({variant}): max |diff| {rel:.3g}, cosine {cos:.5f}"
            results.append(rel)
    return f"{len(results)} models, worst max |diff| {max(results):.2g} of max |output|"


def check_written_out_norm(cli, work):
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Mul", ["x", "gain"], ["h"]),
             helper.make_node("ReduceMean", ["h"], ["mean"], axes=[-1]),
             helper.make_node("Sub", ["h", "mean"], ["centered"]),
             helper.make_node("Pow", ["centered", "two"], ["square"]),
             helper.make_node("ReduceMean", ["square"], ["variance"], axes=[-1]),
             helper.make_node("Add", ["variance", "eps"], ["shifted"]),
             helper.make_node("Sqrt", ["shifted"], ["deviation"]),
             helper.make_node("Div", ["centered", "deviation"], ["y"])]
    inits = [numpy_helper.from_array(np.array(400.0, np.float32), "gain"), numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(1e-5, np.float32), "eps")]
    graph = helper.make_graph(nodes, "norm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])], inits)
    model = work / "written_out_norm.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(model))
    feed = {"x": np.random.default_rng(2).standard_normal((4, 64)).astype(np.float32)}
    want = session(model).run(None, feed)[0]
    out = work / "written_out_norm_fp16.onnx"
    to_fp16(cli, model, out)
    got = session(out).run(None, feed)[0]
    rel = relative_diff(got, want)
    assert np.all(np.isfinite(got)) and rel <= MAX_RELATIVE_DIFF, f"kept statistics: max |diff| {rel:.3g}"
    kept = sum(1 for n in onnx.load(str(out)).graph.node if n.op_type == "Cast")
    assert kept >= 3, f"expected Casts around the float32 statistics, found {kept} Casts"
    return f"max |diff| {rel:.2g} of max |output|, {kept} Casts"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True, type=Path, help="the inferopt binary")
    parser.add_argument("--data", required=True, type=Path, help="tests/data/digits")
    parser.add_argument("--make-default", type=Path, help="example_00_default_model, which writes the default model")
    parser.add_argument("--shared", type=Path, help="the shared folder beside the repository (light models)")
    parser.add_argument("--work", required=True, type=Path, help="scratch folder (emptied first)")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)

    checks = [
        ("digits CNN", lambda: check_digits(args.cli, args.data, args.work)),
        ("default model", lambda: check_default(args.cli, args.make_default, args.work)),
        ("light_squeezenet (random weights)", lambda: check_light(args.cli, args.shared or Path("/nonexistent"), args.work)),
        ("transformers (corpus)", lambda: check_transformers(args.cli, args.work)),
        ("LayerNorm written out as ops", lambda: check_written_out_norm(args.cli, args.work)),
    ]
    return run_checks(checks)


if __name__ == "__main__":
    sys.exit(main())
