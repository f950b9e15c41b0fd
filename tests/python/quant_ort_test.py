#!/usr/bin/env python3
"""`inferopt quantize` checked through ONNX Runtime on a really trained model.

1. The digits CNN (tests/data/digits: trained on scikit-learn's handwritten digits, 500
   held-out images) is quantized to INT8 QDQ with per-channel weights, calibrated on the
   training-split batches in tests/data/digits/calib, for the entropy and the percentile
   methods, with the fallback off (every quantizable node stays quantized). Each QDQ model
   must pass `onnx.checker.check_model(full_check=True)` and run in onnxruntime with its graph
   optimizations off and at ORT_ENABLE_ALL; on the held-out images its top-1 accuracy must be
   within 1 point of the float model's and its top-1 agreement with float at least 98%.
2. Calibration shards merge exactly: calibrating the 4 batches in one run, or as two runs of
   2 batches whose saved states are merged, gives the same range table, byte for byte.
3. The TensorRT calibration cache has a header line and one `name: 8-hex-digit` line per
   tensor of the range table, each the float32 bits of max(|min|, |max|) / 127.
4. The default model (example 00), when --make-default is given, quantizes with random
   calibration batches and runs in onnxruntime.
5. A model shaped like a TorchScript export (shared_constants_model.py: one bias shared by
   four Convs, three of them through Identity nodes, and a weight shared by two) quantizes
   with random calibration into a model whose node names are all distinct, which passes the
   checker, loads in onnxruntime and stays within 10% of the float logits (max |diff| over
   max |float|) on uniform inputs in [-1, 1), the calibration distribution.
6. The per-tensor SQNR that `quantize --report` gives (the fallback's guide) equals an
   independent computation in onnxruntime, within 0.5 dB, on the digits CNN, the default
   model, the shared-constants model and the corpus's ResNet-18 and MobileNetV3 exports:
   onnxruntime (optimizations off) runs the float model after `optimize -O2` (what quantize
   quantizes) and the INT8 model on the 8 validation batches, every reported tensor made a
   graph output, and 10 log10(sum x^2 / sum (x - y)^2) is taken over all of them.

Exit status: 0 when every check passed (skips allowed), 1 otherwise.
"""

import argparse
import json
import shutil
import struct
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from shared_constants_model import INPUT_SHAPE, assert_distinct_node_names, write_shared_constants_model

MIN_AGREEMENT = 0.98
MAX_ACCURACY_DROP = 0.01


class Skip(Exception):
    """A check that cannot run here (missing input), reported but not failed."""


def run_cli(cli, args):
    proc = subprocess.run([str(cli)] + [str(a) for a in args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"inferopt {' '.join(map(str, args[:2]))} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def session(path, level):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def predictions(path, x, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL):
    s = session(path, level)
    return np.argmax(s.run(None, {s.get_inputs()[0].name: x})[0], axis=1)


def load_tensor(path):
    t = onnx.TensorProto()
    t.ParseFromString(Path(path).read_bytes())
    return numpy_helper.to_array(t)


def digits_accuracy(cli, data, work, method):
    model = data / "digits_cnn.onnx"
    x, labels = load_tensor(data / "x.pb"), load_tensor(data / "labels.pb")
    validation = work / "validation"
    validation.mkdir(exist_ok=True)
    shutil.copyfile(data / "x.pb", validation / "x.pb")
    out = work / f"digits_int8_{method}.onnx"
    run_cli(cli, ["quantize", model, "-o", out, "--calib-dir", data / "calib", "--validation-dir", validation,
                  "--method", method, "--per-channel", "--no-fallback", "--threads", "2"])
    onnx.checker.check_model(str(out), full_check=True)
    ops = {}
    for n in onnx.load(str(out)).graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    assert ops.get("QuantizeLinear", 0) > 0 and ops.get("DequantizeLinear", 0) > 0, f"no QDQ nodes: {ops}"
    float_pred = predictions(model, x)
    int8_pred = predictions(out, x)
    int8_pred_opt = predictions(out, x, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    float_acc = float(np.mean(float_pred == labels))
    int8_acc = float(np.mean(int8_pred == labels))
    agreement = float(np.mean(float_pred == int8_pred))
    agreement_opt = float(np.mean(float_pred == int8_pred_opt))
    assert float_acc - int8_acc <= MAX_ACCURACY_DROP + 1e-9, f"int8 top-1 {int8_acc:.3f} vs float {float_acc:.3f}"
    assert agreement >= MIN_AGREEMENT, f"top-1 agreement {agreement:.3f} < {MIN_AGREEMENT}"
    assert agreement_opt >= MIN_AGREEMENT, f"top-1 agreement at ORT_ENABLE_ALL {agreement_opt:.3f}"
    return (f"float top-1 {100 * float_acc:.1f}%, int8 {100 * int8_acc:.1f}%, agreement {100 * agreement:.1f}% "
            f"(ORT_ENABLE_ALL {100 * agreement_opt:.1f}%), {ops['QuantizeLinear']} Q / {ops['DequantizeLinear']} DQ")


def shards_merge_exactly(cli, data, work):
    model = data / "digits_cnn.onnx"
    calib = sorted((data / "calib").glob("*.pb"))
    shards = [work / "shard_a", work / "shard_b"]
    for k, shard in enumerate(shards):
        shard.mkdir(exist_ok=True)
        for f in calib[2 * k: 2 * k + 2]:
            shutil.copyfile(f, shard / f.name)
    common = ["--method", "entropy", "--no-fallback", "--threads", "1"]
    run_cli(cli, ["quantize", model, "-o", work / "single.onnx", "--calib-dir", data / "calib",
                  "--ranges", work / "single.json"] + common)
    for k, shard in enumerate(shards):
        run_cli(cli, ["quantize", model, "-o", work / f"shard{k}.onnx", "--calib-dir", shard,
                      "--save-state", work / f"shard{k}.state"] + common)
    run_cli(cli, ["quantize", model, "-o", work / "merged.onnx", "--merge-state", work / "shard0.state",
                  "--merge-state", work / "shard1.state", "--ranges", work / "merged.json"] + common)
    single, merged = (work / "single.json").read_bytes(), (work / "merged.json").read_bytes()
    assert single == merged, "merged shards give other ranges than one pass"
    return f"{len(json.loads(single))} tensor ranges identical"


def trt_cache_format(cli, data, work):
    out, cache, ranges = work / "trt.onnx", work / "trt.cache", work / "trt.json"
    run_cli(cli, ["quantize", data / "digits_cnn.onnx", "-o", out, "--calib-dir", data / "calib", "--method",
                  "percentile", "--no-fallback", "--trt-cache", cache, "--ranges", ranges])
    lines = cache.read_text().splitlines()
    table = json.loads(ranges.read_text())
    assert lines[0].startswith("TRT-") and "Calibration" in lines[0], f"header {lines[0]!r}"
    entries = dict(line.rsplit(": ", 1) for line in lines[1:])
    assert set(entries) == set(table), "cache and range table name different tensors"
    for name, hex_bits in entries.items():
        scale = struct.unpack(">f", bytes.fromhex(hex_bits.rjust(8, "0")))[0]
        amax = max(abs(table[name]["min"]), abs(table[name]["max"]))
        assert abs(scale - np.float32(amax / 127)) <= 1e-6 * max(scale, 1e-30), f"{name}: {scale} vs {amax / 127}"
    return f"{lines[0]}, {len(entries)} tensors"


def default_model(cli, make_default, work):
    if not make_default:
        raise Skip("no --make-default given")
    model = work / "default_cnn.onnx"
    subprocess.run([str(make_default), str(model)], check=True, capture_output=True)
    out = work / "default_int8.onnx"
    run_cli(cli, ["quantize", model, "-o", out, "--calib-random", "8", "--method", "percentile"])
    onnx.checker.check_model(str(out), full_check=True)
    s = session(out, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    inp = s.get_inputs()[0]
    x = np.random.default_rng(0).uniform(-1, 1, [d if isinstance(d, int) else 1 for d in inp.shape]).astype(np.float32)
    y = s.run(None, {inp.name: x})[0]
    assert np.all(np.isfinite(y)), "non-finite outputs"
    return f"runs in onnxruntime, output {list(y.shape)}"


def shared_constants(cli, work):
    """The default weight bits (auto: what this CPU's onnxruntime kernels need) and 7 bits (what
    x86 CPUs without VNNI need, checked on every CPU) both keep the logits within 10% through
    onnxruntime's reference kernels (DISABLE_ALL) and its fused int8 ones (ENABLE_ALL). With 8
    bits on a CPU without VNNI the fused kernels saturated: 0.259 off (7 bits: 0.014). valgrind
    shows programs a CPU without AVX-512 or VNNI, so `valgrind --trace-children=yes python
    quant_ort_test.py ...` runs this check as such a machine would."""
    model = work / "shared_constants.onnx"
    write_shared_constants_model(model)
    x = np.random.default_rng(1).uniform(-1, 1, INPUT_SHAPE).astype(np.float32)
    want = session(model, ort.GraphOptimizationLevel.ORT_DISABLE_ALL).run(None, {"x": x})[0]
    results = []
    for bits in ("auto", "7"):
        out, report = work / f"shared_constants_int8_{bits}.onnx", work / f"shared_constants_{bits}.json"
        run_cli(cli, ["quantize", model, "-o", out, "--calib-random", "4", "--method", "minmax", "--no-fallback",
                      "--weight-bits", bits, "--report", report])
        onnx.checker.check_model(str(out), full_check=True)
        assert_distinct_node_names(out)
        used = json.loads(report.read_text())["weight_bits"]
        errors = []
        for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
            got = session(out, level).run(None, {"x": x})[0]
            errors.append(float(np.max(np.abs(got - want)) / np.max(np.abs(want))))
        assert max(errors) <= 0.10, f"--weight-bits {bits} ({used}-bit): logits differ by {max(errors):.3f} of the largest"
        results.append(f"{bits} ({used}-bit) max relative logit error {max(errors):.3f}")
    dq = sum(n.op_type == "DequantizeLinear" for n in onnx.load(str(out)).graph.node)
    return f"{dq} DequantizeLinear, all node names distinct; " + ", ".join(results)


SQNR_TOLERANCE_DB = 0.5
CORPUS = Path(__file__).resolve().parents[1] / "models" / "corpus"


def with_outputs(path, names, out):
    """`path` with every tensor in `names` (that it computes) as a graph output, saved to `out`."""
    model = onnx.load(str(path))
    produced = {o for n in model.graph.node for o in n.output}
    present = {o.name for o in model.graph.output}
    for name in names:
        if name in produced and name not in present:
            model.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    onnx.save(model, str(out))
    return out


def ort_sqnr(float_model, int8_model, names, batches, work):
    """{tensor: SQNR in dB} through onnxruntime over `batches` (lists of {input: array})."""
    f = session(with_outputs(float_model, names, work / "f_outputs.onnx"), ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    q = session(with_outputs(int8_model, names, work / "q_outputs.onnx"), ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    signal, noise = {}, {}
    for feeds in batches:
        fx = dict(zip([o.name for o in f.get_outputs()], f.run(None, feeds)))
        qx = dict(zip([o.name for o in q.get_outputs()], q.run(None, feeds)))
        for name in names:
            if name not in fx or name not in qx or fx[name].shape != qx[name].shape:
                continue
            x, y = fx[name].astype(np.float64), qx[name].astype(np.float64)
            signal[name] = signal.get(name, 0.0) + float(np.sum(x * x))
            noise[name] = noise.get(name, 0.0) + float(np.sum((x - y) ** 2))
    return {n: 10 * np.log10(signal[n] / noise[n]) for n in signal if noise[n] > 0 and signal[n] > 0}


def uniform_batches(model, folder, count=8):
    """`count` batches of uniform [-1, 1) inputs for a one-input float model, written as .pb."""
    inp = session(model, ort.GraphOptimizationLevel.ORT_DISABLE_ALL).get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in inp.shape]
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    batches = []
    for k in range(count):
        x = rng.uniform(-1, 1, shape).astype(np.float32)
        (folder / f"input_{k}.pb").write_bytes(numpy_helper.from_array(x, inp.name).SerializeToString())
        batches.append({inp.name: x})
    return batches


def report_matches_ort(cli, name, model, calib, batches, work):
    """Max |ours - onnxruntime's| SQNR (dB) over the reported tensors of one model."""
    folded, int8, report = work / f"{name}_O2.onnx", work / f"{name}_int8.onnx", work / f"{name}_report.json"
    run_cli(cli, ["optimize", model, "-O2", "-o", folded])
    run_cli(cli, ["quantize", model, "-o", int8, "--calib-dir", calib, "--no-fallback", "--report", report])
    ours = {t["tensor"]: t["sqnr_db"] for t in json.loads(report.read_text())["sqnr"] if t["sqnr_db"] is not None}
    theirs = ort_sqnr(folded, int8, list(ours), batches, work)
    compared = [n for n in ours if n in theirs]
    assert len(compared) >= max(3, len(ours) // 2), f"{name}: only {len(compared)} of {len(ours)} tensors compared"
    worst = max(compared, key=lambda n: abs(ours[n] - theirs[n]))
    gap = abs(ours[worst] - theirs[worst])
    assert gap <= SQNR_TOLERANCE_DB, f"{name}: {worst} reported {ours[worst]:.1f} dB, onnxruntime gives {theirs[worst]:.1f} dB"
    lowest = min(compared, key=lambda n: ours[n])
    return f"{name} {len(compared)} tensors, max gap {gap:.2f} dB, lowest {lowest} {ours[lowest]:.1f} dB"


def sqnr_report(cli, data, make_default, work):
    work = work / "sqnr"
    work.mkdir(exist_ok=True)
    inp = session(data / "digits_cnn.onnx", ort.GraphOptimizationLevel.ORT_DISABLE_ALL).get_inputs()[0].name
    digits_batches = [{inp: load_tensor(p)} for p in sorted((data / "calib").glob("*.pb"))][:8]
    results = [report_matches_ort(cli, "digits", data / "digits_cnn.onnx", data / "calib", digits_batches, work)]
    write_shared_constants_model(work / "shared_constants.onnx")
    models = {"shared_constants": work / "shared_constants.onnx"}
    if make_default:
        subprocess.run([str(make_default), str(work / "default_cnn.onnx")], check=True, capture_output=True)
        models["default"] = work / "default_cnn.onnx"
    for corpus_model in ("resnet_ts", "mobilenet_v3_ts"):
        if (CORPUS / f"{corpus_model}.onnx").exists():
            models[corpus_model] = CORPUS / f"{corpus_model}.onnx"
    for name, model in models.items():
        batches = uniform_batches(model, work / f"{name}_calib")
        results.append(report_matches_ort(cli, name, model, work / f"{name}_calib", batches, work))
    return "; ".join(results)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True, type=Path)
    parser.add_argument("--data", required=True, type=Path, help="tests/data/digits")
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--make-default", type=Path)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    checks = [
        ("digits CNN, entropy", lambda: digits_accuracy(args.cli, args.data, args.work, "entropy")),
        ("digits CNN, percentile", lambda: digits_accuracy(args.cli, args.data, args.work, "percentile")),
        ("calibration shards merge exactly", lambda: shards_merge_exactly(args.cli, args.data, args.work)),
        ("TensorRT calibration cache", lambda: trt_cache_format(args.cli, args.data, args.work)),
        ("default model", lambda: default_model(args.cli, args.make_default, args.work)),
        ("TorchScript-shaped shared constants", lambda: shared_constants(args.cli, args.work)),
        ("SQNR report equals onnxruntime's", lambda: sqnr_report(args.cli, args.data, args.make_default, args.work)),
    ]
    failed = 0
    for name, check in checks:
        try:
            print(f"PASS  {name}: {check()}")
        except Skip as s:
            print(f"SKIP  {name}: {s}")
        except Exception:  # noqa: BLE001 - every failure is reported, then the next check runs
            failed += 1
            print(f"FAIL  {name}:\n{traceback.format_exc()}")
    print(f"{len(checks) - failed} passed or skipped, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
