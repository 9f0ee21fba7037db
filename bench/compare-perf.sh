#!/usr/bin/env bash
# Side-by-side check of kstacklab's syscall timing against `perf bench syscall basic` (getppid).
#
# `perf bench syscall basic` calls glibc's getppid() in a loop, so its counterpart is the libc
# call path: kstacklab's `syscall/getppid:libc` in loop mode. The raw path (the inline `syscall`
# instruction, the suite's baseline) is reported beside it: raw/libc is the cost of going through
# the C library's wrapper (on hosts with return mitigations — AMD SRSO Safe RET, RSB filling — it
# is mostly the return that crosses the syscall; docs/methodology.md "Call path"). The libc row is
# also run in per-call mode (every call timed, the timer overhead subtracted): percall/loop checks
# that per-call timing measures the same mean as the untimed batch.
#
# This VM drifts 20-30 % over seconds, so only adjacent measurements compare: each round runs
#   perf bench syscall basic -l N                          (loop of N glibc getppid(), mean)
#   kstacklab run --bench syscall/getppid:libc --timing loop   (one batch of N calls, mean)
#   kstacklab run --bench syscall/getppid:libc --timing percall (every call timed, corrected mean)
#   kstacklab run --bench syscall/getppid:raw --timing loop    (the same with the raw instruction)
# back to back on the same CPU, in a new random order every round (until 2026-12-01: the order
# reversed every other round, which the figures in docs/benchmarks.md used), and we
# report the median over rounds of the per-round ratios. Targets: median libc/perf and median
# percall/loop (libc row) within +-5 %.
# Usage: bench/compare-perf.sh [KSTACKLAB] [ROUNDS] [CALLS]
set -euo pipefail
K=${1:-build/src/kstacklab}
ROUNDS=${2:-9}
N=${3:-1000000}
CPU=$(python3 -c "import os; print(max(os.sched_getaffinity(0)))")  # the last CPU this process may use
command -v perf >/dev/null || {
  echo "perf not found: apt-get install linux-perf" >&2
  exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

perf_ns() { taskset -c "$CPU" perf bench syscall basic -l "$N" 2>/dev/null | awk '/usecs\/op/ {print $1 * 1000}'; }
k_ns() { # $1 = call path (raw|libc), $2 = timing mode (loop|percall)
  "$K" run --bench "syscall/getppid:$1" --timing "$2" --iterations "$N" --repetitions 1 \
    --warmup 10000 --cpu "$CPU" --no-store -o "$tmp/k.json" >/dev/null 2>&1
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["benchmarks"][0]["repetitions"][0]["mean"])' "$tmp/k.json"
}
echo "round  perf_ns  libc_ns   raw_ns  percall_ns  libc/perf  raw/libc  percall/loop"
: >"$tmp/ratios"
for r in $(seq 1 "$ROUNDS"); do
  # A new random order in every round, so that neither tool always runs first (start-up, drift)
  # and no fixed cycle can line up with periodic host noise (docs/reading-tables.md "Order of
  # runs").
  for m in $(shuf -e perf libc-loop libc-percall raw-loop); do
    case $m in
      perf) p=$(perf_ns) ;;
      libc-loop) l=$(k_ns libc loop) ;;
      libc-percall) c=$(k_ns libc percall) ;;
      raw-loop) w=$(k_ns raw loop) ;;
    esac
  done
  python3 - "$r" "$p" "$l" "$w" "$c" >>"$tmp/ratios" <<'PY'
import sys
r, p, l, w, c = sys.argv[1], *map(float, sys.argv[2:])
print(f"{r} {p:.1f} {l:.1f} {w:.1f} {c:.1f} {l/p:.3f} {w/l:.3f} {c/l:.3f}")
PY
  tail -1 "$tmp/ratios" |
    awk '{printf "%5s  %7s  %7s  %7s  %10s  %9s  %8s  %12s\n", $1, $2, $3, $4, $5, $6, $7, $8}'
done
python3 - "$tmp/ratios" "$N" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
lp = [float(r[5]) for r in rows]; wl = [float(r[6]) for r in rows]; cl = [float(r[7]) for r in rows]
def target(m): return 'within' if abs(m - 1) <= 0.05 else 'OUTSIDE'
m = statistics.median(lp)
print(f"median libc/perf    = {m:.3f}  (min {min(lp):.3f}, max {max(lp):.3f})  {target(m)} the +-5 % target")
print(f"median raw/libc     = {statistics.median(wl):.3f}  (min {min(wl):.3f}, max {max(wl):.3f})")
m = statistics.median(cl)
print(f"median percall/loop = {m:.3f}  (min {min(cl):.3f}, max {max(cl):.3f})  {target(m)} the +-5 % target")
print(f"{len(rows)} rounds of {sys.argv[2]} getppid calls each, adjacent runs, pinned to one CPU")
PY
