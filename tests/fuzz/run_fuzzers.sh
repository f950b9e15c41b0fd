#!/usr/bin/env bash
# Runs libFuzzer targets from the seed corpus, each for a bounded time, and prints one line
# per target: executions, coverage (edges), features, corpus size, and findings. Exit 1 when
# any target found a crash, hang, leak or out-of-memory input (kept under WORK/findings).
#
#   tests/fuzz/run_fuzzers.sh --seconds 600 --bin-dir build-fuzz/bin --work build-fuzz/fuzz [TARGET...]
#
# TARGET is a suffix of a fuzz_* program (load, shape_inference, optimize, quantize,
# prune_groups, execute); none: all of them, one after another. --jobs N runs N at once.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
seconds=60
bin_dir=""
work=""
jobs=1
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --bin-dir) bin_dir="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ -n "$bin_dir" && -n "$work" ]] || { echo "run_fuzzers.sh: give --bin-dir and --work" >&2; exit 2; }
[[ ${#targets[@]} -gt 0 ]] || targets=(load shape_inference optimize quantize prune_groups execute)

# Leaks are findings; an allocation the process may not have is a bad_alloc, as in the CLI.
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:max_allocation_size_mb=2048:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"

run_one() {
  local target="$1"
  local program="$bin_dir/fuzz_$target"
  local corpus="$work/corpus/$target" findings="$work/findings/$target" log="$work/logs/$target.log"
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  [[ -x "$program" ]] || { echo "$target: $program is not built" >&2; return 1; }
  # The regression corpus seeds too: each model there once broke something.
  "$program" "$corpus" "$here/corpus" "$here/regressions" -dict="$here/onnx.dict" \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -malloc_limit_mb=4096 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$findings/" >"$log" 2>&1
  local rc=$?
  local runs cov ft
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  local found
  found=$(find "$findings" -type f | wc -l)
  printf '%-16s rc=%d executions=%s cov=%s ft=%s corpus=%d findings=%d\n' \
    "$target" "$rc" "${runs:-?}" "${cov:-?}" "${ft:-?}" "$(find "$corpus" -type f | wc -l)" "$found"
  [[ $rc -eq 0 && $found -eq 0 ]]
}

status=0
pids=()
for target in "${targets[@]}"; do
  run_one "$target" &
  pids+=($!)
  if [[ ${#pids[@]} -ge $jobs ]]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status
