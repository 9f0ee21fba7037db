# kstacklab campaign --report DIR --fastpath OUT writes OUT/plan.yaml and OUT/results.csv whole or
# not at all: either file existing refuses the export (exit 2, one line naming it) before
# anything is written, and a directory that cannot be made is refused the same way.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/campaign_fixture.bash"
K=$KSTACKLAB
lava_campaign "$TMP/c" 1 off on

expect_exit 0 "an export into a new directory" -- "$K" campaign --report "$TMP/c" --fastpath "$TMP/out1"
[ -s "$TMP/out1/plan.yaml" ] && [ -s "$TMP/out1/results.csv" ] && pass "both files written" || fail "export files: $(ls "$TMP/out1")"
ls -a "$TMP/out1" | grep -q '^\.' && [ "$(ls -A "$TMP/out1" | wc -l)" -eq 2 ] && pass "no temporary file left" || fail "left: $(ls -A "$TMP/out1")"

for existing in results.csv plan.yaml; do
  mkdir -p "$TMP/out-$existing" && echo keep >"$TMP/out-$existing/$existing"
  expect_exit 2 "an existing $existing" -- "$K" campaign --report "$TMP/c" --fastpath "$TMP/out-$existing"
  expect_stderr "$existing' exists" "an existing $existing: named"
  [ "$(grep -c . "$TMP/err")" -eq 1 ] || fail "an existing $existing: more than one line on stderr"
  [ "$(ls -A "$TMP/out-$existing")" = "$existing" ] && pass "an existing $existing: nothing else written" \
    || fail "an existing $existing: half an export: $(ls -A "$TMP/out-$existing")"
  [ "$(cat "$TMP/out-$existing/$existing")" = keep ] && pass "an existing $existing: kept" || fail "$existing replaced"
done
echo x >"$TMP/afile"
expect_exit 2 "an OUT that is a file" -- "$K" campaign --report "$TMP/c" --fastpath "$TMP/afile"
expect_stderr "not a directory" "an OUT that is a file: says so"
finish
