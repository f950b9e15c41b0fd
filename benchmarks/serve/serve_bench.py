#!/usr/bin/env python3
"""`inferopt serve` under `inferopt loadgen`: the issue 21 measurements, in one run.

  serve_bench.py --cli build/bin/inferopt --model MODEL.onnx [--sweep] [--cache] [--overload]
                 [--plot docs/serve_throughput_p99.svg] [--json out.json]

--sweep     closed loop at concurrency 1, 2, 4, ..., 64 against two servers started side by
            side, --max-batch 16 (with --max-delay-us) and --max-batch 1, alternating per
            concurrency level; throughput, P50/P99 and the batch sizes of each; the ratio at 16.
--cache     --unique (cache-busting) load against a cache-on and a cache-off server,
            alternating, and the server-side hit latency of repeated requests.
--overload  saturation throughput (closed loop, concurrency 16), then Poisson arrivals at
            --loads times it (default 0.5x and 2x) against --max-queue 64 and any
            --overload-arg flags (such as --max-queue-wait-ms): statuses, refused latency,
            accepted P99 at each load, RSS, and SIGTERM's exit code.
The SVG (throughput against P99, one line per server, points labelled by concurrency) is
written by hand: no plotting library is needed.
"""
import argparse
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request

CONCURRENCY = [1, 2, 4, 8, 16, 32, 64]


PIN = {"server": [], "client": []}  # taskset prefixes, from --server-cpus / --client-cpus


class Server:
    def __init__(self, cli, model, *options):
        self.proc = subprocess.Popen([*PIN["server"], cli, "serve", model, "--port", "0", "--name", "m", *options],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening on "):
            raise SystemExit(f"serve did not start: {line} {self.proc.stderr.read()}")
        self.url = line.split()[-1]
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def stats(self):
        with urllib.request.urlopen(self.url + "/v2/models/m/stats", timeout=10) as r:
            return json.load(r)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def loadgen(cli, server, *options):
    r = subprocess.run([*PIN["client"], cli, "loadgen", server.url, "--model", "m", "--json", *options], capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"loadgen failed: {r.stderr}")
    return json.loads(r.stdout)


def sweep(args, common):
    batched = Server(args.cli, args.model, "--max-batch", "16", "--max-delay-us", str(args.max_delay_us), *common)
    single = Server(args.cli, args.model, "--max-batch", "1", *common)
    results = {"max-batch 16": [], "max-batch 1": []}
    try:
        for c in CONCURRENCY:
            n = max(200, c * args.per_client)
            for label, server in (("max-batch 16", batched), ("max-batch 1", single)):
                r = loadgen(args.cli, server, "--concurrency", str(c), "--requests", str(n))
                results[label].append({"concurrency": c, **r})
    finally:
        batched.stop()
        single.stop()
    print("| concurrency | max-batch 16: req/s | P50 ms | P99 ms | mean batch | max-batch 1: req/s | P50 ms | P99 ms | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for a, b in zip(results["max-batch 16"], results["max-batch 1"]):
        print(f"| {a['concurrency']} | {a['throughput']:.0f} | {a['latency_ms']['p50']:.2f} | {a['latency_ms']['p99']:.2f} | "
              f"{a['server']['mean_batch']:.1f} | {b['throughput']:.0f} | {b['latency_ms']['p50']:.2f} | "
              f"{b['latency_ms']['p99']:.2f} | **{a['throughput'] / b['throughput']:.2f}** |")
    at16 = next(r for r in results["max-batch 16"] if r["concurrency"] == 16)
    print(f"\nbatch sizes at concurrency 16 (rows x batches): {at16['server']['batch_sizes']}")
    return results


def cache(args, common):
    on = Server(args.cli, args.model, "--max-batch", "16", "--max-delay-us", str(args.max_delay_us), "--cache-mb", "256", *common)
    off = Server(args.cli, args.model, "--max-batch", "16", "--max-delay-us", str(args.max_delay_us), *common)
    rows = []
    try:
        for round_ in range(3):
            for label, server in (("cache on", on), ("cache off", off)):
                # A new seed each run: --unique inputs repeat across runs with the same seed.
                seed = str(1000 * round_ + (label == "cache on"))
                r = loadgen(args.cli, server, "--concurrency", "16", "--requests", str(16 * args.per_client), "--unique",
                            "--seed", seed)
                rows.append((label, r["throughput"], r["latency_ms"]["p99"]))
        repeated = loadgen(args.cli, on, "--concurrency", "1", "--requests", "500")
        hit = on.stats()["cache"]
    finally:
        on.stop()
        off.stop()
    mean = lambda label: sum(t for l, t, _ in rows if l == label) / sum(1 for l, _, _ in rows if l == label)
    print("| cache-busting load (--unique, concurrency 16) | req/s, 3 alternating rounds | mean |")
    print("|---|---|---|")
    for label in ("cache on", "cache off"):
        print(f"| {label} | {', '.join(f'{t:.0f}' for l, t, _ in rows if l == label)} | {mean(label):.0f} |")
    print(f"\ncache on / off: **{mean('cache on') / mean('cache off'):.2f}**")
    print(f"repeated request, concurrency 1: client P50 {repeated['latency_ms']['p50']:.3f} ms; server-side hit "
          f"P50 {hit['hit_us']['p50']:.0f} us, P99 {hit['hit_us']['p99']:.0f} us; hits {hit['hits']}, misses {hit['misses']}")
    return {"rounds": rows, "repeated": repeated, "cache": hit}


def overload(args, common):
    s = Server(args.cli, args.model, "--max-batch", "16", "--max-delay-us", str(args.max_delay_us), "--max-queue", "64",
               *common, *args.overload_arg)
    runs = []
    try:
        saturated = args.saturation or loadgen(args.cli, s, "--concurrency", "16", "--requests", str(16 * args.per_client))["throughput"]
        for load in args.loads:
            if load == max(args.loads):
                rss_before = s.stats().get("rss_bytes", 0)
            runs.append((load, loadgen(args.cli, s, "--rate", f"{load * saturated:.0f}", "--duration", str(args.seconds),
                                       "--workers", "256")))
        stats = s.stats()
    finally:
        code = s.stop()
    print(f"server flags: --max-queue 64 {' '.join(args.overload_arg)}")
    print(f"saturation ({'given' if args.saturation else 'closed loop, concurrency 16'}): {saturated:.0f} req/s")
    print("| load | offered req/s | answered 200 req/s | statuses | 200 P50 ms | 200 P99 ms | refused P50 ms | refused P99 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for load, r in runs:
        print(f"| {load:g}x | {load * saturated:.0f} | {r['throughput']:.0f} | {r['statuses']} | {r['latency_ms']['p50']:.2f} | "
              f"{r['latency_ms']['p99']:.2f} | {r['refused_latency_ms']['p50']:.2f} | {r['refused_latency_ms']['p99']:.2f} |")
    print(f"\nRSS {rss_before / 2**20:.1f} MiB before the {max(args.loads):g}x load, {stats.get('rss_bytes', 0) / 2**20:.1f} MiB after, "
          f"peak {stats.get('peak_rss_bytes', 0) / 2**20:.1f} MiB; refused for a full queue {stats['rejected_queue_full']}, "
          f"for the expected wait {stats.get('rejected_expected_wait', 0)}; SIGTERM exit code {code}")
    return {"saturated": saturated, "runs": [{"load": load, **r} for load, r in runs], "stats": stats, "exit": code}


def svg(results, path):
    """Throughput (x) against P99 (y, log), one polyline per server."""
    w, h, left, bottom, top, right = 640, 400, 70, 50, 30, 150
    pts = [(r["throughput"], r["latency_ms"]["p99"]) for rs in results.values() for r in rs]
    xmax = max(p[0] for p in pts) * 1.1
    import math
    ymin, ymax = math.log10(max(min(p[1] for p in pts) * 0.8, 1e-3)), math.log10(max(p[1] for p in pts) * 1.25)
    X = lambda v: left + (w - left - right) * v / xmax
    Y = lambda v: h - bottom - (h - bottom - top) * (math.log10(max(v, 1e-3)) - ymin) / (ymax - ymin)
    colors = ["#1b9e77", "#d95f02"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
           f'<text x="{(w - right + left) / 2}" y="{h - 12}" text-anchor="middle">throughput (requests/s)</text>',
           f'<text x="16" y="{(h - bottom + top) / 2}" transform="rotate(-90 16 {(h - bottom + top) / 2})" text-anchor="middle">P99 latency (ms, log)</text>']
    for k in range(6):
        v = xmax * k / 5
        out.append(f'<text x="{X(v):.0f}" y="{h - bottom + 15}" text-anchor="middle">{v:.0f}</text>')
    e = math.floor(ymin)
    while e <= ymax:
        for m in (1, 2, 5):
            v = m * 10 ** e
            if ymin <= math.log10(v) <= ymax:
                out.append(f'<line x1="{left - 4}" y1="{Y(v):.1f}" x2="{w - right}" y2="{Y(v):.1f}" stroke="#ddd"/>')
                out.append(f'<text x="{left - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
        e += 1
    for i, (label, rs) in enumerate(results.items()):
        c = colors[i % len(colors)]
        line = " ".join(f"{X(r['throughput']):.1f},{Y(r['latency_ms']['p99']):.1f}" for r in rs)
        out.append(f'<polyline points="{line}" fill="none" stroke="{c}" stroke-width="2"/>')
        for r in rs:
            x, y = X(r["throughput"]), Y(r["latency_ms"]["p99"])
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{c}"/>')
            out.append(f'<text x="{x + 4:.1f}" y="{y - 4:.1f}" fill="{c}">{r["concurrency"]}</text>')
        out.append(f'<text x="{w - right + 10}" y="{top + 20 + 18 * i}" fill="{c}">{label}</text>')
    out.append(f'<text x="{w - right + 10}" y="{top + 70}">labels: concurrency</text></svg>')
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", default="2", help="threads of the server's one instance")
    ap.add_argument("--max-delay-us", type=int, default=2000)
    ap.add_argument("--http-threads", default="64", help="the server's decode-and-wait threads (--http-threads)")
    ap.add_argument("--per-client", type=int, default=40, help="requests per client in each closed-loop run")
    ap.add_argument("--seconds", type=int, default=10, help="length of each open-loop run")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--cache", action="store_true")
    ap.add_argument("--overload", action="store_true")
    ap.add_argument("--loads", type=float, nargs="+", default=[0.5, 2.0],
                    help="open-loop rates of the overload run, as multiples of the saturation throughput")
    ap.add_argument("--saturation", type=float,
                    help="the saturation throughput to scale --loads by, instead of measuring it at the start: "
                         "two configurations compared at the same offered rates")
    ap.add_argument("--overload-arg", action="append", default=[],
                    help="an extra flag for the overload run's server, e.g. --overload-arg=--queue-timeout-ms=10")
    ap.add_argument("--server-cpus", help="run the server on these CPUs (taskset -c), e.g. 0")
    ap.add_argument("--client-cpus", help="run loadgen on these CPUs, e.g. 1: a stand-in for a client on another machine")
    ap.add_argument("--plot")
    ap.add_argument("--json")
    args = ap.parse_args()
    common = ["--threads", args.threads, "--http-threads", args.http_threads]
    for who, cpus in (("server", args.server_cpus), ("client", args.client_cpus)):
        if cpus:
            PIN[who] = ["taskset", "-c", cpus]
    out = {}
    if args.sweep:
        out["sweep"] = sweep(args, common)
        if args.plot:
            svg(out["sweep"], args.plot)
    if args.cache:
        out["cache"] = cache(args, common)
    if args.overload:
        out["overload"] = overload(args, common)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
