#!/usr/bin/env python3
"""What the types `inferopt optimize` writes into value_info do to onnxruntime: each model as
exported, after `optimize -O1` (every inferred type listed, the default) and after
`optimize -O1 --value-info as-loaded` (only the export's own entries), timed in onnxruntime
(ORT_ENABLE_ALL, CPU) in alternating rounds, with the number of SkipLayerNormalization nodes
onnxruntime formed (from its saved optimized graph). Knowing a residual Add's dims is what lets
onnxruntime fuse it with the LayerNormalization after it.

  python benchmarks/optimize/ort_value_info.py --cli build/bin/inferopt MODEL.onnx ... [--threads 1]
      [--rounds 5] [--iters 15] [--seq 128]
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "quant"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from executor_vs_ort import ort_p50  # noqa: E402
from transformer_int8 import session  # noqa: E402


def feeds(sess, seq):
    """Seeded inputs: token ids, masks of ones and type ids of zeros for integer inputs,
    normal values for float ones; symbolic dims are 1 (first) and `seq` (others)."""
    rng = np.random.default_rng(0)
    out = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else (1 if k == 0 else seq) for k, d in enumerate(i.shape)]
        if "int" in i.type:
            fill = np.ones if "mask" in i.name else np.zeros if "type" in i.name else None
            out[i.name] = fill(shape, np.int64) if fill else rng.integers(1, 1000, shape, dtype=np.int64)
        else:
            out[i.name] = rng.standard_normal(shape).astype(np.float32)
    return out


def fused_norms(path, threads, work):
    saved = work / (path.stem + ".ort.onnx")
    session(path, threads, saved)
    return sum(n.op_type == "SkipLayerNormalization" for n in onnx.load(str(saved), load_external_data=False).graph.node)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("models", type=Path, nargs="+")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=15)
    ap.add_argument("--seq", type=int, default=128)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ort_value_info_"))
    print(f"onnxruntime {ort.__version__}, {args.threads} thread(s), {args.rounds} alternating rounds x {args.iters} runs\n")
    print("| model | export ms | -O1 ms | -O1 --value-info as-loaded ms | SkipLayerNormalization formed (export / -O1 / as-loaded) |")
    print("|---|---|---|---|---|")
    for model in args.models:
        variants = {"export": model}
        for name, extra in (("O1", []), ("as-loaded", ["--value-info", "as-loaded"])):
            out = work / f"{model.stem}.{name}.onnx"
            subprocess.run([args.cli, "optimize", str(model), "-o", str(out), "-O1", *extra], check=True, capture_output=True)
            variants[name] = out
        sessions = {k: session(p, args.threads) for k, p in variants.items()}
        inputs = feeds(sessions["export"], args.seq)
        times = {k: [] for k in variants}
        for _ in range(args.rounds):
            for k, s in sessions.items():
                times[k].append(ort_p50(s, inputs, args.iters, warmup=3))
        med = {k: statistics.median(v) for k, v in times.items()}
        fused = " / ".join(str(fused_norms(p, args.threads, work)) for p in variants.values())
        print(f"| {model.stem} | {med['export']:.2f} | {med['O1']:.2f} | {med['as-loaded']:.2f} | {fused} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
