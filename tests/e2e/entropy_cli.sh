#!/usr/bin/env bash
# End-to-end test of `kstacklab entropy`: distinct counts, `off` = 0 bits, JSON fields, usage
# errors (exit 2, message on stderr).
# Usage: bash entropy_cli.sh KSTACKLAB_BINARY DATA_DIR
source "$(dirname "$0")/lib.bash"

expect_exit 0 "entropy percpu-prng --samples 20000" -- "$KSTACKLAB" entropy percpu-prng --samples 20000
if tr -d '|' <"$TMP/out" | awk '$1 == "percpu-prng" && $2 == 20000 && $3 == 64 { found = 1 } END { exit !found }'; then
  pass "percpu-prng: 64 distinct"
else
  fail "percpu-prng: no row with 20000 samples and 64 distinct: $(cat "$TMP/out")"
fi
expect_stdout "stack-entropy.sh" "footer names stack-entropy.sh"

expect_exit 0 "entropy off --samples 1000" -- "$KSTACKLAB" entropy off --samples 1000
if tr -d '|' <"$TMP/out" | awk '$1 == "off" && $3 == 1 && $4 == "0.0000" { found = 1 } END { exit !found }'; then
  pass "off: 1 distinct, 0 bits Shannon"
else
  fail "off: not 0 bits: $(cat "$TMP/out")"
fi

expect_exit 0 "entropy --format json" -- "$KSTACKLAB" entropy off siphash --samples 5000 --format json
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["samples"] == 5000, d
rows = {r["policy"]: r for r in d["policies"]}
assert list(rows) == ["off", "siphash"], rows
for r in rows.values():
    for k in ("samples", "distinct", "shannon_bits", "min_entropy_bits", "chi_square",
              "chi_square_p", "repeat_rate", "stack_entropy_sh_bits"):
        assert k in r, (k, r)
assert rows["off"]["shannon_bits"] == 0 and rows["off"]["distinct"] == 1
assert rows["siphash"]["distinct"] == 64 and rows["siphash"]["stack_entropy_sh_bits"] == 7
assert 5.9 < rows["siphash"]["shannon_bits"] <= 6
PY
then pass "json parses and has the fields"; else fail "json: $(head -c 400 "$TMP/out")"; fi

# Every design names its kernels, in the table and the JSON, and docs/models.md's version table
# ("Which kernels run which design") names every policy the binary has.
expect_exit 0 "entropy json of every policy" -- "$KSTACKLAB" entropy --samples 64 --format json
if python3 - "$TMP/out" "$DATA/../../docs/models.md" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
doc = open(sys.argv[2]).read()
section = doc.split("### Which kernels run which design", 1)[1].split("\n### ", 1)[0]
names = [r["policy"] for r in d["policies"]]
assert "per-task-x86" in names and "percpu-prng-irqsoff" in names, names
for r in d["policies"]:
    k = r["kernels"]
    assert k["mainline"] and k["stable"] and k["verified"], r
    assert "`%s`" % r["policy"] in section, "docs/models.md's version table lacks " + r["policy"]
v71 = next(r for r in d["policies"] if r["policy"] == "percpu-prng")["kernels"]["mainline"]
assert "v7.1" in v71, v71
PY
then pass "every policy names its kernels; the docs' table names every policy"
else fail "kernels: $(head -c 400 "$TMP/out")"; fi
expect_exit 0 "entropy table names the kernels" -- "$KSTACKLAB" entropy per-task-x86 --samples 64
expect_stdout "per-task-x86: mainline: never" "the table's footer says per-task-x86 is in no mainline release"

expect_exit 2 "unknown policy" -- "$KSTACKLAB" entropy no-such-policy
expect_stderr "unknown policy 'no-such-policy'" "unknown policy named"
expect_stderr "percpu-prng" "valid names listed"
expect_exit 2 "--samples 10" -- "$KSTACKLAB" entropy --samples 10
expect_stderr "--samples '10' is out of range: give a decimal integer from 64" "--samples range named"
expect_exit 2 "--samples 100000001" -- "$KSTACKLAB" entropy off --samples 100000001
# A count is decimal, as `run --iterations` takes it (0x40 is a bit pattern's notation).
expect_exit 2 "--samples 0x40" -- "$KSTACKLAB" entropy off --samples 0x40
expect_stderr "is not a plain decimal number" "--samples 0x40: refused as run refuses it"
expect_exit 2 "--format xml" -- "$KSTACKLAB" entropy off --format xml
expect_stderr "--format xml" "--format named"
expect_stderr "give grid or json" "--format: the two words named"
# grid is the word every command uses for the table; table, this command's word before, still works.
"$KSTACKLAB" entropy off --samples 64 >"$TMP/default.txt" 2>&1
"$KSTACKLAB" entropy off --samples 64 --format grid >"$TMP/grid.txt" 2>&1
"$KSTACKLAB" entropy off --samples 64 --format table >"$TMP/table.txt" 2>&1
if cmp -s "$TMP/default.txt" "$TMP/grid.txt" && cmp -s "$TMP/grid.txt" "$TMP/table.txt" &&
   grep -q "^| off" "$TMP/grid.txt"; then
  pass "--format grid is the default, and table the same"
else fail "--format grid / table / default differ: $(head -c 300 "$TMP/grid.txt")"; fi
for cmd in "attack migration --syscalls 1000" "results list"; do
  # shellcheck disable=SC2086
  expect_exit 0 "$cmd --format grid" -- "$KSTACKLAB" $cmd --format grid
done

finish
