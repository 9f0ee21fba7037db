#!/usr/bin/env bash
# End-to-end regression tests: hostile input is refused before measuring, special
# files are written through, modes and the umask are kept, stdout errors are reported, a killed
# --sessions parent leaves no orphan and no file, reading commands never write the store.
# Usage: bash robust_cli.sh KSTACKLAB_BINARY DATA_DIR
source "$(dirname "$0")/lib.bash"
k=$KSTACKLAB
tiny="$DATA/compare/tiny.json"
quick=(run --bench syscall/getpid --iterations 200 --repetitions 1 --warmup 10 --no-store)

# Counts are plain decimal digits, in range.
for bad in -5 18446744073709551616 99999999999999999999 0x10 " 2000" "+3" ""; do
  expect_exit 2 "--iterations '$bad' refused" -- "$k" "${quick[@]}" --iterations "$bad" -o "$TMP/x.json"
done
expect_exit 2 "--warmup -1 refused" -- "$k" "${quick[@]}" --warmup=-1 -o "$TMP/x.json"
expect_stderr "--warmup" "--warmup error names the flag"
expect_exit 2 "--cpu -2 refused" -- "$k" "${quick[@]}" --cpu -2 -o "$TMP/x.json"
expect_exit 2 "--cpu 0x10 refused" -- "$k" "${quick[@]}" --cpu 0x10 -o "$TMP/x.json"
[ -e "$TMP/x.json" ] && fail "a refused run wrote a file"

# Labels must be UTF-8 without control characters; refused before measuring.
expect_exit 2 "non-UTF-8 label refused" -- "$k" "${quick[@]}" --label $'b\xe9se' -o "$TMP/x.json"
expect_stderr "not valid UTF-8" "label error says why"
expect_exit 2 "label with a newline refused" -- "$k" "${quick[@]}" --label $'a\nb' -o "$TMP/x.json"
expect_exit 2 "label with ESC refused" -- "$k" "${quick[@]}" --label $'\e[31mred' -o "$TMP/x.json"
expect_exit 2 "label non-UTF-8 with --sessions refused" -- "$k" "${quick[@]}" --sessions 2 --label $'b\xe9se' -o "$TMP/x.json"
grep -q "terminate called" "$TMP/err" && fail "raw 'terminate called' on stderr"
python3 - "$tiny" "$TMP/nl.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["label"] = "a\nb\u0000c\u001b[2J"; json.dump(d, open(sys.argv[2], "w"))
PY
expect_exit 2 "result file with control characters in the label refused" -- "$k" show "$TMP/nl.json"
expect_stderr "field 'label' contains the control character" "names the label field"

# Output path problems are found before measuring (no time is spent).
mkdir -p "$TMP/dir"
expect_exit 2 "-o DIR refused" -- "$k" "${quick[@]}" -o "$TMP/dir"
expect_exit 2 "-o DIR/ refused" -- "$k" "${quick[@]}" -o "$TMP/dir/"
expect_exit 2 "-o in a missing directory refused" -- "$k" "${quick[@]}" -o "$TMP/nodir/x.json"
expect_exit 2 "-o '' refused" -- "$k" "${quick[@]}" -o ""
expect_exit 2 "--store '' refused" -- "$k" run --bench syscall/getpid --iterations 200 --repetitions 1 --store "" -o "$TMP/x.json"
expect_exit 2 "--store X --no-store refused" -- "$k" "${quick[@]}" --store "$TMP/s.db" -o "$TMP/x.json"
expect_exit 2 "results export -o '' is a usage error" -- "$k" results export 1 -o "" --store "$TMP/none.db"
ls "$TMP"/x.json "$TMP"/.kstacklab-* "$TMP"/dir/* 2>/dev/null | grep -q . && fail "refused runs left files: $(ls -a "$TMP")"
# Empty values are refused, not read as 0 or as the default; the messages name the option.
expect_exit 2 "--alpha '' refused" -- "$k" compare "$tiny" --alpha ""
expect_stderr "^kstacklab: error: --alpha: is empty; give a value, or leave --alpha out$" "names the empty option"
expect_exit 2 "--label= refused" -- "$k" run --label= --no-store -o "$TMP/x.json"
expect_exit 2 "an empty file name refused" -- "$k" compare ""
expect_stderr 'an argument is empty' "says which argument"
expect_exit 2 "a number with junk" -- "$k" plan "$tiny" --target-effect 10x
expect_stderr "^kstacklab: error: --target-effect: '10x' is not a number" "names the option and the value"
expect_exit 2 "a stray option" -- "$k" list --colour json
expect_stderr "'--colour json': not a command or argument here" "the stray words in the order given"
cp "$tiny" "$TMP/in.svg"
expect_exit 2 "plot -o its own input" -- "$k" plot "$TMP/in.svg" -o "$TMP/in.svg"
cmp -s "$tiny" "$TMP/in.svg" || fail "plot -o its own input replaced it"

# Special files are written through, never replaced.
expect_exit 0 "run -o /dev/null" -- "$k" "${quick[@]}" -o /dev/null
[ -c /dev/null ] || fail "/dev/null is no longer a character device"
expect_exit 0 "show > /dev/null" -- "$k" show "$tiny"
mkfifo "$TMP/fifo"
cat "$TMP/fifo" >"$TMP/fifo.out" &
reader=$!
expect_exit 0 "run -o FIFO" -- "$k" "${quick[@]}" -o "$TMP/fifo"
wait "$reader"
[ -p "$TMP/fifo" ] || fail "the FIFO was replaced"
grep -q '"schema": "kstacklab-result/1"' "$TMP/fifo.out" || fail "nothing came through the FIFO"
# A FIFO nobody reads: the run waits in open() (the summary printed: up to 60 s on a loaded
# machine before the SIGTERM); the signal then ends it as a signal does (143),
# not as a runtime failure (1), and the error says the summary is what is left.
"$k" "${quick[@]}" -o "$TMP/fifo" >"$TMP/out" 2>"$TMP/err" &
waiter=$!
for _ in $(seq 600); do grep -q 'syscall/getpid' "$TMP/out" 2>/dev/null && break; sleep 0.1; done
sleep 0.3
kill -TERM "$waiter"
wait "$waiter"
rc=$?
[ "$rc" -eq 143 ] && pass "SIGTERM while -o FIFO waits for a reader: exit 143" ||
  fail "SIGTERM while -o FIFO waits: exit $rc ($(cat "$TMP/err"))"
grep -q 'the summary above is all that is left' "$TMP/err" && pass "FIFO wait: says what is left" ||
  fail "FIFO wait: stderr: $(cat "$TMP/err")"
ln -s /proc/self/fd/1 "$TMP/stdout-link"
"$k" "${quick[@]}" -o "$TMP/stdout-link" >"$TMP/via-link" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 0 ] || fail "run -o symlink to /proc/self/fd/1: exit $rc ($(head -c 300 "$TMP/err"))"
[ -L "$TMP/stdout-link" ] || fail "the symlink to /proc/self/fd/1 was replaced"
grep -q '"schema"' "$TMP/via-link" || fail "run -o /proc/self/fd/1 link: result not written through"
if [ -w /dev/full ]; then
  "$k" results import --store "$TMP/full.db" "$tiny" >/dev/null 2>&1
  expect_exit 1 "results export -o /dev/full is ENOSPC, exit 1" -- "$k" results export 1 -o /dev/full --store "$TMP/full.db"
  [ -c /dev/full ] || fail "/dev/full is no longer a character device"
  # Stdout errors are reported.
  for cmd in "show $tiny" "results list --store $TMP/full.db" "entropy --samples 1000" "compare $tiny" "env"; do
    # shellcheck disable=SC2086
    "$k" $cmd >/dev/full 2>"$TMP/err"
    rc=$?
    [ "$rc" -eq 1 ] || fail "'$cmd' > /dev/full: exit $rc, want 1"
  done
fi

# An existing file keeps its mode; a new one honours the umask.
echo old >"$TMP/keep.json"
chmod 600 "$TMP/keep.json"
expect_exit 0 "run -o over a 0600 file" -- "$k" "${quick[@]}" -o "$TMP/keep.json"
[ "$(stat -c %a "$TMP/keep.json")" = 600 ] || fail "mode widened to $(stat -c %a "$TMP/keep.json")"
(umask 077 && "$k" "${quick[@]}" -o "$TMP/new.json" >/dev/null 2>&1)
[ "$(stat -c %a "$TMP/new.json")" = 600 ] || fail "umask 077 ignored: $(stat -c %a "$TMP/new.json")"
echo target >"$TMP/real.json"
ln -s real.json "$TMP/link.json"
expect_exit 0 "run -o symlink to a regular file" -- "$k" "${quick[@]}" -o "$TMP/link.json"
[ -L "$TMP/link.json" ] || fail "the symlink to a regular file was replaced by a file"
grep -q '"schema"' "$TMP/real.json" || fail "the symlink's target was not written"

# Deep nesting and huge histogram layouts are refused (exit 2), never a crash.
python3 - "$tiny" "$TMP" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
deep = "[" * 100000 + "]" * 100000
text = json.dumps(d).replace('"params": {}', '"params": {"x": %s}' % deep, 1)
open(sys.argv[2] + "/deep.json", "w").write(text)
d2 = json.load(open(sys.argv[1]))
d2["benchmarks"][0]["histogram"]["sub_bucket_bits"] = 20
d2["benchmarks"][0]["histogram"]["max_value_bits"] = 63
json.dump(d2, open(sys.argv[2] + "/layout.json", "w"))
d3 = json.load(open(sys.argv[1])); d3["timer"]["overhead_ns"] = -1e308
json.dump(d3, open(sys.argv[2] + "/overhead.json", "w"))
PY
for cmd in show compare plot plan; do
  extra=()
  [ "$cmd" = plot ] && extra=(-o "$TMP/p.png")
  [ "$cmd" = plan ] && extra=(--target-effect 5)
  expect_exit 2 "$cmd of a 100000-deep file" -- "$k" "$cmd" "$TMP/deep.json" "${extra[@]}"
done
expect_stderr "nested more than" "depth error says why"
expect_exit 2 "20/63 histogram layout refused" -- "$k" show "$TMP/layout.json"
expect_stderr "sub_bucket_bits" "layout error names the field"
expect_exit 2 "overhead_ns -1e308 refused" -- "$k" show "$TMP/overhead.json"
expect_stderr "overhead_ns" "overhead error names the field"
# Import is all or nothing: a good file and a deep one import nothing.
expect_exit 2 "import good + deep" -- "$k" results import --store "$TMP/an.db" "$tiny" "$TMP/deep.json"
[ -e "$TMP/an.db" ] && fail "a refused import created the store"

# Reading commands never write the store.
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('create table t(x)'); c.commit()" "$TMP/foreign.db"
before=$(md5sum <"$TMP/foreign.db")
expect_exit 2 "results list of a foreign SQLite file (the wrong file: a usage error)" -- "$k" results list --store "$TMP/foreign.db"
[ "$before" = "$(md5sum <"$TMP/foreign.db")" ] || fail "listing changed the foreign database"
[ -e "$TMP/foreign.db-wal" ] && fail "listing switched the foreign database to WAL"
: >"$TMP/zero.db"
expect_exit 0 "results list of a 0-byte file" -- "$k" results list --store "$TMP/zero.db"
# The wrong kind of store is refused before measuring (exit 2, no result file), not after.
quick=(--bench 'syscall/getpid:raw' --repetitions 2 --iterations 100)
echo "not a database" >"$TMP/text.db"
expect_exit 2 "run --store on a text file" -- "$k" run "${quick[@]}" -o "$TMP/t.json" --store "$TMP/text.db"
expect_stderr "not a SQLite database" "the text store is named as such"
[ -e "$TMP/t.json" ] && fail "run measured before refusing a text store"
expect_exit 2 "run --store on a foreign database" -- "$k" run "${quick[@]}" -o "$TMP/t.json" --store "$TMP/foreign.db"
expect_exit 2 "run -o the same new file as --store" -- "$k" run "${quick[@]}" -o "$TMP/same.db" --store "$TMP/same.db"
expect_stderr "is also the results store" "-o = --store is named"
# A reader that goes away (`run | head`) must not kill the run before its file and store row:
# stdout fails with EPIPE (exit 1) after both are done.
"$k" run "${quick[@]}" -o "$TMP/pipe.json" --store "$TMP/pipe.db" 2>"$TMP/err" | true
rc=${PIPESTATUS[0]}
[ "$rc" -eq 1 ] || fail "run | true: exit $rc, want 1 (EPIPE reported, not death by SIGPIPE)"
"$k" show "$TMP/pipe.json" >/dev/null 2>&1 || fail "run | true: the result file was not written"
"$k" results show 1 --store "$TMP/pipe.db" >/dev/null 2>&1 || fail "run | true: the run was not recorded"
"$k" run "${quick[@]}" -o - --store "$TMP/pipe.db" 2>"$TMP/err" | true
grep -q "kept as store id 2" "$TMP/err" || fail "run -o - | true: the measurement was not kept: $(cat "$TMP/err")"
# -o /proc/self/fd/N (or /dev/stdout) onto a regular file writes through the caller's
# descriptor, at its offset, as `>&N` would; it never replaces the file the descriptor is open on.
echo BEFORE >"$TMP/fd.txt"
inode=$(stat -c %i "$TMP/fd.txt")
"$k" run "${quick[@]}" --no-store -o /proc/self/fd/3 3>>"$TMP/fd.txt" >/dev/null 2>&1 || fail "run -o /proc/self/fd/3 failed"
[ "$(stat -c %i "$TMP/fd.txt")" = "$inode" ] || fail "-o /proc/self/fd/3 replaced the file"
python3 -c 'import json,sys; t=open(sys.argv[1]).read(); assert t.startswith("BEFORE\n"); json.loads(t[7:])' "$TMP/fd.txt" \
  || fail "-o /proc/self/fd/3: not the old line followed by the result"
{ echo BEFORE; "$k" run "${quick[@]}" --no-store -o /dev/stdout 2>/dev/null; echo AFTER; } >"$TMP/fd2.txt"
[ "$(head -1 "$TMP/fd2.txt")" = BEFORE ] && [ "$(tail -1 "$TMP/fd2.txt")" = AFTER ] \
  || fail "-o /dev/stdout replaced the caller's output file: $(head -c 200 "$TMP/fd2.txt")"
# A FIFO as the store would block every reader's open forever.
mkfifo "$TMP/fifo.db"
expect_exit 2 "results list --store FIFO" -- timeout 10 "$k" results list --store "$TMP/fifo.db"
expect_stderr "not a regular file" "the FIFO store is named as such"
[ -s "$TMP/zero.db" ] && fail "listing created tables in a 0-byte file"
"$k" results import --store "$TMP/ro/r.db" "$tiny" >/dev/null 2>&1 || fail "import into a new store"
chmod 444 "$TMP/ro/r.db"; chmod 555 "$TMP/ro"
if command -v setpriv >/dev/null && [ "$(id -u)" -eq 0 ]; then
  chmod 755 "$TMP"
  setpriv --reuid=65534 --regid=65534 --clear-groups "$k" results list --store "$TMP/ro/r.db" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  [ "$rc" -eq 0 ] || fail "another user cannot list a read-only store: exit $rc ($(cat "$TMP/err"))"
  grep -q "^| *1 |" "$TMP/out" || fail "read-only store listed without its row: $(cat "$TMP/out")"
else
  expect_exit 0 "results list of a read-only store" -- "$k" results list --store "$TMP/ro/r.db"
fi
chmod 755 "$TMP/ro"

# Unknown words are named; both store-id parsers agree.
expect_exit 2 "kstacklab bogus" -- "$k" bogus
expect_stderr "bogus" "unknown command named"
expect_exit 2 "results frob" -- "$k" results frob
expect_stderr "frob" "unknown results subcommand named"
"$k" show 0 --store "$TMP/ro/r.db" 2>"$TMP/e1"
"$k" results show 0 --store "$TMP/ro/r.db" 2>"$TMP/e2"
grep -q "is not a store id" "$TMP/e1" && cmp -s "$TMP/e1" "$TMP/e2" || fail "show 0 and results show 0 differ: $(cat "$TMP/e1" "$TMP/e2")"

# A stop request is honoured during warm-up.
"$k" run --bench syscall/getpid --iterations 1 --repetitions 1 --warmup 1000000000000 --no-store -o "$TMP/w.json" >/dev/null 2>&1 &
pid=$!
wait_cpu_time "$pid" 20 || fail "the run ended before its warm-up"  # 0.2 s of CPU: in warm-up
kill -TERM "$pid"
timeout 60 tail --pid="$pid" -f /dev/null || fail "SIGTERM during warm-up was ignored for 60 s"
wait "$pid"
rc=$?
[ "$rc" -eq 143 ] || fail "SIGTERM during warm-up: exit $rc, want 143"

# A killed --sessions parent leaves no orphan and no file.
"$k" run --bench syscall/getpid --iterations 1000 --repetitions 1 --warmup 1000000000000 --sessions 2 --no-store -o "$TMP/s.json" >/dev/null 2>&1 &
parent=$!
# Kill the parent only once a session child is running (else the check below proves nothing).
for _ in $(seq 1 1200); do
  pgrep -f -- "--warmup 1000000000000 .*--internal-session" >/dev/null && break
  sleep 0.05
done
pgrep -f -- "--warmup 1000000000000 .*--internal-session" >/dev/null || fail "no session child started"
kill -KILL "$parent"
wait "$parent" 2>/dev/null
# PR_SET_PDEATHSIG kills the children at once; allow them up to 10 s to be reaped.
for _ in $(seq 1 200); do
  pgrep -f -- "--warmup 1000000000000 .*--internal-session" >/dev/null || break
  sleep 0.05
done
if pgrep -f -- "--warmup 1000000000000 .*--internal-session" >/dev/null; then fail "orphan session child still running"; fi
ls -a "$TMP" /tmp 2>/dev/null | grep -q "kstacklab-session\|s.json.session" && fail "session file left behind"
finish
