#!/usr/bin/env python3
"""ONNX Runtime as an independent oracle for `inferopt optimize`.

For the default model and each light model of ../shared/models/onnx-light:

1. for each level -O1, -O2, -O3: `inferopt optimize MODEL -o OUT -O<level> --report REPORT`
   succeeds, and the report has one entry per pass of the pipeline it ran, each with
   name/ms/nodes_before/nodes_after/rewrites;
2. OUT passes `onnx.checker.check_model(OUT, full_check=True)` (-O3 emits com.microsoft
   FusedConv/FusedGemm, which the checker accepts as ops of a custom domain);
3. onnxruntime, with its own graph optimizations off (so it runs the graphs as written),
   gives the same outputs for MODEL and OUT (-O1, which only removes nodes: rtol 1e-5,
   atol 1e-6; -O2/-O3, which fold weights: rtol 1e-4, atol 1e-5) on a seeded random input,
   and for light models also on the README's input x = arange(prod(shape)).reshape(shape) /
   prod(shape) (symbolic dims taken as 1);
4. the graph's input and output names are unchanged.

Every weight of a light model is the same constant (0.02), which makes most outputs nearly
uniform and the comparison weak, so each light model is also checked as a variant whose
ConstantOfShape weights are replaced by seeded random Constant nodes (He-scaled Conv/Gemm
weights, BatchNormalization scale and variance in [0.5, 1.5]); models with more than
MAX_RANDOM_WEIGHTS weights skip that variant.

Finally the issue's acceptance command runs verbatim in a scratch folder:
`inferopt optimize light_resnet50.onnx -o out.onnx -O1 --report r.json`.

Exit status: 0 when every check passed (skips allowed), 1 otherwise.
"""

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from check_harness import Skip, run_checks, run_cli

# (rtol, atol) per level: -O1 only removes nodes; -O2/-O3 fold weights in double and round once.
TOLERANCE = {1: (1e-5, 1e-6), 2: (1e-4, 1e-5), 3: (1e-4, 1e-5)}
LEVELS = (1, 2, 3)
# Random weights are materialized as Constant nodes, so VGG-19 (144 M weights), ZFNet-512 and
# AlexNet (about 60 M each) would turn into files of 250 to 600 MB and take most of the run;
# their random-weight variants are skipped and the constant-weight checks still run.
MAX_RANDOM_WEIGHTS = 30_000_000
REPORT_FIELDS = ("name", "ms", "nodes_before", "nodes_after", "rewrites")
LIGHT_MODELS = (
    "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
    "shufflenet", "squeezenet", "vgg19", "zfnet512",
)


# ---- helpers ----------------------------------------------------------------------------------


def pass_names_in(pipeline):
    """Pass names a pipeline text mentions, once per step (the report's rows), in order."""
    text = re.sub(r"\{[^}]*\}", "", pipeline)  # options name no pass
    # fixpoint( and other groups name no pass either
    return [word for word in re.findall(r"[A-Za-z0-9_-]+(?:\()?", text) if not word.endswith("(")]


def check_report(report_path):
    report = json.loads(Path(report_path).read_text())
    expected = pass_names_in(report["pipeline"])
    names = [p["name"] for p in report["passes"]]
    assert names == expected, f"report passes {names}, pipeline {report['pipeline']!r} names {expected}"
    for entry in report["passes"]:
        missing = [f for f in REPORT_FIELDS if f not in entry]
        assert not missing, f"report entry {entry.get('name')} lacks {missing}"
        assert entry["ms"] >= 0 and entry["rewrites"] >= 0, entry
    return report


def session(path):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3  # the light models have unused initializers ORT warns about
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


NUMPY_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16}


def concrete_shape(shape):
    return [d if isinstance(d, int) and d > 0 else 1 for d in shape]


def random_feed(sess, seed):
    rng = np.random.default_rng(seed)
    feed = {}
    for i in sess.get_inputs():
        assert i.type in NUMPY_TYPES, f"input {i.name}: no test data for {i.type}"
        feed[i.name] = rng.standard_normal(concrete_shape(i.shape)).astype(NUMPY_TYPES[i.type])
    return feed


def arange_feed(sess):
    feed = {}
    for i in sess.get_inputs():
        shape = concrete_shape(i.shape)
        n = int(np.prod(shape))
        feed[i.name] = (np.arange(n, dtype=np.float64).reshape(shape) / n).astype(NUMPY_TYPES[i.type])
    return feed


def reference_outputs(original, feeds):
    """The original's outputs per feed, computed once for all levels: [(label, feed, outputs)]."""
    ref = session(original)
    names = [o.name for o in ref.get_outputs()]
    return ref, names, [(label, make(ref), None) for label, make in feeds]


def compare_outputs(reference, optimized, tolerance):
    """Runs `optimized` on the reference feeds; returns the largest absolute difference."""
    ref, names, runs = reference
    opt = session(optimized)
    assert [i.name for i in opt.get_inputs()] == [i.name for i in ref.get_inputs()], \
        "onnxruntime sees different graph inputs"
    assert [o.name for o in opt.get_outputs()] == names, "onnxruntime sees different graph outputs"
    rtol, atol = tolerance
    worst = 0.0
    for k, (label, feed, expected) in enumerate(runs):
        if expected is None:
            expected = ref.run(None, feed)
            runs[k] = (label, feed, expected)
        actual = opt.run(None, feed)
        for name, e, a in zip(names, expected, actual):
            assert e.shape == a.shape, f"{label} input, output {name}: shape {a.shape}, expected {e.shape}"
            np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=f"{label} input, output {name}")
            worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - e))) if e.size else 0.0)
    return worst


def op_counts(model):
    counts = {}
    for n in model.graph.node:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    return counts


def node_count(model):
    return len(model.graph.node)


# ---- randomized light-model weights ---------------------------------------------------------------

def randomize_weights(src, dst, seed):
    """Replaces every ConstantOfShape(shape initializer) by a Constant holding random values."""
    model = onnx.load(str(src))
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    consumers = {}
    for n in g.node:
        for k, name in enumerate(n.input):
            consumers.setdefault(name, []).append((n.op_type, k))
    shapes = {n.output[0]: [int(d) for d in numpy_helper.to_array(inits[n.input[0]]).reshape(-1)]
              for n in g.node if n.op_type == "ConstantOfShape" and n.input[0] in inits}
    total = sum(int(np.prod(s)) for s in shapes.values())
    if total > MAX_RANDOM_WEIGHTS:
        raise Skip(f"{total / 1e6:.0f} M weights; random variants are limited to {MAX_RANDOM_WEIGHTS / 1e6:.0f} M")
    rng = np.random.default_rng(seed)
    replaced = 0
    for idx, n in enumerate(list(g.node)):
        if n.output[0] not in shapes or n.op_type != "ConstantOfShape":
            continue
        shape = shapes[n.output[0]]
        uses = consumers.get(n.output[0], [])
        weight_of = [op for op, k in uses if k == 1 and op in ("Conv", "Gemm", "MatMul")]
        if any(op == "BatchNormalization" and k in (1, 4) for op, k in uses):
            values = rng.uniform(0.5, 1.5, shape)  # scale, variance: positive
        elif weight_of and len(shape) >= 2:
            # He scaling keeps activations O(1) through deep stacks; Gemm may be transposed,
            # so its smaller side stands in for the fan-in.
            fan_in = int(np.prod(shape[1:])) if weight_of[0] == "Conv" else min(shape)
            values = rng.standard_normal(shape) * np.sqrt(2.0 / max(fan_in, 1))
        else:
            values = rng.standard_normal(shape) * 0.1  # biases, means
        const = onnx.helper.make_node(
            "Constant", [], [n.output[0]], name=(n.name or n.output[0]) + "_random",
            value=numpy_helper.from_array(values.astype(np.float32), name=""))
        g.node.remove(n)
        g.node.insert(idx, const)
        replaced += 1
    onnx.save(model, str(dst))
    return replaced


# ---- the checks ---------------------------------------------------------------------------------

def oracle_check(cli, model, work, feeds):
    """Optimizes `model` at each level and compares it with the original; returns a summary line."""
    work.mkdir(parents=True, exist_ok=True)
    before = onnx.load(str(model))
    reference = reference_outputs(model, feeds)
    summary = [f"nodes {node_count(before)}"]
    for level in LEVELS:
        out, report_path = work / f"optimized_O{level}.onnx", work / f"report_O{level}.json"
        run_cli(cli, ["optimize", model, "-o", out, f"-O{level}", "--report", report_path])
        report = check_report(report_path)
        onnx.checker.check_model(str(out), full_check=True)
        after = onnx.load(str(out))
        assert [o.name for o in after.graph.output] == [o.name for o in before.graph.output], \
            f"-O{level}: graph output names changed"
        assert report["before"]["nodes"] == node_count(before) and report["after"]["nodes"] == node_count(after), \
            f"-O{level}: report node counts disagree with the files"
        worst = compare_outputs(reference, out, TOLERANCE[level])
        fused = {op: n for op, n in op_counts(after).items() if op in ("FusedConv", "FusedGemm", "BatchNormalization")}
        summary.append(f"-O{level} {node_count(after)} (max |diff| {worst:.2g}{', ' if fused else ''}"
                       f"{', '.join(f'{op} {n}' for op, n in sorted(fused.items()))})")
    return ", ".join(summary)


def acceptance_resnet50(cli, light_dir, work):
    """The issue's acceptance command, verbatim, in a scratch folder."""
    src = light_dir / "light_resnet50.onnx"
    if not src.exists():
        raise Skip(f"{src} is absent")
    work.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, work / "light_resnet50.onnx")
    run_cli(cli, ["optimize", "light_resnet50.onnx", "-o", "out.onnx", "-O1", "--report", "r.json"], cwd=work)
    report = check_report(work / "r.json")
    onnx.checker.check_model(str(work / "out.onnx"), full_check=True)
    sess = session(work / "out.onnx")
    outputs = sess.run(None, arange_feed(sess))
    assert all(np.all(np.isfinite(o)) for o in outputs), "non-finite outputs"
    out = onnx.load(str(work / "out.onnx"))
    return f"{len(report['passes'])} report entries, out.onnx has {node_count(out)} nodes and runs in onnxruntime"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True, type=Path, help="the inferopt binary")
    parser.add_argument("--make-default", type=Path, help="example_00_default_model, which writes the default model")
    parser.add_argument("--shared", type=Path, required=True, help="the shared folder beside the repository")
    parser.add_argument("--work", type=Path, required=True, help="scratch folder (emptied first)")
    args = parser.parse_args()
    # The acceptance check runs in its own folder; every path given must survive the chdir.
    args.cli, args.shared, args.work = args.cli.resolve(), args.shared.resolve(), args.work.resolve()
    if args.make_default:
        args.make_default = args.make_default.resolve()

    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    light_dir = args.shared / "models" / "onnx-light"

    checks = []  # (name, callable returning a summary line)
    if args.make_default:
        def default_model():
            model = args.work / "default" / "default_cnn.onnx"
            model.parent.mkdir(parents=True)
            subprocess.run([str(args.make_default), str(model)], check=True, capture_output=True)
            return oracle_check(args.cli, model, args.work / "default",
                                [("random", lambda s: random_feed(s, 0)), ("random#2", lambda s: random_feed(s, 1))])
        checks.append(("default model", default_model))
    else:
        def default_model():
            raise Skip("no --make-default given (examples not built)")
        checks.append(("default model", default_model))

    for name in LIGHT_MODELS:
        model = light_dir / f"light_{name}.onnx"

        def light(model=model, name=name):
            if not model.exists():
                raise Skip(f"{model} is absent")
            return oracle_check(args.cli, model, args.work / name,
                                [("random", lambda s: random_feed(s, 0)), ("arange", arange_feed)])

        def light_random(model=model, name=name):
            if not model.exists():
                raise Skip(f"{model} is absent")
            variant = args.work / f"{name}_random_weights" / f"light_{name}_random.onnx"
            variant.parent.mkdir(parents=True)
            randomize_weights(model, variant, seed=len(name))
            return oracle_check(args.cli, variant, variant.parent,
                                [("random", lambda s: random_feed(s, 0)), ("arange", arange_feed)])

        checks.append((f"light_{name}", light))
        checks.append((f"light_{name} (random weights)", light_random))
    checks.append(("acceptance: optimize light_resnet50.onnx -O1", lambda: acceptance_resnet50(
        args.cli, light_dir, args.work / "acceptance")))

    if not light_dir.is_dir():
        print(f"note: {light_dir} is absent; the light-model checks are skipped")

    return run_checks(checks)


if __name__ == "__main__":
    sys.exit(main())
