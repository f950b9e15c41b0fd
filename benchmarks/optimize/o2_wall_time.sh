#!/usr/bin/env bash
# Wall time of `inferopt optimize -O2` for two builds of the CLI, on the same models.
#
#   benchmarks/optimize/o2_wall_time.sh [-n ROUNDS] [-O LEVEL] BEFORE AFTER MODEL.onnx [...]
#
# BEFORE and AFTER are two inferopt binaries (e.g. a build of main and one of a branch). For
# each model, each binary first runs once as a warm-up (not counted: it fills the page cache
# and shows that the command works), then the two run in turn - before, after, before,
# after, ... - ROUNDS times each (default 5), so that drift in the machine's speed hits both
# alike. Each run is `BIN optimize -O LEVEL MODEL -o OUT` (LEVEL default 2), timed as a whole
# process (start-up, load, passes and save) with bash's own clock. What the runs print is
# thrown away; their output models go to a temporary folder (mktemp -d, so under $TMPDIR,
# default /tmp) that is removed at the end. A large model is saved through the page cache to
# the disk: TMPDIR=/dev/shm keeps disk writeback out of the figures.
#
# Prints one row per model: the median wall seconds of each binary, their min-max, and the
# ratio of the medians before/after (above 1: AFTER is faster). Running it with the same
# binary as BEFORE and AFTER shows the noise level of the machine.
set -euo pipefail

usage() {
  sed -n '4p' "$0" | sed 's/^# *//' >&2
  exit 2
}

rounds=5
level=2
while getopts "n:O:h" opt; do
  case "$opt" in
    n) rounds=$OPTARG ;;
    O) level=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
(($# >= 3)) || usage
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "error: -n wants a positive integer" >&2; exit 2; }

before=$1
after=$2
shift 2
for bin in "$before" "$after"; do
  [[ -x "$bin" ]] || { echo "error: $bin is not an executable" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Runs BIN on MODEL once; prints its wall seconds. A failing run stops the script, with the
# command's own output shown.
run_once() {
  local bin=$1 model=$2 start end
  start=$EPOCHREALTIME
  if ! "$bin" optimize -O"$level" "$model" -o "$tmp/out.onnx" >"$tmp/log" 2>&1; then
    echo "error: $bin optimize -O$level $model failed:" >&2
    cat "$tmp/log" >&2
    exit 1
  fi
  end=$EPOCHREALTIME
  rm -f "$tmp/out.onnx" "$tmp/out.onnx.data"
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f\n", e - s }'
}

# Reads one number a line; prints "median min max".
stats() {
  sort -g | awk '{ v[NR] = $1 }
    END {
      m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%.3f %.3f %.3f\n", m, v[1], v[NR]
    }'
}

echo "inferopt optimize -O$level: wall seconds, median (min-max) of $rounds runs each, alternating"
printf '%-32s %22s %22s %14s\n' model before after before/after
for model in "$@"; do
  [[ -f "$model" ]] || { echo "error: no model file $model" >&2; exit 2; }
  run_once "$before" "$model" >/dev/null
  run_once "$after" "$model" >/dev/null
  : >"$tmp/before.txt"
  : >"$tmp/after.txt"
  for ((i = 0; i < rounds; i++)); do
    run_once "$before" "$model" >>"$tmp/before.txt"
    run_once "$after" "$model" >>"$tmp/after.txt"
  done
  read -r bm bmin bmax < <(stats <"$tmp/before.txt")
  read -r am amin amax < <(stats <"$tmp/after.txt")
  ratio=$(awk -v b="$bm" -v a="$am" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "n/a" }')
  printf '%-32s %22s %22s %14s\n' "$(basename "$model")" \
    "$bm ($bmin-$bmax)" "$am ($amin-$amax)" "$ratio"
done
