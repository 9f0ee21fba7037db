#!/usr/bin/env bash
# End-to-end: file safety through every path component (nothing written through another user's
# link), default names that never collide, a sysctl locked machine-wide and every --ab value
# tried before measuring, EFBIG like ENOSPC, the store's side files, and the exit code and
# message of each refusal. The sticky-directory cases run as a second, unprivileged user made
# here (root only: exit 77 otherwise).
# Usage: bash file_safety_cli.sh KSTACKLAB_BINARY DATA_DIR
. "$(dirname "$0")/lib.bash"
k=$(cd "$(dirname "$KSTACKLAB")" && pwd)/$(basename "$KSTACKLAB")   # absolute: some cases cd
D=$DATA/compare
quick=(--bench syscall/getpid --iterations 200 --repetitions 3 --warmup 0)
export KSTACKLAB_LOCK_DIR=$TMP/locks
if [ "$(id -u)" -ne 0 ]; then
  echo "skip: the sticky-directory cases need root (to make a second user), as do the sysctl ones"
  exit 77
fi

# --- a second, unprivileged user, removed on every exit -------------------------------------
user=kstk29-$$
if ! useradd -M -N -d /nonexistent -s /usr/sbin/nologin "$user" 2>"$TMP/useradd.err"; then
  echo "skip: useradd failed: $(cat "$TMP/useradd.err")"
  exit 77
fi
trap 'userdel "$user" 2>/dev/null; rm -rf "$TMP"' EXIT
uid=$(id -u "$user")
gid=$(id -g "$user")
as_user() { setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$@"; }
chmod 755 "$TMP"
mkdir -m 1777 "$TMP/shared"
mkdir "$TMP/real"
echo precious >"$TMP/real/victim.json"
as_user ln -s "$TMP/real" "$TMP/shared/dirlink"
as_user ln -s "$TMP/real/victim.json" "$TMP/shared/hop"
ln -s "$TMP/shared/hop" "$TMP/rootlink.json"   # root's own link -> the user's link -> victim
untouched() {
  [ "$(cat "$TMP/real/victim.json")" = precious ] && pass "$1: the victim is untouched" ||
    fail "$1: the victim was written"
}

# 1. Another user's link as a *component*, and a chain through another user's link: refused
# before measuring (exit 2) for every writer: -o, --store, results export -o, plot -o,
# --save-records.
expect_exit 2 "run -o through another user's directory link" -- "$k" run "${quick[@]}" --no-store -o "$TMP/shared/dirlink/victim.json"
expect_stderr "made by uid $uid" "component link: names its owner"
expect_exit 2 "run -o through a chain ending in another user's link" -- "$k" run "${quick[@]}" --no-store -o "$TMP/rootlink.json"
expect_stderr "made by uid $uid" "chain: names the foreign link's owner"
expect_exit 2 "run --store through another user's directory link" -- "$k" run "${quick[@]}" --store "$TMP/shared/dirlink/s.db" -o "$TMP/ok.json"
[ ! -e "$TMP/ok.json" ] && pass "store link: refused before measuring" || fail "measured anyway"
[ ! -e "$TMP/real/s.db" ] && pass "no store made through the link" || fail "a store was made through the link"
"$k" results import "$D/base.json" >/dev/null 2>&1 || fail "results import"
expect_exit 2 "results export -o through the link" -- "$k" results export 1 -o "$TMP/shared/dirlink/victim.json"
expect_exit 2 "plot -o through the link" -- "$k" plot "$DATA/store-plot/baseline.json" -o "$TMP/shared/dirlink/victim.png"
expect_exit 2 "entropy --save-records through the link" -- "$k" entropy --kernel --samples 1000 --save-records "$TMP/shared/dirlink/victim.csv"
expect_stderr "^kstacklab: error: --save-records: .*made by uid $uid" "save-records: names the flag and the owner"
untouched "foreign links"
# A dangling link (ours) is created through; a loop is refused (ELOOP), not replaced.
ln -s "$TMP/made.json" "$TMP/dangling.json"
expect_exit 0 "run -o a dangling link of one's own" -- "$k" run "${quick[@]}" --no-store -o "$TMP/dangling.json"
[ -L "$TMP/dangling.json" ] && grep -q '"schema"' "$TMP/made.json" && pass "dangling: target created, link kept" ||
  fail "dangling link not followed"
ln -s loop-b "$TMP/loop-a"
ln -s loop-a "$TMP/loop-b"
expect_exit 2 "run -o a link loop" -- "$k" run "${quick[@]}" --no-store -o "$TMP/loop-a"
expect_stderr "too many levels of symbolic links" "loop: ELOOP named"
[ -L "$TMP/loop-a" ] && pass "loop: the link is kept" || fail "loop: the link was replaced"
# A user's own write-protected file is refused, as cp without -f refuses it; so is another
# user's file in a shared directory.
as_user sh -c "echo mine >'$TMP/shared/ro.json' && chmod 444 '$TMP/shared/ro.json'"
as_user "$k" run "${quick[@]}" --no-store -o "$TMP/shared/ro.json" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 2 ] && pass "own 0444 file refused (exit 2)" || fail "own 0444 file: exit $rc: $(cat "$TMP/err")"
expect_stderr "write-protected (mode 0444)" "0444: says why"
[ "$(cat "$TMP/shared/ro.json")" = mine ] && pass "0444 file kept" || fail "0444 file replaced"
expect_exit 2 "root: another user's file in the shared directory" -- "$k" run "${quick[@]}" --no-store -o "$TMP/shared/ro.json"
expect_stderr "belongs to uid $uid" "foreign file: names its owner"

# An immutable file (chattr +i, where the file system has it) is found before measuring.
echo keep >"$TMP/immutable.json"
if chattr +i "$TMP/immutable.json" 2>/dev/null; then
  expect_exit 2 "run -o an immutable file" -- "$k" run "${quick[@]}" --no-store -o "$TMP/immutable.json"
  expect_stderr "Operation not permitted" "immutable: says why"
  chattr -i "$TMP/immutable.json"
fi

# 2. Default names never collide: a run in a second whose name is taken takes NAME-2.json.
mkdir "$TMP/names"
for s in 0 1 2 3 4 5 6 7 8 9; do
  : >"$TMP/names/kstacklab-same-$(date -d "+$s sec" +%Y%m%d-%H%M%S).json"
done
(cd "$TMP/names" && for _ in 1 2 3; do "$k" run "${quick[@]}" --no-store --label same >/dev/null 2>&1 & done; wait)
made=$(find "$TMP/names" -name 'kstacklab-same-*-[0-9].json' -size +0 | wc -l)
[ "$made" -eq 3 ] && pass "three runs, three new files beside the taken names" || fail "$made new files: $(ls "$TMP/names")"
[ "$(find "$TMP/names" -name 'kstacklab-same-*' -size 0 | wc -l)" -eq 10 ] && pass "taken names untouched" ||
  fail "a taken default name was replaced"

# 3. One A/B per sysctl on the machine: a second run of the same knob with its own recovery file
# (another XDG_STATE_HOME) is refused with exit 2 and the first run's value survives it.
mkdir -p "$TMP/sys/kernel"
knob=$TMP/sys/kernel/stack_erasing
echo 1 >"$knob"
KSTACKLAB_SYSCTL_ROOT=$TMP/sys KSTACKLAB_RECOVERY_FILE=$TMP/state-a/recovery \
  "$k" run --iterations 10000000 --repetitions 100 --warmup 100 --no-store --bench syscall/getpid:raw \
  --ab sysctl:kernel.stack_erasing=0,1 -o "$TMP/a.json" >/dev/null 2>"$TMP/a.err" &
pid=$!
for _ in $(seq 1 600); do [ "$(cat "$knob")" = 0 ] && break; sleep 0.05; done
[ "$(cat "$knob")" = 0 ] || fail "the first A/B never set its value: $(cat "$TMP/a.err")"
KSTACKLAB_SYSCTL_ROOT=$TMP/sys KSTACKLAB_RECOVERY_FILE=$TMP/state-b/recovery expect_exit 2 \
  "a second A/B of the same sysctl, another recovery file" -- "$k" run "${quick[@]}" --no-store \
  --ab sysctl:kernel.stack_erasing=1,0 -o "$TMP/b.json"
expect_stderr "is being changed by another kstacklab run (pid $pid)" "names the run holding the knob"
[ ! -e "$TMP/b.json" ] && pass "second A/B measured nothing" || fail "second A/B measured"
kill -TERM "$pid"
wait "$pid"
[ "$(cat "$knob")" = 1 ] && pass "the original value restored by the first run" || fail "value $(cat "$knob") left"
# Every value is written and read back before measuring: one the kernel rejects is exit 2, with
# nothing measured and the original back (the real vm.stat_interval: "abc" is EINVAL).
if [ -w /proc/sys/vm/stat_interval ]; then
  orig=$(cat /proc/sys/vm/stat_interval)
  KSTACKLAB_RECOVERY_FILE=$TMP/state-c/recovery expect_exit 2 "an --ab value the kernel rejects" -- \
    "$k" run "${quick[@]}" --no-store --ab "sysctl:vm.stat_interval=$orig,abc" -o "$TMP/c.json"
  expect_stderr "does not take the value 'abc'" "names the rejected value"
  [ "$(cat /proc/sys/vm/stat_interval)" = "$orig" ] && pass "vm.stat_interval back to $orig" || fail "vm.stat_interval left changed"
  [ ! -e "$TMP/c.json" ] && pass "rejected value: nothing measured" || fail "rejected value: measured"
fi
# A recovery file that is not a regular file is refused before its lock is made beside it.
KSTACKLAB_SYSCTL_ROOT=$TMP/sys KSTACKLAB_RECOVERY_FILE=/dev/null expect_exit 2 "recovery file /dev/null" -- \
  "$k" run "${quick[@]}" --no-store --ab sysctl:kernel.stack_erasing=0,1 -o "$TMP/d.json"
[ ! -e /dev/null.lock ] && pass "no /dev/null.lock" || fail "/dev/null.lock created"

# 4. ulimit -f: EFBIG like ENOSPC (exit 1 with the message, no temporary file), not SIGXFSZ.
mkdir "$TMP/fsz"
(ulimit -f 4; exec "$k" run "${quick[@]}" --no-store -o "$TMP/fsz/out.json") >/dev/null 2>"$TMP/err"
rc=$?
[ "$rc" -eq 1 ] && pass "run under ulimit -f: exit 1" || fail "run under ulimit -f: exit $rc"
expect_stderr "File too large" "ulimit -f: says why"
(ulimit -f 4; exec "$k" results export 1 -o "$TMP/fsz/exported.json") >/dev/null 2>"$TMP/err"
rc=$?
[ "$rc" -eq 1 ] && pass "export under ulimit -f: exit 1" || fail "export under ulimit -f: exit $rc"
[ -z "$(ls -A "$TMP/fsz")" ] && pass "ulimit -f: nothing left behind" || fail "left: $(ls -A "$TMP/fsz")"

# 5. The store: -o onto its side files, a negative user_version, DIR/ and /proc as locations.
store=$XDG_DATA_HOME/kstacklab/results.db
for side in -wal -shm -journal; do
  expect_exit 2 "run -o the store's $side" -- "$k" run "${quick[@]}" --no-store -o "$store$side"
done
expect_stderr "file of the SQLite database" "side file: says whose"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("PRAGMA user_version=-1"); c.commit()' "$TMP/neg.db"
expect_exit 2 "a store with user_version -1" -- "$k" results list --store "$TMP/neg.db"
expect_stderr "schema version -1" "negative version named"
expect_exit 2 "run --store DIR/" -- "$k" run "${quick[@]}" --store "$TMP/sdir/" -o "$TMP/e.json"
[ ! -e "$TMP/e.json" ] && [ ! -e "$TMP/sdir" ] && pass "--store DIR/: refused before measuring, nothing made" ||
  fail "--store DIR/ measured or made a directory"
XDG_DATA_HOME=/proc expect_exit 2 "XDG_DATA_HOME=/proc" -- "$k" run "${quick[@]}" -o "$TMP/f.json"
[ ! -e "$TMP/f.json" ] && pass "XDG_DATA_HOME=/proc: refused before measuring" || fail "measured anyway"

# A store the user cannot write (its directory is root's: no -wal/-shm can be made) says that,
# not "cannot read the schema version".
mkdir -m 755 "$TMP/rostore"
"$k" results import "$D/base.json" --store "$TMP/rostore/s.db" >/dev/null 2>&1
chown "$uid" "$TMP/rostore/s.db"
as_user "$k" results import "$D/base.json" --store "$TMP/rostore/s.db" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 1 ] && pass "unwritable store: exit 1" || fail "unwritable store: exit $rc: $(cat "$TMP/err")"
expect_stderr "cannot be written: the file or its directory is read-only" "unwritable store: says so"

# 6. Exit codes and messages.
expect_exit 1 "--help into /dev/full" -- sh -c "\"$k\" --help >/dev/full"
expect_exit 1 "--version into /dev/full" -- sh -c "\"$k\" --version >/dev/full"
cp "$D/base.json" "$TMP/[]"
expect_exit 0 "a file named []" -- "$k" show "$TMP/[]"
cd "$TMP" || exit 1
expect_exit 0 "show [] (relative)" -- "$k" show "[]"
cd - >/dev/null || exit 1
touch "$TMP/afile"
expect_exit 2 "-o FILE/x.json" -- "$k" run "${quick[@]}" --no-store -o "$TMP/afile/x.json"
expect_stderr "is not a directory" "FILE/x.json: says it is not a directory"
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$TMP/sock"
expect_exit 2 "-o a UNIX socket" -- "$k" run "${quick[@]}" --no-store -o "$TMP/sock"
expect_stderr "is a socket" "socket: says why"
expect_exit 2 "--save-records a UNIX socket" -- "$k" entropy --kernel --samples 1000 --save-records "$TMP/sock"
if [ "$(nproc)" -ge 2 ]; then
  expect_exit 2 "entropy --kernel --cpu outside the affinity" -- taskset -c 0 "$k" entropy --kernel --cpu 1
  expect_stderr "CPU 1 is not available" "entropy --cpu: says which are"
fi
{ head -1 "$DATA/live/getpid-4096-debian-6.1.csv"; printf '0x0,%s,1,1,98,39,0x6988c63d,1\n' "$(head -c 1000000 /dev/zero | tr '\0' 7)"; } >"$TMP/long.csv"
expect_exit 2 "a 1 MB field in --records" -- "$k" entropy --kernel --records "$TMP/long.csv"
[ "$(wc -c <"$TMP/err")" -lt 1200 ] && pass "the error line is bounded" || fail "error of $(wc -c <"$TMP/err") bytes"
expect_stderr "'77777777.*\.\.\.' is not an unsigned number" "the field is quoted cut"
long=$(printf 'd%.0s' {1..3000})
expect_exit 2 "show of a 3000-byte name" -- "$k" show "$long"
[ "$(wc -c <"$TMP/err")" -lt 1200 ] && pass "a long error line is bounded" || fail "error of $(wc -c <"$TMP/err") bytes"
expect_stderr "bytes cut" "says how much was cut"
expect_exit 2 "a label with ':'" -- "$k" run "${quick[@]}" --no-store --label "a:raw" -o "$TMP/g.json"
expect_stderr "LABEL:VARIANT separator" "':' in a label: says why"
expect_exit 2 "a label with a zero-width space" -- "$k" run "${quick[@]}" --no-store --label $'a\u200bb' -o "$TMP/g.json"
expect_stderr "U+200B" "zero-width space named"
expect_exit 2 "a label with a right-to-left override" -- "$k" run "${quick[@]}" --no-store --label $'a\u202eb' -o "$TMP/g.json"
[ ! -e "$TMP/g.json" ] && pass "bad labels: nothing measured" || fail "a bad label was measured"

# 7. plot: SIGINT/SIGTERM/SIGHUP while gnuplot draws end gnuplot and leave no temp dir (a fake
# gnuplot on PATH that records its pid and waits).
mkdir "$TMP/fakebin" "$TMP/plottmp"
printf '#!/bin/sh\necho $$ >"%s"\nexec sleep 60\n' "$TMP/gnuplot.pid" >"$TMP/fakebin/gnuplot"
chmod +x "$TMP/fakebin/gnuplot"
for sig in INT TERM HUP; do
  rm -f "$TMP/gnuplot.pid"
  # (A background job of a script starts with SIGINT ignored: reset it, as a terminal has it.)
  PATH=$TMP/fakebin:$PATH TMPDIR=$TMP/plottmp python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$k" plot "$DATA/store-plot/baseline.json" -o "$TMP/sig.png" >/dev/null 2>"$TMP/err" &
  pid=$!
  for _ in $(seq 1 400); do [ -s "$TMP/gnuplot.pid" ] && break; sleep 0.05; done
  gp=$(cat "$TMP/gnuplot.pid" 2>/dev/null)
  [ -n "$gp" ] || fail "plot: the fake gnuplot never started"
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  want=$((128 + $(kill -l "$sig")))
  [ "$rc" -eq "$want" ] && pass "plot SIG$sig: exit $want" || fail "plot SIG$sig: exit $rc: $(cat "$TMP/err")"
  if [ -n "$gp" ] && ! kill -0 "$gp" 2>/dev/null; then pass "plot SIG$sig: gnuplot ended"; else
    fail "plot SIG$sig: gnuplot $gp left running"
    [ -n "$gp" ] && kill "$gp" 2>/dev/null
  fi
  [ -z "$(ls -A "$TMP/plottmp")" ] && pass "plot SIG$sig: no temp dir left" || fail "plot SIG$sig: left $(ls "$TMP/plottmp")"
  [ ! -e "$TMP/sig.png" ] && pass "plot SIG$sig: no image" || fail "plot SIG$sig: an image was written"
done

# 8. A run blocked writing a FIFO output after measuring is no longer pinned nor SCHED_FIFO.
mkfifo "$TMP/out.fifo"
"$k" run "${quick[@]}" --no-store --sched fifo --cpu 0 -o "$TMP/out.fifo" >/dev/null 2>"$TMP/err" &
pid=$!
for _ in $(seq 1 600); do
  [ "$(cat "/proc/$pid/wchan" 2>/dev/null)" = fifo_open ] && break   # measured, waiting for a reader
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
policy=$(chrt -p "$pid" 2>/dev/null | sed -n 's/.*scheduling policy: //p')
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null)
timeout 60 cat "$TMP/out.fifo" >/dev/null
wait "$pid"
[ "$policy" = SCHED_OTHER ] && pass "blocked on the FIFO: SCHED_OTHER again" || fail "blocked on the FIFO: policy '$policy'"
if [ "$(nproc)" -eq 1 ] || { [ -n "$cpus" ] && [ "$cpus" != 0 ]; }; then pass "blocked on the FIFO: unpinned ($cpus)"; else
  fail "blocked on the FIFO: still pinned to '$cpus'"
fi

# 9. compare: memory proportional to what it reads, and a bound on the repetitions it takes (four
# files at the 100 000 a run writes: measured 0.53 GB at the default metrics).
python3 - "$D/base.json" "$TMP/rep1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
b = d["benchmarks"][0]
reps = b["repetitions"]
b["repetitions"] = [dict(reps[i % len(reps)], session=0) for i in range(99000)]
d["benchmarks"] = [b]
d["label"] = "L1"
json.dump(d, open(sys.argv[2], "w"))
PY
for i in 2 3 4 5; do sed "s/\"label\": \"L1\"/\"label\": \"L$i\"/" "$TMP/rep1.json" >"$TMP/rep$i.json"; done
expect_exit 2 "compare of five 99 000-repetition files" -- "$k" compare "$TMP"/rep[1-5].json
expect_stderr "more than 400000 repetitions" "compare: names the bound"
if ! grep -q __asan_init "$k"; then
  rss=$(python3 - "$k" "$TMP"/rep[1-4].json <<'PY'
import resource, subprocess, sys
rc = subprocess.run([sys.argv[1], "compare", *sys.argv[2:]], stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
PY
)
  [ "${rss% *}" -eq 0 ] && [ "${rss#* }" -lt 800 ] && pass "compare of four: ${rss#* } MB peak (< 800)" ||
    fail "compare of four: exit/peak MB $rss"
fi
finish
