"""What the ONNX Runtime oracle scripts share: running the inferopt CLI, onnxruntime sessions
that run a graph as written, output metrics, and running named checks, each of which passes
(with a one-line summary), fails (reported with a short traceback, then counted) or is
skipped for missing data."""

import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np


class Skip(Exception):
    """A check that cannot run here (missing data), reported but not failed."""


def run_cli(cli, args, cwd=None, timeout=None):
    """Runs `inferopt ARGS...`; a non-zero exit raises with the command and its stderr (so does
    running past `timeout` seconds, subprocess.TimeoutExpired)."""
    proc = subprocess.run([str(cli), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(
            f"inferopt {' '.join(map(str, args))} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def ort_session(path, threads=0):
    """An onnxruntime CPU session with its graph optimizations off, so the graph runs as
    written (0 threads: onnxruntime's default)."""
    import onnxruntime as ort  # only the scripts that need it pay for the import

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3  # unused initializers and the like are not failures
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = threads
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def read_tensor(path):
    """(name, array) of a TensorProto file such as `inferopt run --output-dir` writes."""
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    t.ParseFromString(Path(path).read_bytes())
    return t.name, numpy_helper.to_array(t)


def relative_diff(actual, expected):
    """max |actual - expected| / max |expected|, in float64 (0 for two empty tensors)."""
    if expected.size == 0:
        return 0.0
    diff = np.max(np.abs(actual.astype(np.float64) - expected.astype(np.float64)))
    return float(diff / max(float(np.max(np.abs(expected.astype(np.float64)))), 1e-30))


def cosine(actual, expected):
    """Cosine similarity of the two tensors, flattened, in float64."""
    a, e = actual.astype(np.float64).ravel(), expected.astype(np.float64).ravel()
    norms = float(np.linalg.norm(a) * np.linalg.norm(e))
    return float(a @ e / norms) if norms > 0 else float(np.array_equal(a, e))


def run_checks(checks):
    """Runs the (name, check) pairs in order, one line each; returns the process exit code."""
    passed, failed, skipped = [], [], []
    for name, check in checks:
        start = time.monotonic()
        try:
            summary = check()
        except Skip as s:
            skipped.append(name)
            print(f"SKIP  {name}: {s}")
        except Exception as e:  # noqa: BLE001 - every failure is reported, then counted
            failed.append(name)
            print(f"FAIL  {name}: {type(e).__name__}: {e}")
            traceback.print_exc(limit=3, file=sys.stdout)
        else:
            passed.append(name)
            print(f"PASS  {name}: {summary} ({time.monotonic() - start:.1f} s)")
        sys.stdout.flush()
    print(f"\n{len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


def transformer_feed(path, rng, sequence=12):
    """A feed for every input of the model at `path`: token ids in [1, vocabulary) (the first
    dim of its smallest 2-D initializer of at least 100 rows: the embedding table), masks of
    ones, N(0, 1) values for real inputs; symbolic dims become batch 1 and `sequence`."""
    import onnx

    model = onnx.load(str(path))
    vocab = min((i.dims[0] for i in model.graph.initializer if len(i.dims) == 2 and i.dims[0] >= 100), default=100)
    feed = {}
    for i in ort_session(path).get_inputs():
        shape = [d if isinstance(d, int) else (1 if k == 0 else sequence) for k, d in enumerate(i.shape)]
        if "int" in i.type:
            feed[i.name] = np.ones(shape, np.int64) if "mask" in i.name else rng.integers(1, vocab, shape, dtype=np.int64)
        else:
            feed[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feed


def with_trained_biases(src, dst, seed=5):
    """Writes `src` to `dst` with every all-zero float32 vector initializer (the biases of an
    untrained export, which optimizers drop) filled with seeded N(0, 0.1) values, as a trained
    model has them."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(src), load_external_data=False)
    rng = np.random.default_rng(seed)
    for init in model.graph.initializer:
        values = numpy_helper.to_array(init)
        if values.ndim == 1 and values.dtype == np.float32 and values.size > 1 and not values.any():
            init.CopyFrom(numpy_helper.from_array(rng.normal(0, 0.1, values.shape).astype(np.float32), init.name))
    onnx.save(model, str(dst))
