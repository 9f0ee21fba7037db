# kstacklab campaign --resume takes the directory's lock before it reads campaign.json: a resume
# started while another campaign holds DIR/.lock acts on the state that campaign leaves, never on
# one read before the lock. And a resume exits as the campaign did for the same state.
#
# The race is forced, not timed: the test holds DIR/.lock (flock(1)) as a running campaign would,
# and campaign.json is a FIFO while the lock is held, so a resume that reads before locking stops
# in that read until the test lets it go — after the "running campaign" has written its final
# state and released the lock.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/campaign_fixture.bash"
K=$KSTACKLAB
D=$TMP/c

lava_campaign "$D" 1 off
cp "$D/campaign.json" "$TMP/final.json"
before=$(sha256sum <"$D/off/boot-1.json")
# The state as the running campaign wrote it before its boot ended: boot 1 pending, its attempt
# running. Resumed from this, boot 1 would be redone and its attempt recorded as killed.
edit_state "$D" '
s["status"] = "running"; s["stop_reason"] = ""
b = s["boots"][0]; b["status"] = "pending"; b["file"] = ""
b["attempts"][0]["outcome"] = "running"'
cp "$D/campaign.json" "$TMP/running.json"
rm "$D/campaign.json" && mkfifo "$D/campaign.json"

exec 4>"$D/.lock"
flock -x 4 || { echo "FAIL: cannot take $D/.lock"; exit 1; }
"$K" campaign --resume "$D" --no-store >"$TMP/resume.out" 2>"$TMP/resume.err" 4>&- &
pid=$!
exec 5<>"$D/campaign.json"   # read-write: opening does not wait for the reader
cat "$TMP/running.json" >&5
# Wait until the resume has ended (it refused: the lock is held) or holds the FIFO open (it read
# the state before taking the lock). Progress, not time: at most 60 s of polling.
for ((i = 0; i < 1200; i++)); do
  kill -0 "$pid" 2>/dev/null || break
  if ls -l "/proc/$pid/fd" 2>/dev/null | grep -q "campaign.json"; then break; fi
  sleep 0.05
done
# The running campaign ends: its final state replaces the FIFO, then it releases the lock.
rm "$D/campaign.json" && cp "$TMP/final.json" "$D/campaign.json"
flock -u 4
exec 4>&-
exec 5>&-   # the reader (if any) sees the end of its FIFO now
wait "$pid"
rc=$?
if [ "$rc" -eq 2 ] && grep -q "in use by another kstacklab campaign" "$TMP/resume.err"; then
  pass "a resume while the lock is held refuses before reading the state (exit 2)"
else
  fail "a resume while the lock is held: exit $rc, stderr: $(head -c 400 "$TMP/resume.err")"
fi
[ "$(sha256sum <"$D/off/boot-1.json")" = "$before" ] \
  && pass "the finished boot's result file is untouched" || fail "boot-1.json was replaced"
python3 - "$D/campaign.json" <<'PY' && pass "the finished state is kept: boot 1 accepted, one attempt" || fail "the state was changed: $(head -c 600 "$D/campaign.json")"
import json, sys
s = json.load(open(sys.argv[1]))
b = s["boots"][0]
assert s["status"] == "complete" and b["status"] == "accepted", s
assert [a["outcome"] for a in b["attempts"]] == ["accepted"], b["attempts"]
PY

# Released, the same resume acts on the state the campaign left: complete, nothing redone.
expect_exit 0 "a resume after the lock is released" -- "$K" campaign --resume "$D" --no-store
expect_stderr "already complete" "it sees the campaign complete"
[ "$(sha256sum <"$D/off/boot-1.json")" = "$before" ] \
  && pass "nothing was redone" || fail "boot-1.json was replaced after the lock was released"

# The same exit for the same state: a campaign whose boots failed exits 1, and so does its resume.
lava_plan "$TMP/failing.yaml" 1 off
FAKE_LAVA_HEALTH=Incomplete expect_exit 1 "a campaign with a failed boot" -- "$K" campaign "$TMP/failing.yaml" --no-store --dir "$TMP/f"
expect_exit 1 "the resume of that finished campaign" -- "$K" campaign --resume "$TMP/f" --no-store
expect_stderr "failed after a retry" "the resume says which boots failed, as the campaign did"
expect_stdout "Incomplete" "the resume prints the report"
finish
