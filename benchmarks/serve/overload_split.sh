#!/usr/bin/env bash
# One open-loop load against a fresh `inferopt serve`, and where the accepted requests' time
# went: loadgen's client-side latency beside the server's own request, queue and compute
# percentiles (its /stats after the run, so they cover this load only).
#   benchmarks/serve/overload_split.sh CLI MODEL RATE [serve flags...]
# Environment: SECONDS_PER_RUN (default 6), WORKERS (loadgen senders, default 256), SERVER_CPUS / CLIENT_CPUS (taskset lists, to
# keep the client off the server's cores).
set -euo pipefail
cli=$1 model=$2 rate=$3
shift 3
server_pin=() client_pin=()
[ -n "${SERVER_CPUS:-}" ] && server_pin=(taskset -c "$SERVER_CPUS")
[ -n "${CLIENT_CPUS:-}" ] && client_pin=(taskset -c "$CLIENT_CPUS")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${server_pin[@]}" "$cli" serve "$model" --port 0 --name m "$@" > "$work/server.out" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q "^listening" "$work/server.out" && break; sleep 0.1; done
url=$(awk 'NR == 1 {print $3}' "$work/server.out")
"${client_pin[@]}" "$cli" loadgen "$url" --model m --rate "$rate" --duration "${SECONDS_PER_RUN:-6}" --workers "${WORKERS:-256}" --json > "$work/client.json"
python3 -c "import urllib.request, sys; sys.stdout.write(urllib.request.urlopen('$url/v2/models/m/stats').read().decode())" > "$work/stats.json"
kill -TERM "$server"
wait "$server"
python3 - "$work/client.json" "$work/stats.json" <<'PY'
import json, sys
client, stats = (json.load(open(p)) for p in sys.argv[1:])
ms = lambda h: f"P50 {h['p50'] / 1000:.1f} P90 {h['p90'] / 1000:.1f} P99 {h['p99'] / 1000:.1f}"
lat = client["latency_ms"]
print(f"answered {client['throughput']:.0f}/s {client['statuses']}, client P50 {lat['p50']:.1f} P99 {lat['p99']:.1f} | server request {ms(stats['request_us'])}"
      f" | queue {ms(stats['queue_us'])} | compute {ms(stats['compute_us'])} | mean batch "
      f"{stats['inference_count'] / max(1, stats['execution_count']):.1f}")
PY
