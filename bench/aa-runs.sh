#!/usr/bin/env bash
# A/A promise of `kstacklab compare` (docs/reading-tables.md): adjacent runs of one
# configuration under two labels must mark <= 5 % of cells, and a real difference must still be
# found.
#
# For each settings string (default: the run defaults, and "--repetitions 150 --iterations 20000"):
#   RUNS runs labelled a and RUNS labelled b, in pairs, each pair in a random order (a b, b a, ...;
#   adjacent, same CPU; a fixed a b a b order can phase-lock with periodic host noise,
#   docs/reading-tables.md "Order of runs");
#   compare a_* b_*      -> runs grouped by label, samples = per-run means: fraction flagged;
#   compare a_1 b_1      -> one run per side: must carry no verdict ('~'); also reports how many
#                           of those cells the old rule (repetitions as samples) would have marked;
#   compare a_* p_*      -> when the planted_seccomp helper is built (PLANTED=path, default
#                           build/tests/planted_seccomp next to KSTACKLAB): a third label p in every
#                           cycle runs under an allow-everything seccomp filter of PLANT_INSNS
#                           (default 1024) instructions, a real slowdown of every syscall; counts
#                           how many of its cells are marked across runs.
# Then the planted-change check: `run --suite model` (model/kstack and model/rng) in one file,
# compared within the file against `off` (variants measured interleaved) on mean and p50: the real
# differences of the designs must still be marked. `compare` gives one table per variant set here
# ({"tables": [...]} in JSON); the counts are over both. (p50 is shown beside the mean because on a
# loaded machine a descheduled repetition inflates its mean, not its median.)
# Usage: [MODEL_FLAGS=...] [PLANTED=...] [PLANT_INSNS=N] bench/aa-runs.sh [KSTACKLAB] [RUNS] [SETTINGS...]
#   e.g. bench/aa-runs.sh build/src/kstacklab 3 "" "--repetitions 150 --iterations 20000"
#   SETTINGS are `run` flags (may include --bench); MODEL_FLAGS are extra flags of the model run.
set -euo pipefail
K=${1:-build/src/kstacklab}
RUNS=${2:-3}
shift $(($# > 2 ? 2 : $#))
if [ $# -eq 0 ]; then set -- "" "--repetitions 150 --iterations 20000"; fi
CPU=$(python3 -c "import os; print(max(os.sched_getaffinity(0)))")  # the last CPU this process may use
METRICS=mean,p99,p99.9
PLANTED=${PLANTED:-$(dirname "$K")/../tests/planted_seccomp}
PLANT_INSNS=${PLANT_INSNS:-1024}
labels="a b"
if [ -x "$PLANTED" ] && "$PLANTED" 2 true 2>/dev/null; then
  labels="a b p"
else
  echo "no planted change across runs: $PLANTED is not built or cannot install a seccomp filter"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# count FILE: "flagged decided no_run_variance old_rule_flagged total other_flagged other" where
# the first five count the A/A cells only — a column of label b against the baseline column of
# label a with the same variant — and the last two the other cells (a:libc vs a:raw: a real
# difference inside one run, which should be flagged). Across labels `compare` makes each variant
# a row of its own (docs/reading-tables.md, "Columns"), so there every cell is an A/A cell and
# "other" counts cells only in the one-file model table.
count() {
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
# One table object, or {"tables": [...]} when the inputs hold several variant sets
# (docs/reading-tables.md, "JSON").
aa, other = [], []  # (cell, alpha of its table)
for t in d.get("tables", [d]):
    cols = {c["name"]: c for c in t["columns"]}
    for r in t["rows"]:
        base = cols[r["baseline"]["label"]]
        for v in r["variants"]:
            if v["change_pct"] is None:
                continue
            c = cols[v["label"]]
            same = c["variant"] == base["variant"] and c["label"] != base["label"]
            (aa if same else other).append((v, t["alpha"]))
flag = sum(v["verdict"] != "-" for v, _ in aa)
nrv = [(v, a) for v, a in aa if v.get("no_run_variance")]
# The old rule marked a cell when the within-run CI excluded 0 and p < alpha.
old = sum(1 for v, a in nrv if v["p_value"] is not None and v["p_value"] < a
          and v["ci_low_pct"] is not None and (v["ci_low_pct"] > 0 or v["ci_high_pct"] < 0))
print(flag, len(aa) - len(nrv), len(nrv), old, len(aa),
      sum(v["verdict"] != "-" for v, _ in other), len(other))
PY
}

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "runs per label: $RUNS, metrics: $METRICS, cpu $CPU"
for settings in "$@"; do
  name=${settings:-default}
  start=$(date +%s)
  for r in $(seq 1 "$RUNS"); do
    # shellcheck disable=SC2086 # labels and settings are words by design
    for l in $(shuf -e $labels); do
      plant=()
      [ "$l" = p ] && plant=("$PLANTED" "$PLANT_INSNS")
      "${plant[@]}" "$K" run $settings --label "$l" --cpu "$CPU" --no-store -o "$tmp/${l}_$r.json" >/dev/null 2>"$tmp/err" ||
        { cat "$tmp/err" >&2; exit 1; }
    done
  done
  secs=$(($(date +%s) - start))
  a=() b=()
  for r in $(seq 1 "$RUNS"); do a+=("$tmp/a_$r.json"); b+=("$tmp/b_$r.json"); done
  "$K" compare "${a[@]}" "${b[@]}" --metrics "$METRICS" --format json >"$tmp/grouped.json" 2>/dev/null
  "$K" compare "$tmp/a_1.json" "$tmp/b_1.json" --metrics "$METRICS" --format json >"$tmp/single.json" 2>/dev/null
  read -r gf gd _ _ gt gof got < <(count "$tmp/grouped.json")
  read -r sf _ sn so st sof sot < <(count "$tmp/single.json")
  echo "settings '$name' ($(($(wc -w <<<"$labels") * RUNS)) runs in ${secs} s):"
  echo "  $RUNS vs $RUNS runs, grouped by label: A/A $gf of $gd decided cells flagged ($gt A/A cells);" \
    "other cells (variants inside a label, e.g. libc vs raw): $gof of $got flagged"
  echo "  1 vs 1 run: A/A $sf flagged, $sn of $st marked '~' (no verdict); the old rule (repetitions" \
    "as samples) would have flagged $so of $st; other cells (inside run a): $sof of $sot flagged"
  if [ "$labels" = "a b p" ]; then
    p=()
    for r in $(seq 1 "$RUNS"); do p+=("$tmp/p_$r.json"); done
    "$K" compare "${a[@]}" "${p[@]}" --metrics "$METRICS" --format json >"$tmp/planted.json" 2>/dev/null
    read -r pf pd _ _ pt _ _ < <(count "$tmp/planted.json")
    echo "  planted across runs (p: seccomp filter of $PLANT_INSNS instructions), $RUNS vs $RUNS runs:" \
      "$pf of $pd decided cells flagged ($pt cells)"
    "$K" compare "${a[@]}" "${p[@]}" --metrics mean,p50 2>/dev/null | grep '^| ' | sed 's/^/    /'
  fi
done

# shellcheck disable=SC2086 # MODEL_FLAGS are words by design
"$K" run --suite model ${MODEL_FLAGS:-} --label model --cpu "$CPU" --no-store \
  -o "$tmp/model.json" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
"$K" compare "$tmp/model.json" --metrics mean,p50 --format json >"$tmp/model_cmp.json" 2>/dev/null
read -r _ _ _ _ _ mf md < <(count "$tmp/model_cmp.json")  # one file: every cell is "other"
base=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(",".join(sorted({t["columns"][0]["name"] for t in d.get("tables", [d])})))' "$tmp/model_cmp.json")
echo "planted: model suite rows vs '$base' within one run (mean and p50, ${MODEL_FLAGS:-defaults}): $mf of $md cells flagged"
python3 - "$tmp/model_cmp.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for t in d.get("tables", [d]):
    for r in t["rows"]:
        cells = [v for v in r["variants"] if v["change_pct"] is not None]
        text = ", ".join(f'{v["label"]} {v["change_pct"]:+.1f}% {v["verdict"]}' for v in cells)
        print(f'  {r["benchmark"]} {r["result_class"]} (baseline {r["baseline"]["value"]:.2f}): {text}')
PY
