#!/usr/bin/env bash
# End-to-end test of `kstacklab results list|show|export|import` and store ids as inputs.
# Usage: bash results_cli.sh KSTACKLAB_BINARY DATA_DIR
# Never touches the real store: XDG_DATA_HOME and HOME point into a temp dir.
. "$(dirname "$0")/lib.bash"
bin=$KSTACKLAB
data=$DATA
tmp=$TMP
export XDG_DATA_HOME="$tmp/xdg" HOME="$tmp/home"
store="$tmp/s/results.db"
base="$data/store-plot/baseline.json"
var="$data/store-plot/variant.json"

# 1. Listing a store that does not exist: exit 0, nothing on stdout, a note on stderr, no file.
"$bin" results list --store "$store" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || fail "list of a missing store: exit $rc"
[ -s "$tmp/out" ] && fail "list of a missing store printed: $(cat "$tmp/out")"
grep -q "no results store at $store yet" "$tmp/err" || fail "list of a missing store: no note ($(cat "$tmp/err"))"
[ -e "$store" ] && fail "list created the store"

# 2. Import two files: the new ids on stdout.
"$bin" results import --store "$store" "$base" "$var" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || fail "import: exit $rc ($(cat "$tmp/err"))"
grep -qx "imported $base as id 1" "$tmp/out" || fail "import: id 1 not reported ($(cat "$tmp/out"))"
grep -qx "imported $var as id 2" "$tmp/out" || fail "import: id 2 not reported ($(cat "$tmp/out"))"

# 3. list (table): one line per run with label, kernel, benchmarks.
"$bin" results list --store "$store" >"$tmp/out" 2>"$tmp/err"
# A grid (report/grid_table): rule, header, '=' rule, 2 rows, rule.
[ "$(wc -l <"$tmp/out")" -eq 6 ] || fail "list: expected a grid of header + 2 rows, got: $(cat "$tmp/out")"
grep -Eq '^\| +1 \| 2026-11-29 18:00 \| rndstack-off \| 6\.18\.0-fixture \| \? +\| 2: syscall/getpid, syscall/getppid \|$' "$tmp/out" \
  || fail "list: row 1 wrong: $(cat "$tmp/out")"
grep -q 'rndstack-on' "$tmp/out" || fail "list: row 2 missing"
# --store before the sub-subcommand works too.
"$bin" results --store "$store" list >"$tmp/out2" 2>/dev/null
cmp -s "$tmp/out" "$tmp/out2" || fail "results --store P list differs from results list --store P"

# 4. list --format json.
"$bin" results list --store "$store" --format json >"$tmp/list.json" || fail "list --format json failed"
python3 - "$tmp/list.json" <<'PY' || fail "list --format json: wrong content"
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r["id"] for r in rows] == [1, 2], rows
assert rows[0]["label"] == "rndstack-off" and rows[1]["label"] == "rndstack-on"
assert rows[0]["kernel"] == "6.18.0-fixture" and rows[0]["host"] is None
assert rows[0]["benchmarks"] == ["syscall/getpid", "syscall/getppid"]
assert rows[0]["partial"] is False
PY

# 5. show: header line and the summary table.
"$bin" results show --store "$store" 2 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || fail "show 2: exit $rc ($(cat "$tmp/err"))"
grep -q '^store id 2: rndstack-on, created 2026-11-29T18:05:00Z, kernel 6.18.0-fixture' "$tmp/out" \
  || fail "show 2: header wrong: $(head -1 "$tmp/out")"
grep -q '^| syscall/getppid |' "$tmp/out" || fail "show 2: no benchmark row: $(cat "$tmp/out")"
"$bin" results show --store "$store" id:2 >"$tmp/out2" 2>/dev/null || fail "show id:2 failed"
cmp -s "$tmp/out" "$tmp/out2" || fail "show id:2 differs from show 2"

# 6. export round-trips byte for byte (the fixtures are written by ResultToJson); - is stdout.
"$bin" results export --store "$store" 1 -o "$tmp/exported.json" 2>"$tmp/err" || fail "export 1 -o FILE failed: $(cat "$tmp/err")"
cmp -s "$base" "$tmp/exported.json" || fail "export 1 differs from the imported file"
"$bin" results export --store "$store" 2 -o - >"$tmp/stdout.json" 2>/dev/null || fail "export 2 -o - failed"
cmp -s "$var" "$tmp/stdout.json" || fail "export 2 -o - differs from the imported file"

# 7. Bad and missing ids exit 2 with the fix; nothing on stdout.
for bad in abc 0 -3 1.5; do
  "$bin" results show --store "$store" -- "$bad" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "show '$bad': exit $rc, want 2"
  grep -q "is not a store id" "$tmp/err" || fail "show '$bad': message: $(cat "$tmp/err")"
done
"$bin" results export --store "$store" 17 -o "$tmp/x.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "export 17: exit $rc, want 2"
grep -q "no result with id 17 in $store (see \`kstacklab results list\`)" "$tmp/err" || fail "export 17: message: $(cat "$tmp/err")"
[ -e "$tmp/x.json" ] && fail "export of a missing id left a file"
"$bin" results show --store "$tmp/none.db" 1 >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "show on a missing store: exit $rc, want 2"
grep -q "no results store at $tmp/none.db yet" "$tmp/err" || fail "show on a missing store: $(cat "$tmp/err")"

# 8. import validates everything first: one bad file imports nothing, exit 2.
printf '{"schema": "kstacklab-result/99", "benchmarks": []}\n' >"$tmp/bad.json"
"$bin" results import --store "$store" "$base" "$tmp/bad.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "import of a bad file: exit $rc, want 2"
grep -q "nothing was imported" "$tmp/err" || fail "import of a bad file: message: $(cat "$tmp/err")"
n=$("$bin" results list --store "$store" --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[ "$n" = 2 ] || fail "import of a bad file changed the store ($n runs)"

# 9. Unwritable store location: exit 1 naming the path and the remedy.
touch "$tmp/blocker"
"$bin" results import --store "$tmp/blocker/sub/results.db" "$base" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "import into an unwritable location: exit $rc, want 1"
grep -q "$tmp/blocker" "$tmp/err" && grep -q -- "--store PATH" "$tmp/err" \
  || fail "import into an unwritable location: message: $(cat "$tmp/err")"

# 10. The default store follows XDG_DATA_HOME.
"$bin" results import "$base" >"$tmp/out" 2>"$tmp/err" || fail "import into the default store: $(cat "$tmp/err")"
[ -f "$XDG_DATA_HOME/kstacklab/results.db" ] || fail "default store not under \$XDG_DATA_HOME/kstacklab/results.db"

# 11. Store ids work where files do (checked once `compare` with --store is built in).
if "$bin" compare --help 2>/dev/null | grep -q -- '--store'; then
  "$bin" compare --store "$store" 1 2 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" -eq 0 ] || fail "compare 1 2 from the store: exit $rc ($(cat "$tmp/err"))"
  grep -q 'rndstack-on' "$tmp/out" || fail "compare 1 2: no variant column: $(cat "$tmp/out")"
fi

# 12. Every command that reads store ids resolves the store one way (cli StorePath): the default
# store under XDG_DATA_HOME when --store is not given (id 1 there is the file imported in 10),
# and an empty --store refused at parse time.
"$bin" show 1 >/dev/null 2>"$tmp/err" || fail "show 1 from the default store: $(cat "$tmp/err")"
"$bin" compare 1 >/dev/null 2>"$tmp/err" || fail "compare 1 from the default store: $(cat "$tmp/err")"
"$bin" plan 1 --target-effect 5 >/dev/null 2>"$tmp/err" || fail "plan 1 from the default store: $(cat "$tmp/err")"
# plot: the id loads (the error is the later --baseline check, listing the stored column), so
# this needs no gnuplot.
"$bin" plot 1 --kind compare --baseline zzz -o "$tmp/p.svg" >/dev/null 2>"$tmp/err"
rc=$?
{ [ "$rc" -eq 2 ] && grep -q "error: --baseline: baseline 'zzz' does not name a column; the columns are: rndstack-off" "$tmp/err"; } \
  || fail "plot 1 from the default store: exit $rc ($(cat "$tmp/err"))"
for cmd in "show" "compare" "plan --target-effect 5" "plot -o $tmp/p.svg" "results list"; do
  # shellcheck disable=SC2086 # $cmd is a command and its flags
  "$bin" $cmd --store "" 1 >/dev/null 2>"$tmp/err"
  rc=$?
  { [ "$rc" -eq 2 ] && grep -q -- "--store: is empty; give a file path" "$tmp/err"; } \
    || fail "$cmd --store '': exit $rc, want 2 naming --store ($(cat "$tmp/err"))"
done

finish
