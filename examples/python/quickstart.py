# %% [markdown]
# # inferopt from Python
#
# A notebook in script form (each `# %%` is a cell: VS Code and Jupytext open it as a notebook).
# It optimizes a torch export, checks the numbers, quantizes it to INT8, prunes it and runs
# every result on NumPy arrays.
#
#     PYTHONPATH=build/python python examples/python/quickstart.py [MODEL.onnx]

# %%
import pathlib
import sys
import time

import numpy as np

import inferopt

root = pathlib.Path(__file__).resolve().parents[2]
path = sys.argv[1] if len(sys.argv) > 1 else root / "tests" / "models" / "corpus" / "resnet_ts.onnx"
model = inferopt.load(path)  # a path, bytes, an onnx.ModelProto or a Model
print(model, model.inputs)
info = inferopt.inspect(model)
print(f"{info['nodes']} nodes, {info['params']:,} params, {info['macs']:,} MACs")

# %% [markdown]
# ## Optimize, and prove the numbers stayed
# `verify=True` runs the original and the optimized model on the same random inputs and raises
# `inferopt.VerificationError` when an output moves beyond rtol/atol.

# %%
optimized, report = inferopt.optimize(model, level=3, verify=True,
                                      progress=lambda stage, done, total: None)
changed = [p for p in report["passes"] if p["rewrites"]]
print(f"nodes {report['before']['nodes']} -> {report['after']['nodes']}; passes that rewrote:",
      ", ".join(f"{p['name']} ({p['rewrites']})" for p in changed))
print("largest output difference:", max(o["max_abs"] for o in report["verify"]["outputs"]))

# %% [markdown]
# ## Run it: NumPy in, NumPy out
# Inputs that are C-contiguous are read in place; outputs are handed over without a copy.

# %%
session = inferopt.Session(optimized, threads=1)
shape = [d if isinstance(d, int) else 1 for d in session.inputs[0]["shape"]]
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
outputs = session.run({session.inputs[0]["name"]: x})
for name, value in outputs.items():
    print(name, value.shape, value.dtype)
start = time.perf_counter()
for _ in range(50):
    session.run({session.inputs[0]["name"]: x})
print(f"{(time.perf_counter() - start) * 20:.3f} ms per run from Python, "
      f"{session.benchmark({session.inputs[0]['name']: x}, 50):.3f} ms in C++")

# %% [markdown]
# ## INT8: calibrate, quantize, fall back where it hurts
# The report carries the activation ranges, per-tensor SQNR and the mergeable calibration state.

# %%
batches = [{session.inputs[0]["name"]: np.random.default_rng(k).standard_normal(shape).astype(np.float32)}
           for k in range(8)]
quantized, qreport = inferopt.quantize(model, batches)
worst = sorted((s for s in qreport["sqnr"] if s["sqnr_db"] is not None), key=lambda s: s["sqnr_db"])[:3]
print(f"{qreport['nodes_quantized']} nodes quantized, top-1 agreement {qreport['top1_agreement']:.3f}, "
      f"lowest SQNR {[round(s['sqnr_db'], 1) for s in worst]} dB, state {len(qreport['state'])} bytes")

# %% [markdown]
# ## Prune 25% of the channels

# %%
pruned, preport = inferopt.prune(model, ratio=0.25)
print(f"params {preport['params']['before']:,} -> {preport['params']['after']:,}, "
      f"MACs {preport['macs']['before']:,} -> {preport['macs']['after']:,}")
print("pruned model output:", inferopt.Session(pruned).run({session.inputs[0]["name"]: x}).keys())

# %% [markdown]
# ## Bad input is an exception with a one-line message

# %%
try:
    inferopt.load(b"not a model")
except inferopt.InvalidModelError as e:
    print("refused:", e)
