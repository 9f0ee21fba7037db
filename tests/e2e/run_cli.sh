# kstacklab run / list / show end to end: exit codes, stdout, stderr, files, interruption.
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
SMALL=(--iterations 2000 --repetitions 3 --warmup 100 --no-store)

expect_exit 0 "list" -- "$K" list && expect_stdout "syscall/getpid" "list shows the syscall suite"
expect_exit 0 "run a small syscall job" -- "$K" run "${SMALL[@]}" --bench 'syscall/get*:raw' -o "$TMP/r.json"
expect_stdout "syscall/getppid" "summary names the benchmark"
expect_stdout "overhead" "summary states the timer overhead"
python3 - "$TMP/r.json" <<'PY' && pass "result file has the schema" || fail "result file schema"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "kstacklab-result/1", d["schema"]
assert d["partial"] is False
assert d["timer"]["freq_hz"] > 0 and d["timer"]["overhead_ns"] > 0
assert d["timer"]["resolution_ns"] > 0
assert d["run"]["stall_threshold_ns"] == 10000
names = [b["name"] for b in d["benchmarks"]]
assert names == ["syscall/getpid", "syscall/getppid"], names
for b in d["benchmarks"]:
    assert len(b["repetitions"]) == 3
    for r in b["repetitions"]:
        assert r["iterations"] == 2000
        for m in ["mean", "stddev", "min", "p50", "p90", "p99", "p99.9", "p99.99", "max"]:
            assert m in r, m
        assert r["min"] <= r["p50"] <= r["p99"] <= r["max"]
        assert 0 <= r["stalls"] <= 2000 and r["stall_ns"] >= 10000 * r["stalls"]
    assert b["histogram"]["count"] == 6000
assert "kernel" in d["environment"]
PY
expect_exit 0 "show reads it back" -- "$K" show "$TMP/r.json" && expect_stdout "syscall/getpid" "show prints the table"

expect_exit 0 "-o - writes JSON to stdout" -- "$K" run "${SMALL[@]}" --bench syscall/invalid -o -
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["benchmarks"][0]["name"]=="syscall/invalid"' "$TMP/out" \
  && pass "stdout is the JSON document" || fail "stdout is not JSON"

expect_exit 0 "loop mode" -- "$K" run "${SMALL[@]}" --bench syscall/getppid --timing loop -o "$TMP/loop.json"
python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["benchmarks"][0]; assert b["timing"]=="loop"; assert list(b["repetitions"][0])==["iterations","session","mean"]' "$TMP/loop.json" \
  && pass "loop mode stores the mean only" || fail "loop mode fields"

expect_exit 0 "two sessions" -- "$K" run "${SMALL[@]}" --bench syscall/getpid --sessions 2 -o "$TMP/s.json"
python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["benchmarks"][0]; s=[r["session"] for r in b["repetitions"]]; assert s==[0,0,0,1,1,1], s; assert b["histogram"]["count"]==12000' "$TMP/s.json" \
  && pass "sessions recorded per repetition" || fail "sessions"

expect_exit 0 "stall threshold" -- "$K" run "${SMALL[@]}" --bench syscall/getpid:libc --stall-threshold 1ms -o "$TMP/st.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["run"]["stall_threshold_ns"]==1e6; assert d["benchmarks"][0]["variant"]=="libc"' "$TMP/st.json" \
  && pass "--stall-threshold recorded" || fail "--stall-threshold not recorded"

# Bad input.
expect_exit 2 "stall threshold without a unit" -- "$K" run --stall-threshold 5 && expect_stderr "stall-threshold" "names the flag"
expect_exit 2 "unknown flag" -- "$K" run --frobnicate && expect_stderr "frobnicate" "unknown flag is named"
expect_exit 2 "unknown benchmark" -- "$K" run --bench nosuch/x && expect_stderr "kstacklab list" "points at list"
expect_stderr "error: --bench: pattern 'nosuch/x' matches no benchmark" "names the flag and the pattern"
expect_exit 2 "unknown suite" -- "$K" run --suite nosuch && expect_stderr "kstacklab list" "points at list"
expect_stderr "error: --suite: no suite 'nosuch'" "names the flag and the suite"
# A bad --bench after a good --suite still names --bench.
expect_exit 2 "good suite, bad bench" -- "$K" run --suite syscall --bench nosuch/x && expect_stderr "error: --bench: pattern 'nosuch/x'" "names --bench"
expect_exit 2 "CPU number out of range" -- "$K" run "${SMALL[@]}" --cpu 4095 -o "$TMP/x.json" && expect_stderr "--cpu" "names the flag"
expect_exit 2 "CPU that is not available" -- "$K" run "${SMALL[@]}" --cpu 1000 -o "$TMP/x.json" && expect_stderr "allowed" "names the allowed CPUs"
expect_stderr "--cpu" "names the flag"
expect_exit 2 "bad --timing" -- "$K" run --timing sometimes
# A missing output directory is an input error found before measuring.
expect_exit 2 "unwritable output" -- "$K" run "${SMALL[@]}" -o /nonexistent-dir/r.json
expect_stderr "/nonexistent-dir/r.json" "names the path"
[ ! -e /nonexistent-dir/r.json ] && pass "no file left behind" || fail "file left behind"
expect_exit 2 "show a missing file" -- "$K" show "$TMP/missing.json"
expect_exit 2 "no command" -- "$K"

# Interruption: SIGINT / SIGTERM -> completed repetitions written with "partial": true.
for sig in INT TERM; do
  "$K" run --bench syscall/getpid:raw --iterations 200000 --repetitions 1000 --no-store -o "$TMP/p$sig.json" >/dev/null 2>"$TMP/err" &
  pid=$!
  # 3 s of CPU time: calibration is done and repetitions (~0.05 s each, longer under ASan) have
  # completed, while far fewer than 1000 have.
  wait_cpu_time $pid "$((3 * $(getconf CLK_TCK)))" || fail "SIG$sig: the run ended or stalled before 3 s of CPU"
  kill -$sig $pid
  wait $pid
  code=$?
  want=$([ $sig = INT ] && echo 130 || echo 143)
  [ "$code" -eq "$want" ] && pass "SIG$sig exits $want" || fail "SIG$sig exit $code, want $want"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["partial"] is True; n=len(d["benchmarks"][0]["repetitions"]); assert 1 <= n < 1000, n' "$TMP/p$sig.json" \
    && pass "SIG$sig leaves a valid partial file" || fail "SIG$sig partial file"
  ls -A "$TMP" | grep -q kstacklab-tmp && fail "temp file left after SIG$sig" || pass "no temp file after SIG$sig"
done
finish
