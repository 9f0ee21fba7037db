#!/usr/bin/env bash
# End-to-end: a campaign whose disk fills mid-way. A full disk is this host's fault, not a boot's:
# the campaign stops at once (exit 1) with one line naming the cause and the fix, the boot in
# progress is not counted as a try, no boot is marked failed, and `--resume` after space is freed
# completes the campaign without booting an accepted boot again. Twice: the state saved after the
# fault (room for it), and not saved (no room at all: campaign.json keeps the state before).
# Engine lava against the stand-in lavacli (campaign_fixture.bash), whose FAKE_LAVA_FILL_* fill
# the campaign's tmpfs at a chosen job. Needs root and `unshare -m` for a private tmpfs; exits 77
# (skipped) without.
# Usage: bash campaign_fullfs.sh KSTACKLAB_BINARY DATA_DIR
. "$(dirname "$0")/mount_namespace.bash"
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/campaign_fixture.bash"
K=$KSTACKLAB
trap 'umount "$TMP/fs1" "$TMP/fs2" 2>/dev/null; rm -rf "$TMP"' EXIT

# py DIR CODE: CODE with `s` the campaign state in DIR (campaign.json), exit status its result.
py() {
  python3 - "$1" "$2" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/campaign.json"))
exec(sys.argv[2])
PY
}
submits() { grep -c "^jobs submit" "$FAKE_LAVA_DIR/calls" 2>/dev/null || echo 0; }

# run_case NAME RESERVE_KB: a campaign of 2 profiles x 3 boots in a 16 MiB tmpfs, filled at its
# third job with RESERVE_KB KiB left for the state after the job's log found the disk full.
run_case() {
  local name=$1 reserve=$2 fs=$TMP/$1 d=$TMP/$1/c
  mkdir -p "$fs" && mount -t tmpfs -o size=16m,mode=0755 tmpfs "$fs" || {
    echo "skip: cannot mount a tmpfs at $fs"
    exit 77
  }
  lava_plan "$TMP/$name.yaml" 3 off on
  local base
  base=$(submits)
  FAKE_LAVA_FILL_DIR=$fs FAKE_LAVA_FILL_AT=$((base + 3)) FAKE_LAVA_FILL_RESERVE_KB=$reserve \
    expect_exit 1 "$name: a full disk stops the campaign" -- \
    "$K" campaign "$TMP/$name.yaml" --no-store --dir "$d"
  expect_stderr "No space left on device" "$name: the cause is named"
  expect_stderr "free space on the file system of $d" "$name: says what to do"
  expect_stderr "kstacklab campaign --resume $d" "$name: names the resume"
  [ "$(grep -c '^kstacklab: error' "$TMP/err")" -eq 1 ] && pass "$name: one error line" ||
    fail "$name: error lines: $(cat "$TMP/err")"
  grep -q "failed" <(grep -v '^kstacklab: error' "$TMP/err") &&
    fail "$name: a boot was reported failed: $(cat "$TMP/err")" || pass "$name: no boot failed"
  [ "$(submits)" -eq $((base + 3)) ] && pass "$name: no boot after the fault" ||
    fail "$name: $(($(submits) - base)) jobs submitted, want 3"
  if [ "$reserve" -gt 0 ]; then
    expect_stderr "its state kept; boot 2 of 'off' is booted again" "$name: the state is saved"
    py "$d" '
assert s["status"] == "stopped", s["status"]
assert "a write on this host failed" in s["stop_reason"], s["stop_reason"]
b = [x for x in s["boots"] if x["index"] == 2 and x["profile"] == "off"][0]
assert b["status"] == "pending" and b["attempts"][-1]["outcome"] == "host-fault", b' &&
      pass "$name: stopped, the boot pending, its attempt host-fault" || fail "$name: state"
  else
    expect_stderr "the state of the last boot was not saved" "$name: says the state was not saved"
    py "$d" '
assert s["status"] == "running", s["status"]
assert not any(x["status"] == "failed" for x in s["boots"]), s["boots"]' &&
      pass "$name: campaign.json is the state before the fault" || fail "$name: state"
  fi
  py "$d" 'assert sum(x["status"] == "accepted" for x in s["boots"]) == 2' &&
    pass "$name: the two boots before the fault accepted" || fail "$name: accepted boots"
  local sums
  sums=$(cat "$d"/off/boot-1.json "$d"/on/boot-1.json | sha256sum)
  ls -A "$fs" | grep -q '^\.kstacklab-tmp' && fail "$name: a temporary file left in $fs" ||
    pass "$name: no temporary file left"

  rm -f "$fs/filler" "$fs/reserve"
  base=$(submits)
  expect_exit 0 "$name: --resume after freeing space completes" -- \
    "$K" campaign --resume "$d" --no-store
  [ "$(submits)" -eq $((base + 4)) ] && pass "$name: only the four boots left are booted" ||
    fail "$name: $(($(submits) - base)) jobs submitted on resume, want 4"
  [ "$(cat "$d"/off/boot-1.json "$d"/on/boot-1.json | sha256sum)" = "$sums" ] &&
    pass "$name: the accepted boots were not redone" || fail "$name: an accepted boot was redone"
  py "$d" '
assert s["status"] == "complete", s["status"]
assert all(x["status"] == "accepted" for x in s["boots"]) and len(s["boots"]) == 6, s["boots"]
b = [x for x in s["boots"] if x["index"] == 2 and x["profile"] == "off"][0]
assert [a["outcome"] for a in b["attempts"]] == [
    "host-fault" if '"$reserve"' > 0 else "interrupted", "accepted"], b["attempts"]' &&
    pass "$name: complete; the faulted boot redone, its try not counted" ||
    fail "$name: resumed state: $(head -c 600 "$d/campaign.json")"
}

run_case fs1 256
run_case fs2 0
finish
