# micromm / pkeys / macro end to end: rows, unit, caps, skip notes (never a crash).
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB

expect_exit 0 "list shows the new suites" -- "$K" list
expect_stdout "micromm/fork(h:0)" "list: micromm/fork h:0"
expect_stdout "pkeys/update(n:256):batched" "list: pkeys/update batched"
expect_stdout "macro/kernbench" "list: macro/kernbench"

# One repetition of the fork rows (1 GiB mappings, a few forks): unit us, capped calls.
expect_exit 0 "run micromm/fork" -- "$K" run --no-store --repetitions 1 --bench 'micromm/fork' -o "$TMP/mm.json"
expect_stdout "micromm/fork h:0 (us)" "summary names the row and its unit"
python3 - "$TMP/mm.json" <<'PY' && pass "fork rows: unit us, 3 calls" || fail "fork rows"
import json, sys
d = json.load(open(sys.argv[1]))
rows = {(b["name"], b["params"]["h"]) for b in d["benchmarks"]}
assert ("micromm/fork", 0) in rows, rows
for b in d["benchmarks"]:
    assert b["unit"] == "us", b["unit"]
    for r in b["repetitions"]:
        assert r["iterations"] == 3, r["iterations"]
        assert r["mean"] > 0
PY
if grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; then
  expect_stderr "h:1): skipped" "h:1 skipped without THP"
else
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert any(b["params"]["h"]==1 for b in d["benchmarks"])' "$TMP/mm.json" \
    && pass "h:1 measured where THP is on" || fail "h:1 missing"
fi

# --param size: a small mapping, recorded in every row's params and labelled by show.
expect_exit 0 "run micromm --param size=64M" -- "$K" run --no-store --repetitions 1 --suite micromm \
  --param size=64M -o "$TMP/mm64.json"
python3 - "$TMP/mm64.json" <<'PY' && pass "size_mib 64 in every row's params" || fail "params of the 64 MiB run"
import json, sys
d = json.load(open(sys.argv[1]))
names = {b["name"] for b in d["benchmarks"]}
assert names == {"micromm/fork", "micromm/munmap"}, names
for b in d["benchmarks"]:
    assert b["params"]["size_mib"] == 64, b["params"]
assert d["run"]["params"] == ["size=64M"], d["run"]
PY
expect_exit 0 "show the 64 MiB run" -- "$K" show "$TMP/mm64.json"
expect_stdout "micromm/munmap h:0, size_mib:64 (us)" "show labels the size"
expect_exit 2 "size not a multiple of 2 MiB" -- "$K" run --no-store --suite micromm --param size=3M -o "$TMP/x.json"
expect_stderr "multiple of 2 MiB.*e.g. 256M, 1G or 268435456" "gives the accepted form"
expect_exit 2 "fractional size" -- "$K" run --no-store --suite micromm --param size=1.5G -o "$TMP/x.json"
expect_exit 2 "unknown key" -- "$K" run --no-store --suite micromm --param colour=blue -o "$TMP/x.json"
expect_stderr "unknown key 'colour' (keys: size)" "names the known keys"
expect_exit 2 "size without a micromm row" -- "$K" run --no-store --suite syscall --param size=64M -o "$TMP/x.json"
expect_stderr "--param size=64M: no selected benchmark takes 'size'; select the suite that does: micromm" "names the suite that takes it"
expect_exit 2 "more than memory allows" -- "$K" run --no-store --suite micromm --param size=16777216G -o "$TMP/x.json"
expect_stderr "give at most" "gives the largest size"
[ ! -e "$TMP/x.json" ] && pass "no file after a refused --param" || fail "file written after a refused --param"

# pkeys: measured with PKU, skipped with the reason without it; exit 0 either way.
expect_exit 0 "run --suite pkeys" -- "$K" run --no-store --repetitions 2 --iterations 1000 --warmup 10 --suite pkeys -o "$TMP/pk.json"
if grep -qw ospke /proc/cpuinfo; then
  expect_stdout "pkeys/update n:256 \[batched\]" "pkeys rows measured"
  # The lists' layout: the variants are the columns, unbatched the baseline, n the row.
  expect_exit 0 "compare the pkeys run" -- "$K" compare "$TMP/pk.json" --bench pkeys/update --metrics mean
  expect_stdout "| update: n:256 (ns) " "compare: one row per n, named as the lists do"
  expect_stdout "unbatched .*batched" "compare: the variants are the columns"
  expect_stdout "\(baseline\)" "compare: a baseline column"
else
  expect_stderr "pkeys/wrpkru: skipped: .*PKU" "pkeys skipped with the reason"
fi

# macro is opt-in: not in the default run.
expect_exit 0 "default run" -- "$K" run --no-store --repetitions 1 --iterations 100 --warmup 10 -o "$TMP/d.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not any(b["name"].startswith(("macro/","micromm/","pkeys/")) for b in d["benchmarks"])' "$TMP/d.json" \
  && pass "default run holds no macro/micromm/pkeys row" || fail "default run has opt-in rows"
finish
