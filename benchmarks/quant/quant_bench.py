#!/usr/bin/env python3
"""Quantization benchmarks, measured in one run on the same machine (docs/BENCHMARKS.md):

(a) calibration + QDQ wall time and peak RSS: `inferopt quantize` against onnxruntime's
    `quantize_static` (QDQ, per-channel int8 weights, int8 activations), same calibration
    data, same method (entropy, percentile), each in its own process (peak RSS from wait4);
    on the trained digits CNN with its calibration batches, and on light ResNet-50's topology
    with real-sized random weights and N random calibration inputs (default 256);
(b) onnxruntime CPU latency (ORT_ENABLE_ALL, same thread count) of our INT8 QDQ ResNet-50
    against its float model, and which QDQ groups ORT fused (op histogram of ORT's optimized
    graph). `--latency-only` runs (b) alone.
"""

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnx.version_converter
import onnxruntime as ort
from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fusion"))
from fusion_bench import real_sized_resnet50  # noqa: E402  (the same 102 MB model)


def resnet50_opset13(light, dst):
    """The real-sized ResNet-50 as an IR 8 / opset 13 model: light ResNet-50 is IR 3 / opset 9,
    which neither tool quantizes (QuantizeLinear needs opset 10, per-axis scales 13)."""
    real_sized_resnet50(light, dst)
    m = onnx.load(str(dst))
    inits = {t.name for t in m.graph.initializer}
    keep = [i for i in m.graph.input if i.name not in inits]
    del m.graph.input[:]
    m.graph.input.extend(keep)
    m.ir_version = 8
    m = onnx.version_converter.convert_version(m, 13)
    onnx.save(m, str(dst))

ORT_QUANTIZE = r"""
import sys, numpy as np, onnx
from onnx import numpy_helper
from onnxruntime.quantization import (quantize_static, CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType)
model, out, method, chunk, calib = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
class Reader(CalibrationDataReader):
    def __init__(self):
        name = onnx.load(model, load_external_data=False).graph.input[0].name
        def batches():
            for f in calib:
                t = onnx.TensorProto(); t.ParseFromString(open(f, "rb").read())
                yield {name: numpy_helper.to_array(t)}
        self.it = batches()
    def get_next(self):
        return next(self.it, None)
quantize_static(model, out, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                calibrate_method={"entropy": CalibrationMethod.Entropy, "percentile": CalibrationMethod.Percentile}[method],
                extra_options=dict({"ActivationSymmetric": True, "WeightSymmetric": True},
                                   **({"CalibMaxIntermediateOutputs": chunk} if chunk else {})))
"""


def measured(cmd, memory_cap_gb=None):
    """Wall seconds and peak RSS (MB) of one child process; an address-space cap turns a run
    that would exhaust the machine into a clean failure."""
    def cap():
        if memory_cap_gb:
            limit = int(memory_cap_gb * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    start = time.perf_counter()
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=cap)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        return {"error": err.strip().splitlines()[-1:] if err.strip() else f"exit status {status}", "s": wall}
    return {"s": wall, "peak_rss_mb": usage.ru_maxrss / 1024.0}


def write_batches(folder, shape, count, seed):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for k in range(count):
        t = numpy_helper.from_array(rng.uniform(0, 1, shape).astype(np.float32))
        (folder / f"input_{k:04d}.pb").write_bytes(t.SerializeToString())
    return sorted(folder.glob("*.pb"))


def calibration_times(cli, model, calib_dir, work, threads):
    files = sorted(Path(calib_dir).glob("*.pb"))
    result = {}
    for method in ("entropy", "percentile"):
        ours = measured([cli, "quantize", model, "-o", work / f"ours_{method}.onnx", "--calib-dir", calib_dir,
                         "--method", method, "--per-channel", "--no-fallback", "--threads", threads])
        theirs = measured([sys.executable, "-c", ORT_QUANTIZE, model, work / f"ort_{method}.onnx", method, "0"] + files,
                          memory_cap_gb=12)
        result[method] = {"inferopt": ours, "onnxruntime": theirs}
        if "error" in theirs:  # ORT keeps every activation; its documented remedy bounds that
            # The cap bounds address space, and ORT's arena reserves far more of it than it
            # touches, so the chunked run gets a looser cap (its RSS stays near 3 GB).
            result[method]["onnxruntime_chunked"] = measured(
                [sys.executable, "-c", ORT_QUANTIZE, model, work / f"ort_{method}.onnx", method, "16"] + files,
                memory_cap_gb=40)
    return result


def ort_latency(float_model, int8_model, threads, iters):
    def make(path, dump=None):
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = threads
        so.log_severity_level = 3
        if dump:
            so.optimized_model_filepath = str(dump)
        return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    dump = Path(int8_model).with_suffix(".ort_optimized.onnx")
    a, b = make(float_model), make(int8_model, dump)
    inp = a.get_inputs()[0]
    x = np.random.default_rng(1).uniform(0, 1, [d if isinstance(d, int) else 1 for d in inp.shape]).astype(np.float32)
    for _ in range(3):
        a.run(None, {inp.name: x})
        b.run(None, {inp.name: x})
    ta, tb = [], []
    for _ in range(iters):
        s = time.perf_counter(); a.run(None, {inp.name: x}); ta.append((time.perf_counter() - s) * 1e3)
        s = time.perf_counter(); b.run(None, {inp.name: x}); tb.append((time.perf_counter() - s) * 1e3)
    fused = {}
    for n in onnx.load(str(dump), load_external_data=False).graph.node:
        key = f"{n.domain + '.' if n.domain else ''}{n.op_type}"
        fused[key] = fused.get(key, 0) + 1
    return {"float_ms": ta, "int8_ms": tb, "ort_optimized_int8_ops": fused}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", type=Path, required=True)
    ap.add_argument("--shared", type=Path, required=True)
    ap.add_argument("--digits", type=Path, required=True, help="tests/data/digits")
    ap.add_argument("--calib-inputs", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json", type=Path, default=Path("quant_bench.json"))
    ap.add_argument("--latency-only", action="store_true",
                    help="only (b): skip the calibration comparison (onnxruntime's takes over 20 GB on ResNet-50)")
    args = ap.parse_args()
    results = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "onnxruntime": ort.__version__,
               "threads": args.threads, "calib_inputs": args.calib_inputs}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        big = work / "resnet50.onnx"
        resnet50_opset13(args.shared / "models" / "onnx-light" / "light_resnet50.onnx", big)
        write_batches(work / "calib_resnet", [1, 3, 224, 224], args.calib_inputs, 0)
        (work / "resnet").mkdir()
        if not args.latency_only:
            (work / "digits").mkdir()
            results["digits"] = calibration_times(args.cli, args.digits / "digits_cnn.onnx", args.digits / "calib",
                                                  work / "digits", args.threads)
            results["resnet50"] = calibration_times(args.cli, big, work / "calib_resnet", work / "resnet", args.threads)
        # For ORT's int8 kernels: uint8 activations (a Relu before a uint8 Q with zero point 0
        # is dropped, so QLinearConv forms), int8 per-channel weights.
        int8 = work / "resnet" / "ours_u8.onnx"
        subprocess.run([str(args.cli), "quantize", str(big), "-o", str(int8), "--calib-dir", str(work / "calib_resnet"),
                        "--method", "percentile", "--activation", "u8", "--no-fallback"], check=True,
                       stdout=subprocess.DEVNULL)
        results["latency"] = ort_latency(big, int8, args.threads, args.iters)
    args.json.write_text(json.dumps(results, indent=1))

    print(f"machine: {results['machine']}; onnxruntime {results['onnxruntime']}; threads {args.threads}; "
          f"ResNet-50 calibration inputs: {args.calib_inputs}")
    print("(onnxruntime's default run has a 12 GB address-space cap; where it failed, the row shows its run\n"
          " with CalibMaxIntermediateOutputs=16, and the JSON keeps the failure)")
    if not args.latency_only:
        print("\n| model | method | inferopt s | inferopt peak RSS MB | onnxruntime s | onnxruntime peak RSS MB | time ratio |")
        print("|---|---|---|---|---|---|---|")
    for model in ("digits", "resnet50") if not args.latency_only else ():
        for method, r in results[model].items():
            o, t = r["inferopt"], r.get("onnxruntime_chunked", r["onnxruntime"])
            def cell(x, key):
                return f"{x[key]:.1f}" if key in x else f"failed ({x.get('error')})"
            ratio = f"{o['s'] / t['s']:.2f}" if "error" not in o and "error" not in t else "-"
            print(f"| {model} | {method} | {cell(o, 's')} | {cell(o, 'peak_rss_mb')} | {cell(t, 's')} | "
                  f"{cell(t, 'peak_rss_mb')} | {ratio} |")
    if "latency" in results:
        lat = results["latency"]
        f, q = statistics.median(lat["float_ms"]), statistics.median(lat["int8_ms"])
        print(f"\nORT CPU latency P50 (ORT_ENABLE_ALL): float {f:.1f} ms, our INT8 QDQ {q:.1f} ms, "
              f"speed-up {f / q:.2f}x")
        print(f"ORT's optimized INT8 graph: {lat['ort_optimized_int8_ops']}")


if __name__ == "__main__":
    main()
