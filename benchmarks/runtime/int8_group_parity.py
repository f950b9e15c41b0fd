#!/usr/bin/env python3
"""The executor's int8 kernels against onnxruntime's, group by group, on an INT8 QDQ model.

Every QuantizeLinear output of MODEL becomes a graph output; onnxruntime (ORT_ENABLE_ALL,
which runs QLinearConv / QLinearAdd / its int8 MaxPool) computes them all on one seeded input.
Then each group (the ops between DequantizeLinear of its int8 inputs and its QuantizeLinear)
is cut out with onnx.utils.extract_model and run by both, fed onnxruntime's int8 inputs, so
a difference is the group's own, not one carried from earlier layers. Prints, per op type, the
groups, the elements that differ and the largest difference in units of the int8 output.

With --make DIR it first writes the model the INT8 latency row of docs/BENCHMARKS.md uses:
light ResNet-50's graph with real-sized random weights at opset 13 (DIR/resnet50.onnx) and
`inferopt quantize --method percentile --activation u8` of it on 32 random inputs
(DIR/resnet50_u8.onnx).

  benchmarks/runtime/int8_group_parity.py --cli build/bin/inferopt --make DIR --shared ../shared
  benchmarks/runtime/int8_group_parity.py --cli build/bin/inferopt DIR/resnet50_u8.onnx
"""
import argparse
import collections
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper, utils

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "quant"))
import quant_bench  # noqa: E402  (the same real-sized ResNet-50)


def make_models(cli, shared, out):
    out.mkdir(parents=True, exist_ok=True)
    quant_bench.resnet50_opset13(shared / "models" / "onnx-light" / "light_resnet50.onnx", out / "resnet50.onnx")
    quant_bench.write_batches(out / "calib", [1, 3, 224, 224], 32, 0)
    subprocess.run([cli, "quantize", str(out / "resnet50.onnx"), "-o", str(out / "resnet50_u8.onnx"), "--calib-dir",
                    str(out / "calib"), "--method", "percentile", "--activation", "u8", "--no-fallback"], check=True,
                   stdout=subprocess.DEVNULL)
    return out / "resnet50_u8.onnx"


def session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--make", type=Path, help="write the INT8 ResNet-50 here first")
    ap.add_argument("--shared", type=Path, default=Path("../shared"))
    ap.add_argument("model", nargs="?", type=Path)
    args = ap.parse_args()
    model = make_models(args.cli, args.shared, args.make) if args.make else args.model
    if model is None:
        ap.error("give MODEL or --make DIR")
    m = onnx.shape_inference.infer_shapes(onnx.load(str(model)))
    producer = {o: n for n in m.graph.node for o in n.output}
    typed = {v.name: v for v in m.graph.value_info}
    quantized = [n.output[0] for n in m.graph.node if n.op_type == "QuantizeLinear"]
    m.graph.output.extend(typed[q] for q in quantized)
    stats, worst = collections.Counter(), collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        everything = work / "all_quantized.onnx"
        onnx.save(m, str(everything))
        x_name = m.graph.input[0].name
        x = np.random.default_rng(1).uniform(0, 1, [1, 3, 224, 224]).astype(np.float32)
        sess = session(everything)
        values = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {x_name: x})))
        for q in quantized:
            if producer[q].input[0] not in producer:
                continue  # the input's QuantizeLinear: float in
            op = producer[producer[q].input[0]]
            if op.op_type == "Relu":
                op = producer[op.input[0]]
            inputs = [producer[i].input[0] for i in op.input
                      if i in producer and producer[i].op_type == "DequantizeLinear" and producer[i].input[0] in values]
            if not inputs:
                continue
            group = work / "group.onnx"
            utils.extract_model(str(everything), str(group), inputs, [q])
            feeds = {i: values[i] for i in inputs}
            want = session(group).run(None, feeds)[0]
            folder = work / "feeds"
            folder.mkdir(exist_ok=True)
            args_in = []
            for i in inputs:
                f = folder / f"{len(args_in)}.pb"
                f.write_bytes(numpy_helper.from_array(values[i], i).SerializeToString())
                args_in += ["--input", f"{i}={f}"]
            subprocess.run([args.cli, "run", str(group), *args_in, "--output-dir", str(folder), "--threads", "1"],
                           check=True, stdout=subprocess.DEVNULL)
            t = onnx.TensorProto()
            t.ParseFromString((folder / "output_0.pb").read_bytes())
            diff = np.abs(numpy_helper.to_array(t).astype(np.int32) - want.astype(np.int32))
            stats[op.op_type] += 1
            stats[op.op_type + " elements"] += diff.size
            stats[op.op_type + " differing"] += int((diff > 0).sum())
            worst[op.op_type] = max(worst[op.op_type], int(diff.max()))
    print("| op | groups | elements | differing by 1 | largest difference (units) |\n|---|---|---|---|---|")
    for op in sorted(worst):
        print(f"| {op} | {stats[op]} | {stats[op + ' elements']} | {stats[op + ' differing']} | {worst[op]} |")
    return 0 if max(worst.values(), default=0) <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
