#!/usr/bin/env bash
# End-to-end: bad input and bad conditions (a full disk, the store as an output, hostile names) —
# each must end in one line naming the fix, the right exit code, and no lost measurement.
# Usage: bash input_errors_cli.sh KSTACKLAB_BINARY DATA_DIR
. "$(dirname "$0")/lib.bash"
k=$KSTACKLAB
D=$DATA/compare
quick=(--bench syscall/getpid --iterations 200 --repetitions 3 --warmup 0)

# A write failure after measuring keeps the measurement: the store has it, the error says so.
expect_exit 1 "run -o /dev/full" -- "$k" run "${quick[@]}" -o /dev/full
expect_stderr "the measurement is kept as store id 1" "full disk: the run is kept in the store"
expect_exit 0 "results export of the kept run" -- "$k" results export 1 -o "$TMP/kept.json"
expect_exit 0 "the exported run reads back" -- "$k" show "$TMP/kept.json"

# Output onto the results store (any SQLite file) is refused before anything is written.
store=$XDG_DATA_HOME/kstacklab/results.db
before=$(sha256sum "$store")
expect_exit 2 "results export onto the store" -- "$k" results export 1 -o "$store"
expect_stderr "is an SQLite database" "store as output refused"
expect_exit 2 "run -o the store" -- "$k" run "${quick[@]}" -o "$store"
[ "$(sha256sum "$store")" = "$before" ] && pass "store unchanged" || fail "the store was changed"

# A default file name too long for the file system is refused before measuring.
expect_exit 2 "label making the file name too long" -- "$k" run "${quick[@]}" --label "$(printf 'a%.0s' {1..300})"
expect_stderr "give a shorter one" "long name: says what to do"
[ "$(grep -c . "$TMP/err")" -eq 1 ] && pass "one line" || fail "long name: $(cat "$TMP/err")"

# A run whose repetitions would not fit one result file is refused before measuring.
expect_exit 2 "8.7 M repetitions" -- "$k" run --suite model --suite erase --repetitions 100000 --iterations 1 --no-store -o "$TMP/huge.json"
expect_stderr "more than the 100000 one result file holds" "run size: says the limit"

# Error messages stay on one line whatever the input holds.
expect_exit 2 "show a name with a newline" -- "$k" show $'no\nsuch'
[ "$(wc -l <"$TMP/err")" -eq 1 ] && pass "newline escaped" || fail "multi-line error: $(cat "$TMP/err")"
expect_stderr 'no\\x0asuch' "newline shown as \\x0a"

# JSON output of text that is not UTF-8 (a legal Linux file name) and of subnormal values.
bad=$TMP/$'bad\xff.json'
cp "$D/plus5.json" "$bad"
expect_exit 0 "compare --format json with a non-UTF-8 file name" -- "$k" compare "$D/base.json" "$bad" --format json
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/out" && pass "valid JSON" || fail "invalid JSON"
python3 - "$D/base.json" "$TMP/tiny.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for b in d["benchmarks"]:
    for r in b["repetitions"]:
        for m in r:
            if m not in ("iterations", "session"): r[m] *= 1e-312  # subnormal values
json.dump(d, open(sys.argv[2], "w"))
PY
expect_exit 0 "compare --format json with subnormal values" -- "$k" compare "$D/base.json" "$TMP/tiny.json" --format json

# Records files: bounded, and bad content is an input error (2), not a runtime failure.
expect_exit 2 "entropy --kernel --records /dev/zero" -- timeout 60 "$k" entropy --kernel --records /dev/zero
expect_stderr "larger than" "records: size cap"
{ head -1 "$DATA/live/getpid-4096-debian-6.1.csv"; echo '0x0,0xff539916c03f0000,2519127280,1,98,39,0x6988c63d,1'; } >"$TMP/zero.csv"
expect_exit 2 "records with a local below its stack" -- "$k" entropy --kernel --records "$TMP/zero.csv"
expect_stderr "^kstacklab: error: --records: record 0" "records: the bad record named"

# Commands that print must say when stdout cannot be written.
expect_exit 1 "attack prng-recover >/dev/full" -- sh -c "\"$k\" attack prng-recover --trials 1 >/dev/full"
expect_stderr "cannot write to standard output" "attack: stdout error"

# An unusable store location is refused before measuring, not warned about after.
touch "$TMP/afile"
XDG_DATA_HOME=$TMP/afile "$k" run "${quick[@]}" -o "$TMP/s.json" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 2 ] && [ ! -e "$TMP/s.json" ] && pass "store location checked first" || fail "store location: exit $rc: $(cat "$TMP/err")"
expect_stderr "is not a directory" "store location: says why"

# Flags that only apply with another one are refused without it, naming it (they were ignored).
expect_exit 2 "entropy --records without --kernel" -- "$k" entropy --records x.csv
expect_stderr "\-\-records requires \-\-kernel (see \`kstacklab entropy \-\-help\`)" "names --kernel"
expect_exit 2 "attack migration --rounds without --live" -- "$k" attack migration --rounds 5
expect_stderr "\-\-rounds requires \-\-live" "names --live"
expect_exit 2 "plot --alpha with --kind cdf" -- "$k" plot "$D/base.json" -o "$TMP/c.png" --alpha 2
expect_stderr "\-\-alpha applies to \-\-kind compare only" "plot: names the kind"
# A wrong subcommand word is named, with the ones there are.
expect_exit 2 "attack bogus" -- "$k" attack bogus
expect_stderr "'bogus' is not a subcommand here; \`attack\` needs a subcommand, one of: prng-recover" "names the word"
# A duration out of range says the range, in one line.
expect_exit 2 "--stall-threshold -1us" -- "$k" run "${quick[@]}" --stall-threshold -1us
expect_stderr "not a duration; give a number >= 0" "a negative duration"
expect_exit 2 "--stall-threshold just above 10s" -- "$k" run "${quick[@]}" --stall-threshold 10.000000001s
expect_stderr "out of range; give 1ns to 10s" "stall threshold range"
# An exact value is recorded exactly (CLI11's unit transform kept 6 digits: 123457000).
expect_exit 0 "--stall-threshold 123456789ns" -- "$k" run "${quick[@]}" --stall-threshold 123456789ns --no-store -o "$TMP/st.json"
python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["run"]["stall_threshold_ns"]; assert v == 123456789, v' "$TMP/st.json" \
  || fail "--stall-threshold 123456789ns not recorded exactly"

# SIGHUP (a dropped ssh session) ends a run like SIGINT/SIGTERM: partial file, exit 129.
# Short repetitions (2000 calls), and 3 s of CPU before the signal, so that some have completed
# even under ASan (a run stopped inside its first repetition rightly writes nothing).
"$k" run --bench syscall/getpid --iterations 2000 --repetitions 40000 --warmup 0 --no-store -o "$TMP/hup.json" >/dev/null 2>"$TMP/err" &
pid=$!
wait_cpu_time "$pid" 300 || fail "the run ended early"
kill -HUP "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 129 ] && pass "SIGHUP: exit 129" || fail "SIGHUP: exit $rc: $(cat "$TMP/err")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["partial"] is True' "$TMP/hup.json" &&
  pass "SIGHUP: partial file written" || fail "SIGHUP: no partial file"
# Another user's symbolic link in a sticky, world-writable directory (/tmp) is never written
# through, whatever fs.protected_symlinks says: refused before measuring (exit 2), the file it
# points at untouched; the same for the results store. (Needs root to make a link owned by
# another user.)
if [ "$(id -u)" -eq 0 ]; then
  mkdir -m 1777 "$TMP/shared"
  echo precious >"$TMP/victim"
  ln -s "$TMP/victim" "$TMP/shared/out.json" && chown -h 65534:65534 "$TMP/shared/out.json"
  ln -s "$TMP/victim" "$TMP/shared/s.db" && chown -h 65534:65534 "$TMP/shared/s.db"
  expect_exit 2 "run -o another user's link in a shared directory" -- "$k" run "${quick[@]}" --no-store -o "$TMP/shared/out.json"
  expect_stderr "made by uid 65534" "foreign link: names its owner"
  expect_exit 2 "run --store through another user's link" -- "$k" run "${quick[@]}" --store "$TMP/shared/s.db" -o "$TMP/ok.json"
  expect_exit 2 "results list --store through another user's link" -- "$k" results list --store "$TMP/shared/s.db"
  # A dangling one (pointing where no store is yet) is refused too, not taken for "no store yet".
  ln -s "$TMP/nothing-here.db" "$TMP/shared/dangling.db" && chown -h 65534:65534 "$TMP/shared/dangling.db"
  expect_exit 2 "results list --store through another user's dangling link" -- "$k" results list --store "$TMP/shared/dangling.db"
  expect_stderr "made by uid 65534" "dangling foreign link: names its owner"
  [ "$(cat "$TMP/victim")" = precious ] && pass "foreign links: the target is untouched" ||
    fail "foreign links: the target was written"
  [ ! -e "$TMP/ok.json" ] && pass "foreign store link: refused before measuring" || fail "measured anyway"
  ln -s "$TMP/victim" "$TMP/shared/mine.json"
  expect_exit 0 "run -o one's own link there is followed" -- "$k" run "${quick[@]}" --no-store -o "$TMP/shared/mine.json"
  [ -L "$TMP/shared/mine.json" ] && grep -q '"schema"' "$TMP/victim" && pass "own link: target replaced, link kept" ||
    fail "own link not followed"
else
  echo "skip: foreign-symlink checks need root"
fi
finish
