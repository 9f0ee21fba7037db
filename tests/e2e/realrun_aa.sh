#!/usr/bin/env bash
# `compare` judged on real runs of this machine, the way it is used across kernels (DESIGN.md
# "Statistics"; the simulated-data tests of the same rule are in tests/stats_test.cc):
#   - adjacent A/A runs stay quiet: label a vs label b, same command, few cells marked;
#   - a planted change is found: label p runs under an allow-everything seccomp filter of
#     PLANT_INSNS instructions (tests/tools/planted_seccomp.cc), a real slowdown of every syscall
#     entry (+13 to +47 % on getpid, getppid and an invalid syscall on the AMD EPYC guest with
#     1024), which must be (R) on mean and p50 of every syscall;
#   - one run per side carries no verdict ('~'), even for the planted change: this check is the
#     one that catches the old rule (repetitions as samples across runs);
#   - within one run (columns compared on repetitions) the same: A/A through `run --ab` on a
#     sysctl that does nothing, and a planted model design (section at the end).
# A trial is RUNS cycles of (a, b, p), each cycle in a new random order, on one CPU: 3 syscalls x
# 4 metrics = 12 cells per comparison. The A/A bound (<= AA_MAX of 12 marked) cannot prove the
# 5 % promise in one trial (bench/aa-runs.sh measures it, docs/benchmarks.md), and the 12 cells
# are strongly correlated: it is a coarse guard against a rule that marks noise (with
# COMPARE_FLAGS="--alpha 0.4" the test failed in 2 of 4 invocations). A failed trial is repeated
# once with fresh runs and only two failed trials fail the test, so a rare noisy trial on a noisy
# VM does not turn CI red (30 shuffled trials here: none above 2 of 12).
# Needs: a kernel that lets this user install seccomp filters (else exit 77, skipped).
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
H=${KSTACKLAB_PLANTED_SECCOMP:-}
RUNS=${RUNS:-4}
PLANT_INSNS=${PLANT_INSNS:-1024}
AA_MAX=${AA_MAX:-2}
# Extra `compare` flags, to check the test's teeth by hand: COMPARE_FLAGS="--alpha 0.4" (a rule
# that marks 40 % of noise) fails it about every other time.
read -r -a COMPARE_FLAGS <<<"${COMPARE_FLAGS:-}"
if [ -z "$H" ] || [ ! -x "$H" ]; then
  echo "SKIP: KSTACKLAB_PLANTED_SECCOMP does not name the planted_seccomp helper (ctest sets it)"
  exit 77
fi
if ! "$H" 2 true 2>"$TMP/err"; then
  echo "SKIP: $(cat "$TMP/err")"
  exit 77
fi
CPU=$(python3 -c "import os; print(max(os.sched_getaffinity(0)))")  # the last CPU this process may use
BENCH=(--bench 'syscall/getpid:raw' --bench 'syscall/getppid:raw' --bench 'syscall/invalid:raw')
SMALL=(--repetitions 20 --iterations 10000 --no-store --cpu "$CPU")
METRICS=mean,p50,p99,p99.9

# judge FILE KIND: prints "marked decided total wrong_sign" over the cells of a compare --format
# json table; KIND=planted also prints the mean/p50 cells that are not (R).
judge() {
  python3 - "$1" "$2" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
cells = [(r, v) for r in t["rows"] for v in r["variants"] if v["change_pct"] is not None]
marked = [(r, v) for r, v in cells if v["verdict"] != "-"]
decided = [(r, v) for r, v in cells if not v.get("no_run_variance")]
missed = [f'{r["benchmark"]} {r["metric"]} {v["change_pct"]:+.1f}% {v["verdict"]}'
          for r, v in cells if r["metric"] in ("mean", "p50") and v["verdict"] != "R"]
wrong = sum(1 for _, v in marked if (v["verdict"] == "R") != (v["change_pct"] > 0))
print(len(marked), len(decided), len(cells), wrong)
if sys.argv[2] == "planted":
    print("; ".join(missed) if missed else "none")
PY
}

# trial N: measures RUNS x (a, b, p) into $TMP/tN and judges them; returns 0 when the trial passes.
trial() {
  local d=$TMP/t$1 i ok=0
  mkdir -p "$d"
  local l order=""
  for ((i = 1; i <= RUNS; i++)); do
    # A new random order in every cycle: a fixed a b p order phase-locks with periodic host noise
    # (docs/reading-tables.md "Order of runs").
    for l in $(shuf -e a b p); do
      order+=$l
      if [ "$l" = p ]; then
        "$H" "$PLANT_INSNS" "$K" run "${BENCH[@]}" "${SMALL[@]}" --label p -o "$d/p_$i.json"
      else
        "$K" run "${BENCH[@]}" "${SMALL[@]}" --label "$l" -o "$d/${l}_$i.json"
      fi >/dev/null 2>"$d/err" || { fail "trial $1: run of $l failed: $(head -c 300 "$d/err")"; return 1; }
    done
    order+=" "
  done
  "$K" compare "$d"/a_*.json "$d"/b_*.json --metrics "$METRICS" "${COMPARE_FLAGS[@]}" --format json >"$d/aa.json" 2>/dev/null ||
    { fail "trial $1: compare a b failed"; return 1; }
  "$K" compare "$d"/a_*.json "$d"/p_*.json --metrics "$METRICS" "${COMPARE_FLAGS[@]}" --format json >"$d/ap.json" 2>/dev/null ||
    { fail "trial $1: compare a p failed"; return 1; }
  "$K" compare "$d/a_1.json" "$d/p_1.json" --metrics "$METRICS" "${COMPARE_FLAGS[@]}" --format json >"$d/ap1.json" 2>/dev/null ||
    { fail "trial $1: compare a_1 p_1 failed"; return 1; }
  local aa_marked aa_decided aa_total _w p_marked p_decided p_total p_wrong missed s_marked s_decided
  read -r aa_marked aa_decided aa_total _w < <(judge "$d/aa.json" aa)
  { read -r p_marked p_decided p_total p_wrong; read -r missed; } < <(judge "$d/ap.json" planted)
  read -r s_marked s_decided _ _ < <(judge "$d/ap1.json" aa)
  echo "trial $1 ($RUNS runs per label in the order ${order% } on CPU $CPU; filter of $PLANT_INSNS instructions):" \
    "A/A $aa_marked of $aa_total cells marked ($aa_decided decided);" \
    "planted $p_marked of $p_total marked ($p_decided decided), mean/p50 not (R): $missed;" \
    "one run per side: $s_marked marked, $s_decided decided"
  "$K" compare "$d"/a_*.json "$d"/p_*.json --metrics mean,p50 2>/dev/null | grep '^| ' | sed 's/^/  planted: /'
  [ "$aa_decided" -eq "$aa_total" ] || { echo "  A/A: cells without a verdict rule: $((aa_total - aa_decided))"; ok=1; }
  [ "$aa_marked" -le "$AA_MAX" ] || { echo "  A/A: $aa_marked cells marked, more than $AA_MAX"; ok=1; }
  [ "$missed" = none ] || { echo "  planted change missed"; ok=1; }
  [ "$p_wrong" -eq 0 ] || { echo "  planted: $p_wrong cells marked with the wrong sign"; ok=1; }
  # One run per side has no run-to-run variance: '~' on every cell, no verdict.
  if [ "$s_marked" -ne 0 ] || [ "$s_decided" -ne 0 ]; then
    fail "trial $1: one run per side got verdicts ($s_marked marked, $s_decided decided)"
  fi
  return $ok
}

if trial 1; then
  pass "A/A quiet and planted change found (first trial)"
elif trial 2; then
  pass "A/A quiet and planted change found (second trial; the first was noisy, printed above)"
else
  fail "two trials in a row: A/A marked more than $AA_MAX of 12 cells or the planted change was missed"
fi

# Within one run (columns compared on repetitions): `run --ab` on a sysctl that does nothing — a
# file under a fake sysctl root (KSTACKLAB_SYSCTL_ROOT) — measures the same calls under two
# "values" in ABBA order: A/A through the --ab path. The planted change within a run: the
# model/kstack(handler:empty) rows off and legacy-x86 (an rdtsc and a rotate per call, +200 % and
# more on a ~5-10 ns baseline), which must be (R) on the mean.
mkdir -p "$TMP/sysroot/kernel"
echo 0 >"$TMP/sysroot/kernel/kstacklab_aa_noop"
within_trial() {
  local d=$TMP/w$1 ok=0 aa_marked aa_decided aa_total _w
  mkdir -p "$d"
  KSTACKLAB_SYSCTL_ROOT=$TMP/sysroot KSTACKLAB_RECOVERY_FILE=$d/recovery KSTACKLAB_LOCK_DIR=$d/locks \
    "$K" run "${BENCH[@]}" "${SMALL[@]}" --ab sysctl:kernel.kstacklab_aa_noop=0,1 -o "$d/ab.json" \
    >/dev/null 2>"$d/err" || { fail "within trial $1: run --ab failed: $(head -c 300 "$d/err")"; return 1; }
  "$K" run --bench 'model/kstack(handler:empty):off' --bench 'model/kstack(handler:empty):legacy-x86' \
    "${SMALL[@]}" -o "$d/model.json" >/dev/null 2>"$d/err" ||
    { fail "within trial $1: model run failed: $(head -c 300 "$d/err")"; return 1; }
  "$K" compare "$d/ab.json" --metrics "$METRICS" "${COMPARE_FLAGS[@]}" --format json >"$d/aa.json" 2>/dev/null ||
    { fail "within trial $1: compare failed"; return 1; }
  read -r aa_marked aa_decided aa_total _w < <(judge "$d/aa.json" aa)
  local verdict change
  read -r verdict change < <("$K" compare "$d/model.json" --metrics mean "${COMPARE_FLAGS[@]}" --format json 2>/dev/null |
    python3 -c 'import json,sys; v=json.load(sys.stdin)["rows"][0]["variants"][0]; print(v["verdict"], "%+.1f" % v["change_pct"])')
  echo "within trial $1: A/A (--ab on a no-op sysctl) $aa_marked of $aa_total cells marked ($aa_decided decided);" \
    "planted: legacy-x86 vs off, handler:empty mean ${change}% ${verdict}"
  [ "$aa_decided" -eq "$aa_total" ] || { echo "  A/A: cells without a verdict rule: $((aa_total - aa_decided))"; ok=1; }
  [ "$aa_marked" -le "$AA_MAX" ] || { echo "  A/A: $aa_marked cells marked, more than $AA_MAX"; ok=1; }
  [ "$verdict" = R ] || { echo "  planted change within a run missed"; ok=1; }
  return $ok
}
if within_trial 1; then
  pass "within one run: A/A quiet and planted change found (first trial)"
elif within_trial 2; then
  pass "within one run: A/A quiet and planted change found (second trial; the first was noisy, printed above)"
else
  fail "within one run, two trials in a row: A/A marked more than $AA_MAX of 12 cells or the planted change was missed"
fi
finish
