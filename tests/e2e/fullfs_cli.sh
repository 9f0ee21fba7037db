#!/usr/bin/env bash
# End-to-end: a real file system that fills up (not /dev/full, which fails the first write and
# has no directory). Every file kstacklab replaces is written to a temporary file and renamed over
# the old one; when the disk fills in the middle, the old file must stay as it was, no temporary
# file may be left behind, the error must name the cause, and the measurement must survive in
# whichever of the two places (result file, results store) still had room.
# Needs a private mount namespace for a small tmpfs (root, `unshare -m`); exits 77 (skipped)
# without one.
# Usage: bash fullfs_cli.sh KSTACKLAB_BINARY DATA_DIR
. "$(dirname "$0")/mount_namespace.bash"
. "$(dirname "$0")/lib.bash"
k=$KSTACKLAB
# The tmpfs mounts live in $TMP: unmount them before lib.bash's cleanup removes it.
trap 'umount "$TMP/full" "$TMP/fulldb" 2>/dev/null; rm -rf "$TMP"' EXIT
quick=(--bench syscall/getpid --iterations 200 --repetitions 2 --warmup 0)

# mount_small DIR KIB: a tmpfs of KIB KiB at DIR, seen only by this test's mount namespace.
mount_small() {
  mkdir -p "$1" && mount -t tmpfs -o "size=${2}k,mode=0755" tmpfs "$1" || {
    echo "skip: cannot mount a tmpfs at $1"
    exit 77
  }
}
# fill DIR: takes the remaining space of DIR's file system (a filler file; ENOSPC expected).
fill() { dd if=/dev/zero of="$1/filler" bs=4k 2>/dev/null; sync; }
# no_temp DIR WHAT: no temporary file of kstacklab is left in DIR.
no_temp() {
  local left
  left=$(find "$1" -maxdepth 1 -name '.kstacklab-tmp-*' | head -3)
  [ -z "$left" ] && pass "$2: no temporary file left" || fail "$2: left behind: $left"
}

# integrity DB: SQLite's own consistency check of the store (python3's sqlite3, not ours).
integrity() {
  python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA integrity_check").fetchone()[0])' "$1" 2>&1
}

# A result file to protect, and a store holding one earlier run, on a normal disk first.
"$k" run "${quick[@]}" --label old -o "$TMP/old.json" --store "$TMP/seed.db" >/dev/null 2>&1 ||
  fail "seed run"
size=$(stat -c %s "$TMP/old.json")

# 1. The result file's file system is full; the store (elsewhere) has room.
mount_small "$TMP/full" 512
cp "$TMP/old.json" "$TMP/full/res.json"
before=$(sha256sum <"$TMP/full/res.json")
fill "$TMP/full"
expect_exit 1 "run -o onto a full file system" -- "$k" run "${quick[@]}" -o "$TMP/full/res.json" --store "$TMP/s1.db"
expect_stderr "No space left on device" "full file system: the cause is named"
expect_stderr "the measurement is kept as store id 1" "full file system: the store keeps the run"
[ "$(grep -c '^kstacklab: error' "$TMP/err")" -eq 1 ] && pass "one error line" ||
  fail "error lines: $(cat "$TMP/err")"
[ "$(sha256sum <"$TMP/full/res.json")" = "$before" ] && pass "the old result file is unchanged" ||
  fail "the old result file was changed"
no_temp "$TMP/full" "run -o"
expect_exit 0 "the kept run is exported once there is room" -- \
  "$k" results export 1 -o "$TMP/kept.json" --store "$TMP/s1.db"
expect_exit 0 "the exported run reads back" -- "$k" show "$TMP/kept.json"

# results export onto the full file system: same promise.
expect_exit 1 "results export onto a full file system" -- \
  "$k" results export 1 -o "$TMP/full/res.json" --store "$TMP/s1.db"
expect_stderr "No space left on device" "export: the cause is named"
[ "$(sha256sum <"$TMP/full/res.json")" = "$before" ] && pass "export: the old file is unchanged" ||
  fail "export: the old file was changed"
no_temp "$TMP/full" "results export"

# A new file that does not fit: no file, no half file.
expect_exit 1 "run -o a new file on a full file system" -- "$k" run "${quick[@]}" -o "$TMP/full/new.json" --store "$TMP/s1.db"
[ ! -e "$TMP/full/new.json" ] && pass "no half-written new file" || fail "a partial new.json exists"
no_temp "$TMP/full" "new file"

# With a little room, but less than the file needs: the write starts, then fails in the middle.
# The room is half the file's pages, rounded down to a page (tmpfs counts 4 KiB pages): a new file
# of the same run varies by a few hundred bytes (its histogram), which must not make it fit.
rm -f "$TMP/full/filler"
file_kib=$(((size + 4095) / 4096 * 4))
want_room=$((file_kib / 2 / 4 * 4))
[ "$want_room" -ge 4 ] || want_room=4
avail=$(df -k --output=avail "$TMP/full" | tail -1 | tr -d ' ')
dd if=/dev/zero of="$TMP/full/filler" bs=1k count=$((avail - want_room)) 2>/dev/null
room=$(df -k --output=avail "$TMP/full" | tail -1 | tr -d ' ')
if [ "$room" -gt 0 ] && [ "$((room * 1024))" -lt "$size" ]; then
  expect_exit 1 "run -o with room for part of the file" -- "$k" run "${quick[@]}" -o "$TMP/full/res.json" --store "$TMP/s1.db"
  expect_stderr "No space left on device" "part room: the cause is named"
  [ "$(sha256sum <"$TMP/full/res.json")" = "$before" ] && pass "part room: the old file is unchanged" ||
    fail "part room: the old file was changed"
  no_temp "$TMP/full" "part room"
else
  fail "could not leave partial room (avail ${room} KiB, file ${size} B)"
fi

# 2. The store's file system is full; the result file (elsewhere) has room.
mount_small "$TMP/fulldb" 512
cp "$TMP/seed.db" "$TMP/fulldb/store.db"
fill "$TMP/fulldb"
expect_exit 1 "run with the store on a full file system" -- "$k" run "${quick[@]}" -o "$TMP/r2.json" --store "$TMP/fulldb/store.db"
expect_stderr "error: not recorded in the store" "full store: says the run is not recorded"
expect_stderr "no-store" "full store: names the way out"
expect_stderr "No space left on device" "full store: the cause is named, not just 'disk I/O error'"
expect_stderr "free space on the store's filesystem" "full store: says what to do"
expect_stderr "kstacklab results import $TMP/r2.json --store $TMP/fulldb/store.db" \
  "full store: says how to add the run later"
expect_exit 0 "the result file was written" -- "$k" show "$TMP/r2.json"
# The earlier run in the store is intact and readable.
rm -f "$TMP/fulldb/filler"
expect_exit 0 "the full store still lists its old run" -- "$k" results list --store "$TMP/fulldb/store.db"
expect_stdout "old" "full store: the old run is still there"
expect_exit 0 "the run it refused is imported once there is room" -- \
  "$k" results import "$TMP/r2.json" --store "$TMP/fulldb/store.db"
expect_exit 0 "the store lists both runs" -- "$k" results list --store "$TMP/fulldb/store.db"
[ "$(grep -c '^| *[0-9]' "$TMP/out")" -eq 2 ] && pass "imported: old run and the refused one" ||
  fail "imported: store rows: $(cat "$TMP/out")"
[ "$(integrity "$TMP/fulldb/store.db")" = ok ] && pass "store integrity_check ok" ||
  fail "store integrity_check: $(integrity "$TMP/fulldb/store.db")"

# Room to open the store but not to commit the run (the insert fails at commit): the
# transaction rolls back, the old run stays, nothing half-written.
dd if=/dev/zero of="$TMP/fulldb/filler" bs=1k count=$((512 - 32 - $(du -k "$TMP/fulldb/store.db" | cut -f1))) 2>/dev/null
expect_exit 1 "run with a store that fills up during the insert" -- "$k" run "${quick[@]}" -o "$TMP/r3.json" --store "$TMP/fulldb/store.db"
expect_stderr "not recorded in the store" "store fills mid-insert: says the run is not recorded"
rm -f "$TMP/fulldb/filler"
expect_exit 0 "the store lists its runs after a failed insert" -- "$k" results list --store "$TMP/fulldb/store.db"
[ "$(grep -c '^| *[0-9]' "$TMP/out")" -eq 2 ] && pass "failed insert: still exactly the two runs" ||
  fail "failed insert: store rows: $(cat "$TMP/out")"
[ "$(integrity "$TMP/fulldb/store.db")" = ok ] && pass "failed insert: integrity_check ok" ||
  fail "failed insert: integrity_check: $(integrity "$TMP/fulldb/store.db")"

# 3. Both full: the error says the printed summary is all that is left; exit 1.
fill "$TMP/fulldb"
expect_exit 1 "run with both file systems full" -- "$k" run "${quick[@]}" -o "$TMP/full/res.json" --store "$TMP/fulldb/store.db"
expect_stderr "the summary above is all that is left" "both full: says what is left"
expect_stdout "syscall/getpid" "both full: the summary is printed"
[ "$(sha256sum <"$TMP/full/res.json")" = "$before" ] && pass "both full: the old file is unchanged" ||
  fail "both full: the old file was changed"
finish
