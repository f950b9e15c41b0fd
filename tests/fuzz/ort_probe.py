#!/usr/bin/env python3
"""Does onnxruntime load a model, and run it on random inputs? Asked of a child process, so
that a model which crashes or hangs onnxruntime cannot take the caller down with it.

Inputs follow the declared types and shapes (symbolic or unknown dims are 1); floats are
standard normal, integers 0 or 1 (small enough to index most tables), bools random. A model
whose inputs cannot be built that way (sequences, maps, unsupported element types, over
MAX_INPUT_ELEMENTS) is loaded but not run.

  with OrtProbe(memory_mb=8192) as probe:
      result = probe.check("model.onnx", timeout=60)
      # {"load": "ok"|"error"|"crash"|"timeout"|"skipped",
      #  "run": "ok"|"error"|"crash"|"timeout"|"skipped", "error": "..."}
      # (skipped load: the model uses a domain of CUSTOM_DOMAINS)

`python ort_probe.py --serve` is the child: one JSON request per stdin line, one JSON result
per stdout line.
"""

import json
import os
import resource
import select
import signal
import subprocess
import sys
import time

MAX_INPUT_ELEMENTS = 1 << 24
CUSTOM_DOMAINS = ("inferopt",)  # no onnxruntime kernel: such a model is not loaded at all
NUMPY_TYPES = {
    "tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
    "tensor(int8)": "int8", "tensor(int16)": "int16", "tensor(int32)": "int32", "tensor(int64)": "int64",
    "tensor(uint8)": "uint8", "tensor(uint16)": "uint16", "tensor(uint32)": "uint32", "tensor(uint64)": "uint64",
    "tensor(bool)": "bool", "tensor(string)": "object",
}


# ---- the child ---------------------------------------------------------------------------------

def custom_domains(path):
    """Domains of CUSTOM_DOMAINS that a node of the model (or of a subgraph) uses."""
    import onnx

    model = onnx.ModelProto()
    try:
        with open(path, "rb") as f:
            model.ParseFromString(f.read())
    except Exception:  # noqa: BLE001 - onnxruntime will say what is wrong with it
        return []
    found = set()

    def walk(graph):
        for node in graph.node:
            if node.domain in CUSTOM_DOMAINS:
                found.add(node.domain)
            for attr in node.attribute:
                for g in [attr.g] if attr.HasField("g") else list(attr.graphs):
                    walk(g)
    walk(model.graph)
    return sorted(found)


def random_feed(session, seed):
    """{name: array} for the session's inputs, or a string saying why none can be built."""
    import numpy as np

    rng = np.random.default_rng(seed)
    feed = {}
    for arg in session.get_inputs():
        dtype = NUMPY_TYPES.get(arg.type)
        if dtype is None:
            return f"input {arg.name!r} of type {arg.type}"
        shape = [d if isinstance(d, int) and d >= 0 else 1 for d in (arg.shape or [])]
        if int(np.prod(shape, dtype=np.float64)) > MAX_INPUT_ELEMENTS:
            return f"input {arg.name!r} of shape {shape} is too large"
        if dtype.startswith("float"):
            feed[arg.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == "bool":
            feed[arg.name] = rng.integers(0, 2, shape).astype(bool)
        elif dtype == "object":
            feed[arg.name] = np.full(shape, "a", dtype=object)
        else:
            feed[arg.name] = rng.integers(0, 2, shape).astype(dtype)
    return feed


def one_line(e):
    return " ".join(str(e).split())[:500]


def probe(path, seed=0, loaded=lambda: None):
    """The result dict for one model (see the module docstring); `loaded` is called once the
    session exists."""
    import onnxruntime as ort

    custom = custom_domains(path)
    if custom:
        return {"load": "skipped", "run": "skipped", "error": f"uses domain {custom[0]}"}
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    try:
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - the refusal is the answer
        return {"load": "error", "run": "skipped", "error": one_line(e)}
    loaded()
    feed = random_feed(session, seed)
    if isinstance(feed, str):
        return {"load": "ok", "run": "skipped", "error": feed}
    try:
        session.run(None, feed)
    except Exception as e:  # noqa: BLE001
        return {"load": "ok", "run": "error", "error": one_line(e)}
    return {"load": "ok", "run": "ok", "error": ""}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve():
    """Per request: a {"loaded": true} line once the session exists (so a crash while running
    still tells the parent that loading worked), then the result."""
    for line in sys.stdin:
        request = json.loads(line)
        send(probe(request["path"], request.get("seed", 0), loaded=lambda: send({"loaded": True})))


# ---- the parent ----------------------------------------------------------------------------------

class OrtProbe:
    """A long-lived child that probes models; restarted after a crash or timeout."""

    def __init__(self, memory_mb=8192):
        self.memory_mb = memory_mb
        self.child = None
        self.pending = b""  # bytes read from the child past its last full line

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _start(self):
        limit = self.memory_mb << 20

        def limit_memory():
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        self.child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      preexec_fn=limit_memory)
        self.pending = b""

    def close(self):
        if self.child is not None:
            self.child.kill()
            self.child.wait()
            self.child = None

    def check(self, path, timeout=60, seed=0):
        if self.child is None:
            self._start()
        try:
            self.child.stdin.write((json.dumps({"path": str(path), "seed": seed}) + "\n").encode())
            self.child.stdin.flush()
        except BrokenPipeError:
            return self._lost("crash", "the probe died before the request", loaded=False)
        deadline, loaded = time.monotonic() + timeout, False
        while True:
            line = self._read_line(deadline)
            if line is None:
                return self._lost("timeout", f"onnxruntime took over {timeout} s", loaded)
            if not line:
                self.child.wait()
                rc = self.child.returncode
                why = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc}"
                return self._lost("crash", f"onnxruntime died: {why}", loaded)
            try:
                message = json.loads(line)
            except ValueError:
                continue  # something onnxruntime itself printed to stdout, not our reply
            if "loaded" not in message:
                return message
            loaded = True

    def _read_line(self, deadline):
        """The child's next line; b"" when it closed its stdout, None past the deadline. Reads
        the pipe itself: a buffered reader could hold the next line where select cannot see it."""
        fd = self.child.stdout.fileno()
        while b"\n" not in self.pending:
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b""
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line

    def _lost(self, what, error, loaded):
        """The child is gone or stuck: it is killed, and the stage it was in gets `what`."""
        self.close()
        if loaded:
            return {"load": "ok", "run": what, "error": error}
        return {"load": what, "run": "skipped", "error": error}


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        print(json.dumps(probe(sys.argv[1])))
