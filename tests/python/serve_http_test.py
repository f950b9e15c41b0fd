#!/usr/bin/env python3
"""`inferopt serve` and `inferopt loadgen` end to end, over real HTTP on 127.0.0.1.

Starts `serve` on port 0 on a committed export with a symbolic batch dimension and checks:
the KServe v2 endpoints; JSON and binary-tensor answers equal to `inferopt run` on the same
input (and onnxruntime); `loadgen` answered in full with its batch statistics; `/metrics`;
response-cache hits; every bad request of the issue's table answered with a 4xx and a JSON
error, the server still healthy after; a slow client not stalling others; a full queue
answered with 503; SIGTERM draining and exiting 0. Every wait is bounded.

  serve_http_test.py --cli build/bin/inferopt --model tests/models/corpus/resnet_dynbatch_ts.onnx \
      --fixed-model tests/models/corpus/resnet_ts.onnx --work DIR
"""
import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper as nh
import onnxruntime as ort

FAILURES = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        FAILURES.append(what)


class Server:
    """An `inferopt serve` process on a free port."""

    def __init__(self, cli, model, *options):
        self.proc = subprocess.Popen([cli, "serve", str(model), "--port", "0", *options], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        first = self._line(30)
        if not first.startswith("listening on http://"):
            self.proc.kill()
            raise SystemExit(f"serve did not start: {first!r} {self.proc.stderr.read()}")
        self.url = first.split()[-1]
        self.host, self.port = self.url[len("http://"):].split(":")
        self.port = int(self.port)

    def _line(self, timeout):
        result = []
        reader = threading.Thread(target=lambda: result.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        return result[0].strip() if result else ""

    def request(self, method, path, body=None, headers=None, timeout=30):
        req = urllib.request.Request(self.url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def infer(self, payload, headers=None, model=None):
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return self.request("POST", f"/v2/models/{model or self.name}/infer", body,
                            {"Content-Type": "application/json", **(headers or {})})

    def stop(self, sig=signal.SIGTERM, timeout=20):
        self.proc.send_signal(sig)
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None, ""
        return self.proc.returncode, out


def json_request(name, x):
    return {"id": "r1", "inputs": [{"name": name, "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]}


def binary_request(name, x):
    header = json.dumps({"inputs": [{"name": name, "shape": list(x.shape), "datatype": "FP32",
                                     "parameters": {"binary_data_size": x.nbytes}}],
                         "parameters": {"binary_data_output": True}}).encode()
    return header + x.tobytes(), {"Inference-Header-Content-Length": str(len(header)),
                                  "Content-Type": "application/octet-stream"}


def output_of(status, headers, body):
    """The first output of a 200 answer as a numpy array (JSON or binary)."""
    if status != 200:
        return None
    length = headers.get("Inference-Header-Content-Length")
    header = json.loads(body[:int(length)] if length else body)
    out = header["outputs"][0]
    if "data" in out:
        return np.array(out["data"], np.float32).reshape(out["shape"])
    return np.frombuffer(body[int(length):], np.float32).reshape(out["shape"])


def is_json_error(body):
    try:
        return isinstance(json.loads(body).get("error"), str)
    except (ValueError, AttributeError):
        return False


def reference(cli, model, name, x, work):
    """`inferopt run` on x, and onnxruntime."""
    tensor_file = work / "input.pb"
    tensor_file.write_bytes(nh.from_array(x, name).SerializeToString())
    out_dir = work / "run_out"
    subprocess.run([cli, "run", str(model), "--input", f"{name}={tensor_file}", "--output-dir", str(out_dir)],
                   check=True, capture_output=True, timeout=120)
    ours = nh.to_array(onnx.load_tensor(str(out_dir / "output_0.pb")))
    theirs = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {name: x})[0]
    return ours, theirs


def check_protocol(s, cli, model, work):
    check(s.request("GET", "/v2/health/live")[0] == 200, "live")
    check(s.request("GET", "/v2/health/ready")[0] == 200, "ready")
    meta = json.loads(s.request("GET", f"/v2/models/{s.name}")[2])
    check(meta["name"] == s.name and meta["inputs"][0]["shape"][0] == -1, "metadata has a symbolic batch")
    name = meta["inputs"][0]["name"]
    shape = [2] + meta["inputs"][0]["shape"][1:]
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    ours, theirs = reference(cli, model, name, x, work)
    got_json = output_of(*s.infer(json_request(name, x)))
    body, headers = binary_request(name, x)
    got_binary = output_of(*s.infer(body, headers))
    for label, got in (("JSON", got_json), ("binary", got_binary)):
        check(got is not None and np.allclose(got, ours, rtol=1e-4, atol=1e-5), f"{label} answer equals inferopt run")
        check(got is not None and np.allclose(got, theirs, rtol=1e-3, atol=1e-4), f"{label} answer equals onnxruntime")
    return name, shape


def check_loadgen(s, cli):
    # --unique: fresh inputs per request, so the server's cache answers none of them and every
    # request reaches a batch.
    r = subprocess.run([cli, "loadgen", s.url, "--model", s.name, "--concurrency", "8", "--requests", "300", "--unique", "--json"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "loadgen exits 0")
    report = json.loads(r.stdout) if r.returncode == 0 else {}
    check(report.get("ok") == 300 and report.get("statuses") == {"200": 300}, "loadgen: 300 of 300 answered 200")
    server = report.get("server", {})
    sizes = server.get("batch_sizes", {})
    check(sum(int(k) * v for k, v in sizes.items()) == 300 and server.get("batches", 0) >= 1, "loadgen: batch sizes add up to the requests")
    check(all(int(k) <= 8 for k in sizes), "loadgen: no batch above --max-batch")
    metrics = s.request("GET", "/metrics")[2].decode()
    check("inferopt_batch_size_bucket" in metrics and "inferopt_request_latency_us{" in metrics, "/metrics has batch sizes and latency")


def check_cache(s, name, shape):
    # The server admits a request to its cache on its second miss: the third one hits.
    x = np.full(shape, 0.5, np.float32)
    answers = [output_of(*s.infer(json_request(name, x))) for _ in range(3)]
    stats = json.loads(s.request("GET", f"/v2/models/{s.name}/stats")[2])
    check(stats["cache"]["hits"] >= 1 and all(np.array_equal(answers[0], a) for a in answers),
          "a repeated request hits the cache, same answer")


def bad_requests(name, shape):
    good = json_request(name, np.zeros(shape, np.float32))
    wrong_type = json.loads(json.dumps(good)); wrong_type["inputs"][0]["datatype"] = "INT64"
    wrong_name = json.loads(json.dumps(good)); wrong_name["inputs"][0]["name"] = "nope"
    wrong_dim = json.loads(json.dumps(good)); wrong_dim["inputs"][0]["shape"][1] += 1
    short = json.loads(json.dumps(good)); short["inputs"][0]["data"] = short["inputs"][0]["data"][:-1]
    huge = json.loads(json.dumps(good)); huge["inputs"][0]["shape"] = [2 ** 40] + shape[1:]
    strings = json.loads(json.dumps(good)); strings["inputs"][0]["data"][0] = "x"
    body, headers = binary_request(name, np.zeros(shape, np.float32))
    return [
        ("malformed JSON", b"{\"inputs\": [", None, None, 400),
        ("not an object", b"[1, 2]", None, None, 400),
        ("empty body", b"", None, None, 400),
        ("unknown input", wrong_name, None, None, 400),
        ("wrong datatype", wrong_type, None, None, 400),
        ("wrong static dim", wrong_dim, None, None, 400),
        ("too few values", short, None, None, 400),
        ("shape larger than the body", huge, None, None, 400),
        ("a string among numbers", strings, None, None, 400),
        ("missing input", {"inputs": []}, None, None, 400),
        ("binary header length past the body", body, {**headers, "Inference-Header-Content-Length": str(len(body) + 1)}, None, 400),
        ("binary header length not a number", body, {**headers, "Inference-Header-Content-Length": "x"}, None, 400),
        ("binary data cut short", body[:-4], headers, None, 400),
        ("unknown model", good, None, "nosuchmodel", 404),
        ("body over --max-request-mb", b"{" + b" " * (2 << 20) + b"}", None, None, 413),
    ]


def check_bad_requests(s, name, shape):
    for what, payload, headers, model, want in bad_requests(name, shape):
        status, _, body = s.infer(payload, headers, model)
        check(status == want and is_json_error(body), f"{what}: {want} with a JSON error (got {status})")
    status, _, body = s.request("GET", "/no/such/path")
    check(status == 404 and is_json_error(body), "unknown path: 404 with a JSON error")
    check(s.request("GET", "/v2/health/ready")[0] == 200, "still ready after the bad requests")
    check(output_of(*s.infer(json_request(name, np.ones(shape, np.float32)))) is not None, "still answers after the bad requests")


def check_slow_client(s, name, shape):
    slow = socket.create_connection((s.host, s.port), timeout=10)
    slow.sendall(b"POST /v2/models/" + s.name.encode() + b"/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"inp")
    start = time.monotonic()
    ok = output_of(*s.infer(json_request(name, np.ones(shape, np.float32)))) is not None
    check(ok and time.monotonic() - start < 4, "a client sending slowly does not stall another")
    slow.close()


def check_refusals(cli, model, name, shape, label, flags, reason, stat):
    """Bursts of concurrent requests against a server with a tight queue bound: 503s with a JSON
    error naming the reason, 200s for the rest, the refusals counted in /stats and /metrics."""
    s = Server(cli, model, "--max-batch", "1", *flags, "--name", "q")
    s.name = "q"
    x = np.ones([8] + shape[1:], np.float32)
    statuses, bodies, lock = [], [], threading.Lock()

    def hit():
        status, _, body = s.infer(json_request(name, x))
        with lock:
            statuses.append(status)
            bodies.append(body)

    hit()  # one run first: the expected wait needs a batch time
    for _ in range(5):
        threads = [threading.Thread(target=hit) for _ in range(48)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        if 503 in statuses:
            break
    check(set(statuses) <= {200, 503} and 503 in statuses and 200 in statuses, f"{label}: 503s and 200s only ({sorted(set(statuses))})")
    refused = [b for st, b in zip(statuses, bodies) if st == 503]
    check(all(is_json_error(b) and reason in json.loads(b)["error"] for b in refused), f"{label}: 503s carry a JSON error naming {reason!r}")
    stats = json.loads(s.request("GET", "/v2/models/q/stats")[2])
    metrics = s.request("GET", "/metrics")[2].decode()
    counted = [float(line.split()[-1]) for line in metrics.splitlines() if line.startswith(f"inferopt_{stat}{{")]
    check(stats[stat] == len(refused) and counted == [len(refused)], f"{label}: {len(refused)} refusals counted in /stats and /metrics")
    rc, _ = s.stop()
    check(rc == 0, f"{label}: the server stops with 0")


def two_requests_on_one_connection(s, name, x):
    """Statuses of two binary infer requests sent through one http.client connection, the
    first answer's Connection header, and whether the second request went over the same
    socket (http.client opens a new one when the server said Connection: close)."""
    body, headers = binary_request(name, x)
    conn = http.client.HTTPConnection(s.host, s.port, timeout=30)
    statuses, sockets, connection = [], [], ""
    try:
        for _ in range(2):
            conn.request("POST", f"/v2/models/{s.name}/infer", body, headers)
            sockets.append(conn.sock)
            r = conn.getresponse()
            r.read()
            statuses.append(r.status)
            connection = connection or (r.getheader("Connection") or "").lower()
    finally:
        conn.close()
    return statuses, connection, sockets[0] is sockets[1]


def check_keep_alive_requests(cli, model, name, shape):
    """By default a connection carries request after request; --keep-alive-requests 1 answers
    with Connection: close, and the client opens a new connection for its next request."""
    x = np.ones(shape, np.float32)
    for flags, closes in (([], False), (["--keep-alive-requests", "1"], True)):
        s = Server(cli, model, "--max-batch", "4", *flags, "--name", "k")
        s.name = "k"
        try:
            statuses, connection, reused = two_requests_on_one_connection(s, name, x)
        finally:
            rc, _ = s.stop()
        label = " ".join(flags) or "default keep-alive"
        check(statuses == [200, 200] and rc == 0, f"{label}: both requests answered, the server stops with 0")
        check((connection == "close") == closes and reused != closes,
              f"{label}: Connection header {connection!r}, second request on the same socket: {reused}")


def thread_nice_values(pid):
    """Nice value of each thread of a process, from /proc (field 19 of stat, after the name)."""
    values = {}
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            values[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[16])
        except (OSError, IndexError, ValueError):
            pass  # the thread ended while we looked
    return values


def check_compute_nice(cli, model, name, shape):
    """The HTTP event loop (the main thread) keeps the process's nice value; the threads of the
    model server (batcher, executor, decode-and-wait) run --compute-nice above it (default 5)."""
    x = np.ones(shape, np.float32)
    for flags, step in (([], 5), (["--compute-nice", "0"], 0)):
        s = Server(cli, model, "--max-batch", "4", "--http-threads", "2", *flags, "--name", "n")
        s.name = "n"
        try:
            answered = output_of(*s.infer(json_request(name, x))) is not None
            base = os.getpriority(os.PRIO_PROCESS, s.proc.pid)
            values = thread_nice_values(s.proc.pid)
        finally:
            rc, _ = s.stop()
        others = [v for tid, v in values.items() if tid != s.proc.pid]
        check(answered and rc == 0 and values.get(s.proc.pid) == base and base + step in others,
              f"{' '.join(flags) or 'default'}: event loop at nice {values.get(s.proc.pid)}, model threads at {sorted(set(others))}")


def check_fixed_batch(cli, model):
    s = Server(cli, model, "--max-batch", "8", "--name", "fixed")
    notice = s._line(10)
    check("serving without batching" in notice, f"a fixed-batch model is served without batching, and serve says so ({notice!r})")
    s.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--fixed-model", required=True, help="the same family with a fixed batch of 1")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    s = Server(args.cli, args.model, "--max-batch", "8", "--max-delay-us", "2000", "--cache-mb", "16",
               "--max-request-mb", "1", "--name", "m", "--http-threads", "16")
    s.name = "m"
    try:
        name, shape = check_protocol(s, args.cli, Path(args.model), work)
        check_loadgen(s, args.cli)
        check_cache(s, name, shape)
        check_bad_requests(s, name, shape)
        check_slow_client(s, name, shape)
    finally:
        rc, out = s.stop()
    check(rc == 0 and "stopped" in out, "SIGTERM: serve drains and exits 0")
    check_refusals(args.cli, Path(args.model), name, shape, "full queue", ["--max-queue", "1"], "queue is full", "rejected_queue_full")
    check_refusals(args.cli, Path(args.model), name, shape, "wait bound", ["--max-queue-wait-ms", "1"], "expected queue wait",
                   "rejected_expected_wait")
    check_keep_alive_requests(args.cli, Path(args.model), name, shape)
    check_compute_nice(args.cli, Path(args.model), name, shape)
    check_fixed_batch(args.cli, Path(args.fixed_model))
    print(f"{len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
