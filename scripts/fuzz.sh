#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`: clang, ASan + UBSan + libFuzzer) and runs each
# for SECONDS (default 60) from its seed corpus in tests/fuzz/corpus/<name>/, two at a time
# (FUZZ_JOBS=N for another count: each fuzzer is one process). Fails on any
# crash, leak, timeout (10 s per input) or out-of-memory (2 GB). Prints the executions per
# target. Findings are written to build-fuzz/findings/<name>/ (crash-*, leak-*, timeout-*).
# Run longer:  scripts/fuzz.sh 3600        (or one target: FUZZ_TARGETS=result_loader ...)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
targets=(${FUZZ_TARGETS:-result_loader store_import parsers sysinfo live_records campaign})
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j2 --target "${targets[@]/#/fuzz_}"
# Two targets at a time (FUZZ_JOBS): each fuzzer is one process on one core.
jobs=${FUZZ_JOBS:-2}
run_one() {  # TARGET: runs it, prints its one-line verdict; exit 1 on a finding
  local t=$1
  local work="build-fuzz/corpus/$t"        # grows as the fuzzer finds new coverage; seeds untouched
  local findings="build-fuzz/findings/$t"
  mkdir -p "$work" "$findings"
  local log="build-fuzz/fuzz-$t.log"
  echo "fuzz: fuzz_$t for ${seconds}s"
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     "build-fuzz/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$findings/" "$work" "tests/fuzz/corpus/$t" \
       >"$log" 2>&1; then
    local runs
    runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
    echo "fuzz_$t: ok, $runs executions"
  else
    echo "fuzz_$t: FAILED (see $log and $findings/)"
    tail -40 "$log"
    return 1
  fi
}
status=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
