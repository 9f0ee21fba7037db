#!/usr/bin/env bash
# Side-by-side check of kstacklab's syscall timing against `perf bench syscall basic` (getppid).
#
# This VM drifts 20-30 % over seconds, so only adjacent measurements compare: each round runs
#   perf bench syscall basic -l N          (loop of N getppid() via glibc syscall(), mean)
#   kstacklab run --bench syscall/getppid --timing loop     (one batch of N calls, mean)
#   kstacklab run --bench syscall/getppid --timing percall  (every call timed, overhead-corrected mean)
# back to back on the same CPU (order alternating between rounds), and we report the median over rounds of the per-round ratios.
# Usage: bench/compare-perf.sh [KSTACKLAB] [ROUNDS] [CALLS]
set -euo pipefail
K=${1:-build/src/kstacklab}
ROUNDS=${2:-9}
N=${3:-1000000}
CPU=$(( $(nproc) - 1 ))
command -v perf >/dev/null || { echo "perf not found: apt-get install linux-perf" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

perf_ns() { taskset -c "$CPU" perf bench syscall basic -l "$N" 2>/dev/null | awk '/usecs\/op/ {print $1 * 1000}'; }
k_ns() {  # $1 = timing mode
  "$K" run --bench syscall/getppid --timing "$1" --iterations "$N" --repetitions 1 --warmup 10000 \
      --cpu "$CPU" --no-store -o "$tmp/k.json" >/dev/null 2>&1
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["benchmarks"][0]["repetitions"][0]["mean"])' "$tmp/k.json"
}
echo "round  perf_ns  loop_ns  percall_ns  loop/perf  percall/loop"
: >"$tmp/ratios"
for r in $(seq 1 "$ROUNDS"); do
  # Alternate the order so that neither tool always runs first (start-up / drift bias).
  if [ $((r % 2)) -eq 1 ]; then p=$(perf_ns); l=$(k_ns loop); c=$(k_ns percall)
  else c=$(k_ns percall); l=$(k_ns loop); p=$(perf_ns); fi
  python3 - "$r" "$p" "$l" "$c" >>"$tmp/ratios" <<'PY'
import sys
r, p, l, c = sys.argv[1], *map(float, sys.argv[2:])
print(f"{r} {p:.1f} {l:.1f} {c:.1f} {l/p:.3f} {c/l:.3f}")
PY
  tail -1 "$tmp/ratios" | awk '{printf "%5s  %7s  %7s  %10s  %9s  %12s\n", $1, $2, $3, $4, $5, $6}'
done
python3 - "$tmp/ratios" "$(nproc)" "$N" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
lp = [float(r[4]) for r in rows]; cl = [float(r[5]) for r in rows]
print(f"median loop/perf    = {statistics.median(lp):.3f}  (min {min(lp):.3f}, max {max(lp):.3f})")
print(f"median percall/loop = {statistics.median(cl):.3f}  (min {min(cl):.3f}, max {max(cl):.3f})")
print(f"{len(rows)} rounds of {sys.argv[3]} getppid calls each, adjacent runs, pinned to one CPU")
PY
