# The erase suite and the stack-deep syscall rows end to end: every row sets up (each checks
# its fill / call once) and is measured; compare builds the strategy table with generic first.
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
SMALL=(--iterations 200 --repetitions 2 --warmup 10 --no-store)
export TMPDIR=$TMP/tmpdir  # syscall/stat-deep builds its directory tree here
mkdir -p "$TMPDIR"

expect_exit 0 "list" -- "$K" list
expect_stdout "erase/poison(depth:4096):unrolled" "list shows the poison strategies"
expect_stdout "erase/syscall(depth:256):off" "list shows the erase syscall rows"
expect_stdout "syscall/poll-30" "list shows the deep syscalls"

expect_exit 0 "run the erase suite" -- "$K" run "${SMALL[@]}" --suite erase -o "$TMP/e.json"
python3 - "$TMP/e.json" <<'PY' && pass "every strategy at every depth" || fail "erase result file"
import json, sys
d = json.load(open(sys.argv[1]))
rows = {(b["name"], b["params"]["depth"], b["variant"]) for b in d["benchmarks"]}
strategies = {"generic", "unrolled", "memset"}
for depth in (256, 1024, 4096, 8192, 16384):
    for s in strategies:
        assert ("erase/poison", depth, s) in rows, (depth, s)
for depth in (256, 1024, 4096, 8192, 16208):
    for s in ("off", "generic", "unrolled"):
        assert ("erase/syscall", depth, s) in rows, (depth, s)
for b in d["benchmarks"]:
    assert len(b["repetitions"]) == 2
PY
expect_exit 0 "compare the strategies" -- "$K" compare "$TMP/e.json" --bench erase/poison
expect_stdout "generic" "the table has the generic column"

expect_exit 0 "run the syscall suite (with the deep rows)" -- "$K" run "${SMALL[@]}" --suite syscall -o "$TMP/s.json"
python3 - "$TMP/s.json" <<'PY' && pass "deep syscall rows measured" || fail "deep syscall rows"
import json, sys
names = [b["name"] for b in json.load(open(sys.argv[1]))["benchmarks"]]
for n in ("syscall/getpid", "syscall/poll-30", "syscall/select-64", "syscall/uname", "syscall/stat-deep"):
    assert n in names, (n, names)
PY
ls "$TMPDIR"/kstacklab-stat-* >/dev/null 2>&1 && fail "stat-deep left its tree behind" || pass "stat-deep cleaned up"
finish
