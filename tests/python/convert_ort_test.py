#!/usr/bin/env python3
"""`inferopt convert` checked through ONNX Runtime and onnx.checker.

For each light model of ../shared/models/onnx-light (opset 9; skipped when absent), with its
ConstantOfShape weights replaced by seeded random ones where the model is small enough (as
the ORT oracle does, since the constant weights make most outputs uniform):

1. `inferopt convert MODEL -o OUT --opset T --report R` for T = 17 and 21 succeeds, R names
   the opsets, and OUT imports opset T and passes `onnx.checker.check_model(full_check=True)`;
2. onnxruntime (graph optimizations off, CPU) gives OUT the original's outputs on a seeded
   random input and on the README's arange input, within rtol 1e-5, atol 1e-6: conversion
   moves operands and attributes but computes the same thing, and what is left is the
   rounding of onnxruntime's own kernels for the newer opset (AveragePool-19, for example);
3. OUT converted back down to opset 9 passes the checker and matches the original the same
   way.

Then `inferopt quantize` on the opset-9 light SqueezeNet, with no other step: it says it
converted the opset, and the QDQ model passes the checker and runs in onnxruntime with finite
outputs of the float model's shape.

Exit status: 0 when every check passed (skips allowed), 1 otherwise.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx

from check_harness import Skip, run_checks, run_cli
from ort_oracle_test import LIGHT_MODELS, arange_feed, random_feed, randomize_weights, session

TARGETS = (17, 21)
RTOL, ATOL = 1e-5, 1e-6


def converted(cli, src, out, opset):
    report = out.with_suffix(".json")
    run_cli(cli, ["convert", src, "-o", out, "--opset", opset, "--report", report])
    r = json.loads(report.read_text())
    assert r["to_opset"] == opset, f"report names opset {r['to_opset']}"
    onnx.checker.check_model(str(out), full_check=True)
    imported = {o.domain: o.version for o in onnx.load(str(out), load_external_data=False).opset_import}
    assert imported.get("", imported.get("ai.onnx")) == opset, f"{out.name} imports {imported}"
    return r


def differences(reference, feeds, path):
    """Runs `path` on the feeds; checks its outputs against the reference's and returns the
    largest absolute and relative differences."""
    sess = session(path)
    worst_abs = worst_rel = 0.0
    for feed, expected in zip(feeds, reference):
        actual = sess.run(None, feed)
        for e, a in zip(expected, actual):
            assert e.shape == a.shape, f"{path.name}: shape {a.shape}, expected {e.shape}"
            np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL, err_msg=path.name)
            d = np.abs(a.astype(np.float64) - e)
            worst_abs = max(worst_abs, float(d.max()))
            worst_rel = max(worst_rel, float((d / np.maximum(np.abs(e), 1e-12)).max()))
    return worst_abs, worst_rel


def check_light(cli, model, work, name):
    if not model.exists():
        raise Skip(f"{model} not found")
    work.mkdir(parents=True, exist_ok=True)
    source, weights = model, "constant weights"
    try:
        source = work / f"light_{name}_random.onnx"
        randomize_weights(model, source, seed=len(name))
        weights = "random weights"
    except Skip:
        source = model
    ref = session(source)
    feeds = [random_feed(ref, 0), arange_feed(ref)]
    reference = [ref.run(None, f) for f in feeds]
    parts = []
    for opset in TARGETS:
        up = work / f"{name}_opset{opset}.onnx"
        r = converted(cli, source, up, opset)
        up_abs, up_rel = differences(reference, feeds, up)
        down = work / f"{name}_opset{opset}_back9.onnx"
        converted(cli, up, down, 9)
        down_abs, down_rel = differences(reference, feeds, down)
        changed = r["nodes_changed"]
        parts.append(f"{opset}: {changed} nodes changed, max |diff| {up_abs:.2e} (rel {up_rel:.2e}), "
                     f"back to 9 max |diff| {down_abs:.2e}")
    return f"{weights}; " + "; ".join(parts)


def check_quantize_opset9(cli, light, work):
    model = light / "light_squeezenet.onnx"
    if not model.exists():
        raise Skip(f"{model} not found")
    work.mkdir(parents=True, exist_ok=True)
    out = work / "squeezenet_qdq.onnx"
    proc = run_cli(cli, ["quantize", model, "-o", out, "--calib-random", 2])
    line = next((l for l in proc.stdout.splitlines() if l.startswith("converted opset")), None)
    assert line == "converted opset 9 -> 13 for QuantizeLinear", f"no conversion line in:\n{proc.stdout}"
    onnx.checker.check_model(str(out), full_check=True)
    q = onnx.load(str(out))
    assert any(n.op_type == "QuantizeLinear" for n in q.graph.node), "no QuantizeLinear in the output"
    ref = session(model)
    feed = random_feed(ref, 0)
    expected = ref.run(None, feed)
    actual = session(out).run(None, feed)
    for e, a in zip(expected, actual):
        assert a.shape == e.shape and np.all(np.isfinite(a)), "the QDQ model's output is off"
    return f"'{line}', {sum(n.op_type == 'QuantizeLinear' for n in q.graph.node)} QuantizeLinear, runs in onnxruntime"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True, type=Path)
    ap.add_argument("--shared", required=True, type=Path, help="the shared folder holding models/onnx-light")
    ap.add_argument("--work", required=True, type=Path)
    args = ap.parse_args()
    light = args.shared / "models" / "onnx-light"
    checks = []
    for name in LIGHT_MODELS:
        checks.append((f"light_{name} -> {'/'.join(map(str, TARGETS))} -> 9",
                       lambda name=name: check_light(args.cli, light / f"light_{name}.onnx", args.work / name, name)))
    checks.append(("quantize light_squeezenet at opset 9", lambda: check_quantize_opset9(args.cli, light, args.work)))
    return run_checks(checks)


if __name__ == "__main__":
    sys.exit(main())
