#!/usr/bin/env bash
# How `kstacklab run`'s defaults (repetitions x iterations, sessions) were chosen:
# the settings that give the smallest minimal detectable change (MDC) per second spent.
#
# Phase 1, the split of a fixed budget of calls per row between repetitions and iterations:
#   for each SETTINGS string, RUNS runs of the same rows, the settings interleaved (round k runs
#   every setting once, in an order rotated by k) so that the machine's drift hits all of them.
#   Per row and setting, from each run's repetition means:
#     se%   = standard error of the run's mean, in % of it (sd of repetition means / sqrt(R))
#     mdc%  = the within-run MDC of a two-sample comparison at alpha 0.05 and 80 % power,
#             (t_{0.975,df} + t_{0.8,df}) * sqrt(2) * se%   (df = 2R - 2)
#     eff   = mdc% * sqrt(seconds of the run): the MDC reached per second spent, normalised
#             (halving it takes 4x the time at any setting, so the smallest eff is the best use
#             of time); the median over the RUNS runs is printed
#     run%  = the relative sd of the per-run means across the RUNS runs of that setting: the
#             run-to-run component no within-run setting can remove
# Phase 2, sessions: a pilot of PILOT runs with --sessions 3 at the chosen split, then
#   `kstacklab plan` prints the variance components per level and the runs x sessions x
#   repetitions for a 2 % effect, with the costs measured here.
# Usage: bench/defaults-study.sh [KSTACKLAB] [RUNS] [SETTINGS...]
set -euo pipefail
K=${1:-build/src/kstacklab}
RUNS=${2:-3}
shift $(($# > 2 ? 2 : $#))
if [ $# -eq 0 ]; then
  set -- "--repetitions 15 --iterations 200000" "--repetitions 30 --iterations 100000" \
    "--repetitions 60 --iterations 50000" "--repetitions 150 --iterations 20000" \
    "--repetitions 10 --iterations 100000" "--repetitions 30 --iterations 20000"
fi
ROWS=(--bench 'syscall/getppid:*' --bench syscall/poll-30 --bench syscall/stat-deep)
CPU=$(python3 -c "import os; print(max(os.sched_getaffinity(0)))")  # the last CPU this process may use
PILOT=${PILOT:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "rows: ${ROWS[*]}; runs per setting: $RUNS; cpu $CPU"
n=$#
settings=("$@")
for k in $(seq 1 "$RUNS"); do
  for j in $(seq 0 $((n - 1))); do
    i=$(((j + k) % n))
    s=${settings[$i]}
    start=$(date +%s%N)
    # shellcheck disable=SC2086 # settings are words by design
    "$K" run "${ROWS[@]}" $s --cpu "$CPU" --no-store -o "$tmp/s${i}_r$k.json" >/dev/null 2>"$tmp/err" ||
      { cat "$tmp/err" >&2; exit 1; }
    echo "$i $k $((($(date +%s%N) - start) / 1000000))" >>"$tmp/times"  # ms
  done
done
python3 - "$tmp" "$RUNS" "${settings[@]}" <<'PY'
import json, math, statistics as st, sys
from statistics import NormalDist

def tq(p, df):  # Student t quantile, Cornish-Fisher expansion (error < 0.01 for df >= 4)
    z = NormalDist().inv_cdf(p)
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
tmp, runs, settings = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
secs = {}
for line in open(f"{tmp}/times"):
    i, k, t = line.split(); secs[(int(i), int(k))] = float(t) / 1000
rows = {}
for i, s in enumerate(settings):
    for k in range(1, runs + 1):
        d = json.load(open(f"{tmp}/s{i}_r{k}.json"))
        for b in d["benchmarks"]:
            name = b["name"] + (":" + b["variant"] if b.get("variant") else "")
            reps = [r["mean"] for r in b["repetitions"]]
            m = st.mean(reps); R = len(reps)
            se = st.stdev(reps) / math.sqrt(R) / m * 100
            df = 2 * R - 2
            mdc = (tq(0.975, df) + tq(0.8, df)) * math.sqrt(2) * se
            rows.setdefault(name, {}).setdefault(i, []).append((m, se, mdc, mdc * math.sqrt(secs[(i, k)])))
print(f"{'row':24} {'settings':38} {'s/run':>6} {'se%':>6} {'mdc%':>6} {'eff':>6} {'run%':>6}")
for name, per in rows.items():
    for i, s in enumerate(settings):
        v = per[i]
        t = st.median(secs[(i, k)] for k in range(1, runs + 1))
        runsd = st.stdev([x[0] for x in v]) / st.mean([x[0] for x in v]) * 100 if len(v) > 1 else float("nan")
        print(f"{name:24} {s:38} {t:6.1f} {st.median(x[1] for x in v):6.2f} "
              f"{st.median(x[2] for x in v):6.2f} {st.median(x[3] for x in v):6.2f} {runsd:6.2f}")
PY
if [ "$PILOT" -gt 0 ]; then
  # Phase 2: sessions, at the first settings string (the candidate default).
  files=()
  pstart=$(date +%s)
  for k in $(seq 1 "$PILOT"); do
    # shellcheck disable=SC2086
    "$K" run "${ROWS[@]}" ${settings[0]} --sessions 3 --cpu "$CPU" --label pilot --no-store \
      -o "$tmp/pilot_$k.json" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    files+=("$tmp/pilot_$k.json")
  done
  echo "pilot: $PILOT runs x 3 sessions x (${settings[0]}), $((($(date +%s) - pstart) / PILOT)) s per run"
  "$K" plan "${files[@]}" --target-effect 2 --metrics mean --cost-run 120s --cost-session 1s
fi
