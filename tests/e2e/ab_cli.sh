# kstacklab run --ab and recover end to end, on a fake sysctl root: the values are measured as
# variants (a sysctl, and the model knobs policy and strategy), the original value survives
# success, a refused value, SIGTERM, SIGHUP and SIGKILL (the next run and `kstacklab recover`
# restore it from the recovery file).
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
SMALL=(--iterations 2000 --repetitions 4 --warmup 100 --no-store)
export KSTACKLAB_SYSCTL_ROOT=$TMP/sys KSTACKLAB_RECOVERY_FILE=$TMP/state/recovery KSTACKLAB_LOCK_DIR=$TMP/locks
mkdir -p "$TMP/sys/kernel"
knob=$TMP/sys/kernel/stack_erasing
echo 1 >"$knob"

expect_exit 0 "A/B run on the fake sysctl" -- "$K" run "${SMALL[@]}" --bench syscall/getpid:raw \
  --ab sysctl:kernel.stack_erasing=0,1 -o "$TMP/ab.json"
[ "$(cat "$knob")" = 1 ] && pass "value restored after success" || fail "value is $(cat "$knob") after success"
[ ! -e "$KSTACKLAB_RECOVERY_FILE" ] && pass "recovery file removed" || fail "recovery file left behind"
python3 - "$TMP/ab.json" <<'PY' && pass "one variant per value, every repetition" || fail "A/B result file"
import json, sys
d = json.load(open(sys.argv[1]))
v = [(b["name"], b["variant"], len(b["repetitions"])) for b in d["benchmarks"]]
assert v == [("syscall/getpid", "raw,kernel.stack_erasing=0", 4),
             ("syscall/getpid", "raw,kernel.stack_erasing=1", 4)], v
assert d["partial"] is False
PY
expect_exit 0 "compare reads the A/B file" -- "$K" compare "$TMP/ab.json"
expect_stdout "kernel.stack_erasing=1" "compare shows the value as a column"

# A model knob: the policies' rows interleaved ABBA, one variant per value, the table's
# baseline (off) as compare's baseline column; nothing written to the machine.
expect_exit 0 "A/B of the kstack policy" -- "$K" run "${SMALL[@]}" --suite model \
  --ab model:policy=percpu-prng,off -o "$TMP/policy.json"
expect_stderr "7 selected rows the knob does not apply to are not measured: model/rng" \
  "names the rows the policy knob does not take"
[ ! -e "$KSTACKLAB_RECOVERY_FILE" ] && pass "model knob writes no recovery file" || fail "model knob wrote a recovery file"
python3 - "$TMP/policy.json" <<'PY' && pass "model knob: one variant per value" || fail "model knob result file"
import json, sys
d = json.load(open(sys.argv[1]))
v = [(b["name"], b["params"]["handler"], b["variant"], b.get("baseline", False), len(b["repetitions"]))
     for b in d["benchmarks"]]
assert v == [("model/kstack", "empty", "percpu-prng", False, 4),
             ("model/kstack", "getpid", "percpu-prng", False, 4),
             ("model/kstack", "empty", "off", True, 4),
             ("model/kstack", "getpid", "off", True, 4)], v
assert d["run"]["ab"] == ["model:policy=percpu-prng,off"], d["run"]
PY
expect_exit 0 "compare reads the policy A/B" -- "$K" compare "$TMP/policy.json" --metrics mean
python3 - "$TMP/out" <<'PY' && pass "compare: off is the baseline column, percpu-prng the variant" || fail "compare columns: $(head -c 600 "$TMP/out")"
import sys
lines = open(sys.argv[1]).read().splitlines()
head = [l for l in lines if "percpu-prng" in l and "|" in l][0]
cells = [c.strip() for c in head.split("|")]
assert cells.index("off") < cells.index("percpu-prng"), cells
under = lines[lines.index(head) + 1].split("|")
assert under[cells.index("off")].strip() == "(baseline)", under
PY
expect_exit 0 "A/B of the poison strategy" -- "$K" run "${SMALL[@]}" --bench 'erase/poison(depth:256):*' \
  --ab model:strategy=generic,unrolled -o "$TMP/strategy.json"
python3 - "$TMP/strategy.json" <<'PY' && pass "strategy knob: one variant per value" || fail "strategy knob result file"
import json, sys
d = json.load(open(sys.argv[1]))
v = [(b["name"], b["variant"], b.get("baseline", False)) for b in d["benchmarks"]]
assert v == [("erase/poison", "generic", True), ("erase/poison", "unrolled", False)], v
PY
expect_exit 2 "unknown policy" -- "$K" run "${SMALL[@]}" --suite model --ab model:policy=off,nope -o "$TMP/x.json"
expect_stderr "unknown kstack policy 'nope' (valid: off, " "lists the valid policies"
expect_exit 2 "policy knob without the model suite" -- "$K" run "${SMALL[@]}" --ab model:policy=off,percpu-prng -o "$TMP/x.json"
expect_stderr "select the model suite" "names the suite to select"
expect_exit 2 "strategy knob without the erase suite" -- "$K" run "${SMALL[@]}" --suite model --ab model:strategy=generic,unrolled -o "$TMP/x.json"
expect_stderr "select the erase suite" "names the erase suite"
[ ! -e "$TMP/x.json" ] && pass "no file after a refused model knob" || fail "file written after a refused model knob"

# Input errors: nothing measured, nothing changed.
expect_exit 2 "bad spec" -- "$K" run "${SMALL[@]}" --ab stack_erasing -o "$TMP/x.json"
expect_stderr "KIND:NAME=V1,V2" "says the expected form"
expect_exit 2 "one value" -- "$K" run "${SMALL[@]}" --ab sysctl:kernel.stack_erasing=1 -o "$TMP/x.json"
expect_exit 2 "value out of range" -- "$K" run "${SMALL[@]}" --ab sysctl:kernel.stack_erasing=0,2 -o "$TMP/x.json"
expect_stderr "0 or 1" "names the range"
expect_exit 2 "absent sysctl" -- "$K" run "${SMALL[@]}" --ab sysctl:vm.nope=0,1 -o "$TMP/x.json"
expect_stderr "vm.nope" "names the sysctl"
[ "$(cat "$knob")" = 1 ] && [ ! -e "$TMP/x.json" ] && pass "nothing changed, no file" || fail "input error changed something"

# Absent kernel.stack_erasing (kernel without the runtime-disable config): exit 2 naming it.
mkdir -p "$TMP/bare/kernel"
KSTACKLAB_SYSCTL_ROOT=$TMP/bare expect_exit 2 "kernel without stack_erasing" -- "$K" run "${SMALL[@]}" \
  --ab sysctl:kernel.stack_erasing=0,1 -o "$TMP/x.json"
expect_stderr "CONFIG_KSTACK_ERASE_RUNTIME_DISABLE" "names the kernel config"

# A long run, interrupted while the knob holds the first value (0): each repetition is 10^7
# calls (seconds), so the signal lands inside it.
long_run() {
  "$K" run --iterations 10000000 --repetitions 100 --warmup 100 --no-store --bench syscall/getpid:raw \
    --ab sysctl:kernel.stack_erasing=0,1 -o "$TMP/long.json" >"$TMP/long.out" 2>"$TMP/long.err" &
  pid=$!
  for _ in $(seq 1 600); do
    [ "$(cat "$knob")" = 0 ] && break
    sleep 0.05
  done
  [ "$(cat "$knob")" = 0 ] && pass "the run switched the knob" || fail "knob never switched"
  [ -s "$KSTACKLAB_RECOVERY_FILE" ] && pass "recovery file written while changed" || fail "no recovery file"
  sleep 0.1
}

long_run
kill -TERM "$pid"; wait "$pid"; rc=$?
[ "$rc" -eq 143 ] && pass "SIGTERM ends the run with 143" || fail "SIGTERM: exit $rc: $(head -c 300 "$TMP/long.err")"
[ "$(cat "$knob")" = 1 ] && pass "value restored after SIGTERM" || fail "value $(cat "$knob") after SIGTERM"
[ ! -e "$KSTACKLAB_RECOVERY_FILE" ] && pass "recovery file removed after SIGTERM" || fail "recovery file kept after SIGTERM"
# The signal lands inside the first 10^7-call repetition: a run with no completed repetition
# writes no file and says so; one that completed some writes them as a partial file.
if [ -e "$TMP/long.json" ]; then
  python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["partial"] is True' "$TMP/long.json" \
    && pass "SIGTERM leaves a partial file" || fail "file after SIGTERM is not partial"
else
  grep -q "nothing was written" "$TMP/long.err" && pass "SIGTERM before a repetition: no file, said so" \
    || fail "no file after SIGTERM and no word why: $(head -c 300 "$TMP/long.err")"
fi

long_run
kill -HUP "$pid"; wait "$pid"; rc=$?
[ "$(cat "$knob")" = 1 ] && pass "value restored after SIGHUP (exit $rc)" || fail "value $(cat "$knob") after SIGHUP"

long_run
kill -KILL "$pid"; wait "$pid" 2>/dev/null
[ "$(cat "$knob")" = 0 ] && pass "SIGKILL leaves the value changed" || fail "value $(cat "$knob") after SIGKILL"
expect_exit 0 "next run after SIGKILL" -- "$K" run "${SMALL[@]}" --bench syscall/invalid -o "$TMP/next.json"
expect_stderr "kernel.stack_erasing restored to 1" "the next run warns and restores"
[ "$(cat "$knob")" = 1 ] && pass "value restored by the next run" || fail "value $(cat "$knob") after the next run"

# A live run's recovery file is its own: another run, or `recover`, must not undo its knob or
# delete the file it needs if it is killed; a second A/B must not take its value for an original.
long_run
expect_exit 0 "a plain run beside a live A/B" -- "$K" run "${SMALL[@]}" --bench syscall/invalid -o "$TMP/beside.json"
expect_stderr "belongs to a kstacklab run that is still running" "it says another run holds a knob"
[ "$(cat "$knob")" = 0 ] && pass "the live run's value was left alone" || fail "value $(cat "$knob"): the live run's knob was undone"
expect_exit 1 "recover beside a live A/B" -- "$K" recover
expect_stderr "still running with a knob changed.*nothing was written" "recover says the file is a live run's"
expect_exit 2 "a second A/B beside a live one" -- "$K" run "${SMALL[@]}" --bench syscall/invalid \
  --ab sysctl:kernel.stack_erasing=1,0 -o "$TMP/second.json"
[ -s "$KSTACKLAB_RECOVERY_FILE" ] && pass "the live run's recovery file is still there" || fail "recovery file deleted under a live run"
kill -KILL "$pid"; wait "$pid" 2>/dev/null
expect_exit 0 "recover once the run is dead" -- "$K" recover
[ "$(cat "$knob")" = 1 ] && pass "value restored after the live run died" || fail "value $(cat "$knob") after recover"

# Every signal that ends the process restores the value, not only INT/TERM/HUP.
# (Not SIGQUIT or SIGINT here: a non-interactive shell starts background jobs with both ignored.)
for sig in USR1 USR2 ALRM; do
  long_run
  kill -"$sig" "$pid"; wait "$pid" 2>/dev/null
  [ "$(cat "$knob")" = 1 ] && pass "value restored after SIG$sig" || fail "value $(cat "$knob") after SIG$sig"
  "$K" recover >/dev/null 2>&1  # the file is left (the process died of the signal): idempotent
done
# Under nohup SIGHUP is ignored and the run goes on: the knob must stay as the run measures it.
(
  trap '' HUP
  exec "$K" run --iterations 10000000 --repetitions 100 --warmup 100 --no-store --bench syscall/getpid:raw \
    --ab sysctl:kernel.stack_erasing=0,1 -o "$TMP/nohup.json" >/dev/null 2>&1
) &
pid=$!
for _ in $(seq 1 600); do [ "$(cat "$knob")" = 0 ] && break; sleep 0.05; done
kill -HUP "$pid"; sleep 0.3
[ "$(cat "$knob")" = 0 ] && pass "an ignored SIGHUP leaves the knob as measured" || fail "an ignored SIGHUP restored the knob under a running A/B"
kill -TERM "$pid"; wait "$pid" 2>/dev/null
[ "$(cat "$knob")" = 1 ] && pass "value restored after the nohup run's SIGTERM" || fail "value $(cat "$knob") after SIGTERM"

long_run
kill -KILL "$pid"; wait "$pid" 2>/dev/null
expect_exit 0 "recover after SIGKILL" -- "$K" recover
expect_stdout "kernel.stack_erasing restored to 1" "recover says what it restored"
[ "$(cat "$knob")" = 1 ] && pass "value restored by recover" || fail "value $(cat "$knob") after recover"
expect_exit 0 "recover with nothing to do" -- "$K" recover
expect_stdout "nothing to recover (.* does not exist)" "recover says there is nothing"
: >"$KSTACKLAB_RECOVERY_FILE"
chmod 600 "$KSTACKLAB_RECOVERY_FILE"
expect_exit 0 "recover with an empty recovery file" -- "$K" recover
expect_stdout "nothing to recover (.* held no saved values; removed)" "recover tells an empty file from none"
[ -e "$KSTACKLAB_RECOVERY_FILE" ] && fail "the empty recovery file was not removed"

# A recovery file that points anywhere but the named sysctl (written by someone else, or edited)
# is refused by `recover` and by `run` before anything is written or measured: exit 2.
echo precious >"$TMP/victim"
printf 'sysctl\tkernel.stack_erasing\t%s\tpwned\n' "$TMP/victim" >"$KSTACKLAB_RECOVERY_FILE"
chmod 600 "$KSTACKLAB_RECOVERY_FILE"
expect_exit 2 "recover refuses a line pointing outside the sysctl root" -- "$K" recover
expect_stderr "is not the file of sysctl kernel.stack_erasing" "recover names the bad line"
expect_exit 2 "run refuses it too, before measuring" -- "$K" run "${SMALL[@]}" --bench syscall/invalid -o "$TMP/hostile.json"
[ "$(cat "$TMP/victim")" = precious ] && pass "the file named in it is untouched" || fail "victim overwritten"
[ ! -e "$TMP/hostile.json" ] && pass "no result file" || fail "a run measured despite the refusal"
[ -e "$KSTACKLAB_RECOVERY_FILE" ] && pass "the refused file is kept for a look" || fail "refused file deleted"
rm -f "$KSTACKLAB_RECOVERY_FILE"

# The knob breaks mid-run (another tool, or a file replaced): the repetitions measured so far are
# kept in a partial file, the run exits 1 naming the failure and the failed restore, and the
# recovery file keeps the original for `recover`.
# 3 s of CPU, not 1: under ASan the timer calibration and environment capture alone can take
# a second, and a run stopped before its first repetition rightly writes nothing.
"$K" run --iterations 200000 --repetitions 1000 --warmup 0 --no-store --bench syscall/getpid:raw \
  --ab sysctl:kernel.stack_erasing=0,1 -o "$TMP/broken.json" >/dev/null 2>"$TMP/err" &
pid=$!
wait_cpu_time "$pid" 300 || fail "the A/B run ended early"
rm -f "$knob" && mkdir "$knob"   # writes now fail (EISDIR)
wait "$pid"
rc=$?
[ "$rc" -eq 1 ] && pass "knob broken mid-run: exit 1" || fail "knob broken mid-run: exit $rc: $(cat "$TMP/err")"
expect_stderr "failed mid-run" "names the failed write"
expect_stderr "restoring kernel.stack_erasing failed" "names the failed restore"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["partial"] is True and d["benchmarks"]' \
  "$TMP/broken.json" && pass "measured repetitions kept" || fail "no partial file after the knob broke"
[ -s "$KSTACKLAB_RECOVERY_FILE" ] && pass "recovery file kept" || fail "recovery file gone"
rmdir "$knob" && echo 0 >"$knob"
expect_exit 0 "recover after the broken run" -- "$K" recover
[ "$(cat "$knob")" = 1 ] && pass "original value back" || fail "value $(cat "$knob") after recover"

# The real machine: if this kernel lacks the sysctl, the refusal names it.
if [ ! -e /proc/sys/kernel/stack_erasing ]; then
  KSTACKLAB_SYSCTL_ROOT='' expect_exit 2 "real kernel without stack_erasing" -- "$K" run "${SMALL[@]}" \
    --ab sysctl:kernel.stack_erasing=0,1 -o "$TMP/x.json"
  expect_stderr "CONFIG_KSTACK_ERASE_RUNTIME_DISABLE" "names the config on the real kernel"
fi
finish
