#!/usr/bin/env bash
# End-to-end test of `kstacklab compare` and `kstacklab plan` on the fixtures in
# tests/data/compare/ (see make_fixtures.py): exit codes, stdout, stderr.
# Usage: bash compare_cli.sh KSTACKLAB_BINARY DATA_DIR
. "$(dirname "$0")/lib.bash"
BIN=$(cd "$(dirname "$KSTACKLAB")" && pwd)/$(basename "$KSTACKLAB")
D=$(cd "$DATA/compare" && pwd)

# expect CODE STDERR_PATTERN -- args...: runs, checks the exit code and that stderr matches.
expect() {
  local code=$1 pattern=$2
  shift 3
  "$BIN" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  [ "$rc" -eq "$code" ] || fail "kstacklab $* exited $rc, expected $code (stderr: $(head -c 300 "$TMP/err"))"
  if [ -n "$pattern" ]; then
    grep -qE -- "$pattern" "$TMP/err" || fail "kstacklab $*: stderr lacks /$pattern/: $(head -c 300 "$TMP/err")"
  fi
}

cd "$D" || exit 1

# A planted +5 % / -5 % pair on low-noise data, one run per file: the change on every row but no
# verdict (no run-to-run variance), marked '~' with the footnote saying what to do.
expect 0 "" -- compare base.json plus5.json minus5.json
rows=$(grep -c '^| ' "$TMP/out")
[ "$rows" -eq 14 ] || fail "expected 14 table lines (2 header + 12 rows), got $rows"
grep -E '^\|' "$TMP/out" | tail -n +3 | grep -vq ' [0-9.]*% ~ *| *-[0-9.]*% ~ |' &&
  fail "a row of the single-run +5/-5 table is not 'x% ~ | -y% ~': $(cat "$TMP/out")"
grep -E '^\|' "$TMP/out" | grep -q '(R)\|(I)' && fail "single-run files across runs got a verdict"
grep -q 'measure >= 3 runs per configuration' "$TMP/out" || fail "no footnote for '~'"
# Three runs per label: grouped into two columns of per-run means, the planted +5 % is (R).
expect 0 "" -- compare kbase_1.json kbase_2.json kbase_3.json kplus5_1.json kplus5_2.json kplus5_3.json --metrics mean
grep -q '(R) [0-9.]*%' "$TMP/out" || fail "runs grouped by label: planted +5 % not (R): $(cat "$TMP/out")"
grep -q "column 'kbase' groups 3 runs" "$TMP/out" || fail "no note on the grouped runs"
expect 0 "" -- compare kbase_1.json kbase_2.json kbase_3.json kplus5_1.json kplus5_2.json kplus5_3.json --metrics mean --verbose
grep -q 'Variance components .*run [0-9.]*%, repetition [0-9.]*%' "$TMP/out" || fail "--verbose lacks variance components"
grep -q 'Lower is better' "$TMP/out" || fail "footer does not state the direction"
grep -q 'Method: ci' "$TMP/out" || fail "footer does not state the method"
grep -q 'Samples per side' "$TMP/out" || fail "footer does not state the samples per side"
# Two files with one label (the default label is the kernel release) and variants: the files
# merge into one configuration, which the user is told. (A second run: a copy with another time.)
sed 's/"created": "[^"]*"/"created": "2026-01-02T03:04:05Z"/' variants.json >"$TMP/variants2.json"
expect 0 "all 2 inputs have the label 'model', so they are runs of one configuration" -- compare variants.json "$TMP/variants2.json" --metrics mean
# Two runs of one benchmark with one label: one column, and the warning names the shared label,
# not "only one configuration given ... name a second file" (a second file was given).
sed 's/"created": "[^"]*"/"created": "2026-01-02T03:04:05Z"/' kbase_1.json >"$TMP/kbase_again.json"
expect 0 "all 2 inputs have the label 'kbase'" -- compare kbase_1.json "$TMP/kbase_again.json" --metrics mean
grep -q 'only one configuration given' "$TMP/err" && fail "same label: the wrong warning too: $(cat "$TMP/err")"
# One run given twice (or a file and its store id) would count as two runs that agree exactly.
expect 2 "'variants.json' and 'variants.json' are the same run" -- compare variants.json variants.json --metrics mean
expect 2 "are the same run" -- compare kbase_1.json kbase_2.json kbase_1.json kplus5_1.json kplus5_2.json kplus5_3.json
expect 2 "are the same run" -- plan kbase_1.json kbase_1.json kbase_2.json --target-effect 2
# A run without benchmarks is named as such, not blamed on --metrics.
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["benchmarks"]=[]; json.dump(d,open(sys.argv[2],"w"))' kbase_1.json "$TMP/empty.json"
expect 2 "the input holds no benchmark" -- compare "$TMP/empty.json"
# A target no design of <= 10000 runs reaches is said to be unreachable, not printed as a plan.
expect 0 "" -- plan kbase_1.json kbase_2.json kbase_3.json --target-effect 0.001 --metrics mean
grep -q '> 10000 runs' "$TMP/out" || fail "plan: unreachable target not said: $(cat "$TMP/out")"
[ -s "$TMP/err" ] && fail "unexpected stderr: $(cat "$TMP/err")"

# Formats.
expect 0 "" -- compare kbase_1.json kbase_2.json kbase_3.json kplus5_1.json kplus5_2.json kplus5_3.json --format json
python3 -c "import json,sys; d=json.load(open('$TMP/out')); v=d['rows'][0]['variants'][0]; assert v['verdict']=='R', d; assert d['alpha']==0.05; assert v['sample_unit']=='runs'; assert v['variance_components']['run'] is not None" ||
  fail "json output is not valid or lacks verdict R / variance components"
expect 0 "" -- compare base.json plus5.json --format csv --metrics mean
[ "$(head -1 "$TMP/out" | cut -d, -f1-3)" = "benchmark,params,metric" ] || fail "csv header"
expect 0 "" -- compare base.json minus5.json --format markdown
grep -q '^|---|---|---:|---:|$' "$TMP/out" || fail "markdown alignment row"

# --bench keeps only the matching benchmarks; a glob matching nothing is a usage error.
expect 0 "" -- compare base.json plus5.json --bench 'syscall/getp*id' --metrics mean
grep -q 'syscall/getppid' "$TMP/out" || fail "--bench dropped a matching benchmark"
grep -q 'micromm/fork' "$TMP/out" && fail "--bench kept a benchmark it does not match"
expect 2 "--bench matches no benchmark" -- compare base.json plus5.json --bench 'nosuch/*'

# A file mixing suites (the model rows' variants with base.json's rows, which have none): one
# table per variant set, each compared against its own baseline; no 'not compared' rows.
python3 - "$TMP/mixed.json" <<'PY' || fail "could not build the mixed fixture"
import json, sys
v = json.load(open("variants.json"))
v["benchmarks"] += json.load(open("base.json"))["benchmarks"]
json.dump(v, open(sys.argv[1], "w"))
PY
expect 0 "" -- compare "$TMP/mixed.json" --metrics mean
[ "$(grep -c '(baseline)' "$TMP/out")" -eq 2 ] || fail "mixed suites: expected two tables: $(cat "$TMP/out")"
grep -q 'not compared' "$TMP/out" && fail "mixed suites: rows left uncompared: $(cat "$TMP/out")"
expect 0 "" -- compare "$TMP/mixed.json" --metrics mean --format json
python3 -c "import json,sys; d=json.load(open('$TMP/out')); assert len(d['tables'])==2; assert d['tables'][0]['columns'][0]['name']=='off'" ||
  fail "mixed suites json: not two tables with 'off' first"
expect 0 "" -- compare "$TMP/mixed.json" --metrics mean --baseline off
[ "$(grep -c '(baseline)' "$TMP/out")" -eq 1 ] || fail "--baseline: expected one table"
grep -q 'not compared' "$TMP/out" || fail "--baseline off: the rows without 'off' are not named"
# plot --kind compare draws one table: the first set's, naming the others and how to plot them.
if command -v gnuplot >/dev/null; then
  expect 0 "not plotted: syscall/getpid.* plot them with --baseline " -- plot "$TMP/mixed.json" --kind compare --metrics mean -o "$TMP/mixed.svg"
  grep -q 'model/kstack' "$TMP/mixed.svg" || fail "plot of the mixed file lacks the first table's rows"
fi

# One file holding variants: baseline 'off'.
expect 0 "" -- compare variants.json
grep -q 'variants of one run' "$TMP/out" && grep -q '(baseline)' "$TMP/out" || fail "variants: no off baseline"
head -2 "$TMP/out" | tail -1 | grep -q '|  *off |' || fail "variants: off is not the first column"
expect 0 "" -- compare variants.json --baseline model:siphash
head -2 "$TMP/out" | tail -1 | grep -q '|  *siphash |' || fail "--baseline model:siphash not honoured"

# Methods, tests, corrections.
expect 0 "" -- compare variants.json --method fastpath --test mwu --correct holm --alpha 0.01 --min-effect 1
grep -q 'fastpath' "$TMP/out" || fail "fastpath footer"
grep -q '(R)' "$TMP/out" || fail "fastpath/mwu/holm lost the planted variant differences"

# Stdin.
"$BIN" compare base.json - <plus5.json >"$TMP/out" 2>"$TMP/err" || fail "stdin input failed"
grep -q 'stdin\|plus5' "$TMP/out" || fail "stdin column"

# Too few, sessions, missing benchmarks, drift.
expect 0 "" -- compare base.json tiny.json sessions.json partial_set.json --metrics mean
grep -q 'fewer than 3' "$TMP/out" || fail "too-few footnote"
grep -q '% \*' "$TMP/out" || fail "too-few marker"
grep -q 'session means' "$TMP/out" || fail "hierarchical note"
grep -q 'absent from' "$TMP/out" || fail "missing-benchmark note"
expect 0 "^kstacklab: warning: drift in 1 row of drift.json \(\+4.6 % over the run\)$" -- compare base.json drift.json --metrics mean
grep -qE "^kstacklab: warning: drift: .*not comparable.*interleaved.*compare --verbose" "$TMP/err" ||
  fail "drift: the explanation is not there once: $(cat "$TMP/err")"
[ "$(grep -c 'not comparable' "$TMP/err")" -eq 1 ] || fail "drift explained more than once"
expect 0 "drift.json: syscall/getpid drifts over its 10 repetitions: mean \+4.6 % \(residual SD" -- compare base.json drift.json --metrics mean --verbose

# Drift in many rows of several files (an A/A of 3 + 3 runs, tests/data/compare/make_fixtures.py):
# one line per file with the range of the changes, the explanation once — not a paragraph per
# row burying the table. A time cannot fall by more than 100 %: aa_b1's tails fall to a tenth
# (-90.6 %), which a straight line through them puts at -211.7 % of their mean.
aa=(aa_a1.json aa_a2.json aa_a3.json aa_b1.json aa_b2.json aa_b3.json)
expect 0 "" -- compare "${aa[@]}"
[ "$(wc -l <"$TMP/err")" -eq 4 ] || fail "A/A drift: expected 4 warning lines, got: $(cat "$TMP/err")"
[ "$(wc -c <"$TMP/err")" -lt 1000 ] || fail "A/A drift: $(wc -c <"$TMP/err") bytes of warnings"
grep -qx 'kstacklab: warning: drift in 3 rows of aa_a1.json (+36.0 to +37.1 % over the run)' "$TMP/err" ||
  fail "A/A drift: no summary line for aa_a1.json: $(cat "$TMP/err")"
grep -qx 'kstacklab: warning: drift in 5 rows of aa_b1.json (-90.6 to -42.5 % over the run)' "$TMP/err" ||
  fail "A/A drift: no summary line for aa_b1.json: $(cat "$TMP/err")"
grep -qx 'kstacklab: warning: drift in 1 row of aa_b2.json (+37.2 to +38.5 % over the run)' "$TMP/err" ||
  fail "A/A drift: no summary line for aa_b2.json: $(cat "$TMP/err")"
grep -qE -- '-[0-9]{3}\.[0-9] %|-1[0-9][0-9]\.' "$TMP/err" && fail "A/A drift: a fall beyond -100 %"
cp "$TMP/out" "$TMP/aa_table"
expect 0 "" -- compare "${aa[@]}" --verbose
[ "$(grep -c 'drifts over its 12 repetitions' "$TMP/err")" -eq 9 ] ||
  fail "A/A drift --verbose: not one line per drifting row: $(cat "$TMP/err")"
expect 0 "" -- compare "${aa[@]}" --format json
python3 - "$TMP/out" <<'PY' || fail "A/A drift: the JSON output lacks the drift details"
import json, sys
d = json.load(open(sys.argv[1]))
drift = [x for t in d.get("tables", [d]) for x in t.get("drift", [])]
assert len(drift) == 9, len(drift)
assert {x["source"] for x in drift} == {"aa_a1.json", "aa_b1.json", "aa_b2.json"}, drift
assert all(m["change_pct"] > -100 for x in drift for m in x["metrics"]), drift
PY

# Plan.
expect 0 "" -- plan base.json --target-effect 1
grep -q 'Needed' "$TMP/out" || fail "plan table"
grep -q 'assumes it is 0' "$TMP/out" || fail "plan of one run does not say the run variance is unknown"
expect 0 "" -- plan kbase_1.json kbase_2.json kbase_3.json --target-effect 2 --cost-run 5min --cost-session 2s
grep -qE '\| +3 x 1 x 10 \|' "$TMP/out" || fail "plan: pilot of 3 runs x 1 session x 10 repetitions not shown: $(cat "$TMP/out")"
grep -q 'assumes it is 0' "$TMP/out" && fail "plan of 3 runs still says the run variance is unknown"
expect 2 "--cost-run 'soon' is not a duration" -- plan base.json --target-effect 1 --cost-run soon
expect 2 "^kstacklab: error: --target-effect: target effect 0 is not a finite percentage > 0" -- plan base.json --target-effect 0
expect 2 "^kstacklab: error: --alpha: alpha 0.5 is out of range" -- plan base.json --target-effect 1 --alpha 0.5
expect 2 "^kstacklab: error: --power: power 1 is out of range; give a value in \[0.5, 1\)" -- plan base.json --target-effect 1 --power 1
expect 2 "^kstacklab: error: --power: power 0.01 is out of range; give a value in \[0.5, 1\)" -- plan base.json --target-effect 1 --power 0.01
expect 2 "^kstacklab: error: --metrics: unknown metric 'p95'.*p99" -- plan base.json --target-effect 1 --metrics p95
expect 2 "" -- plan base.json

# Bad input: exit 2 and a message naming the problem.
expect 2 "truncated.json: not valid JSON \(at byte [0-9]+\)" -- compare base.json truncated.json
expect 2 "unknown schema version 'kstacklab-result/9'" -- compare base.json bad_schema.json
expect 2 "nope.json" -- compare base.json nope.json
expect 2 "benchmark 'syscall/getpid' has unit 'ns'.*'us'" -- compare base.json units_us.json
sed 's/"p99": /"p99": "NaN", "was": /' base.json >"$TMP/nan.json"
expect 2 "field '.*repetitions\[0\]\.p99' must be a finite number" -- compare base.json "$TMP/nan.json"
expect 2 "inf_metric.json: not valid JSON.*number overflow" -- compare base.json inf_metric.json
expect 2 "^kstacklab: error: --format: output format 'html' is unknown; use one of: grid, markdown, csv, json" -- compare base.json --format html
expect 2 "^kstacklab: error: --metrics: unknown metric 'p95'.*p99" -- compare base.json --metrics p95
expect 2 "--test 'ttest' is unknown; use one of: welch, mwu" -- compare base.json --test ttest
expect 2 "--method 'overlap' is unknown; use one of: ci, fastpath" -- compare base.json --method overlap
expect 2 "--correct 'bonferroni' is unknown; use one of: none, holm" -- compare base.json --correct bonferroni
expect 2 "^kstacklab: error: --alpha: alpha 2 is out of range; give a value in \(0, 0.5\)" -- compare base.json --alpha 2
expect 2 "^kstacklab: error: --min-effect: minimum effect -1 is not a finite percentage >= 0" -- compare base.json --min-effect -1
expect 2 "^kstacklab: error: --alpha 'nan' is not a number; give e.g. 0.05" -- compare base.json --alpha nan
expect 2 "^kstacklab: error: --baseline: baseline 'zzz' does not name a column; the columns are: base, plus5" -- compare base.json plus5.json --baseline zzz

finish
