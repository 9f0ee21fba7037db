# kstacklab campaign --resume and --report read DIR/campaign.json as a plan handed over by anyone:
# the stored plan is checked exactly as a plan file is, and a hostile state is refused with exit 2
# and one line naming the field or file, before anything runs (the stand-in lavacli records every
# call: none may be made) and before anything is written outside DIR.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/campaign_fixture.bash"
K=$(readlink -f "$KSTACKLAB")
lava_campaign "$TMP/good" 1 off on

# hostile NAME PYTHON: a copy of the finished campaign, its state edited by PYTHON (`s`) and
# marked unfinished (so a resume would boot), in $TMP/NAME.
hostile() {
  rm -rf "${TMP:?}/$1" && cp -r "$TMP/good" "$TMP/$1"
  edit_state "$TMP/$1" "s['status'] = 'interrupted'; s['boots'] = s['boots'][:1]; $2"
}
# refused WHAT PATTERN MODE DIR: `--MODE DIR` exits 2 with one line matching PATTERN; no
# lavacli call was made.
refused() {
  local what=$1 pattern=$2 mode=$3 dir=$4 calls
  calls=$(wc -l <"$FAKE_LAVA_DIR/calls")
  expect_exit 2 "$what" -- timeout 60 "$K" campaign "--$mode" "$dir" --no-store && expect_stderr "$pattern" "$what: names it"
  [ "$(grep -c . "$TMP/err")" -eq 1 ] || fail "$what: more than one line on stderr: $(cat "$TMP/err")"
  [ "$(wc -l <"$FAKE_LAVA_DIR/calls")" -eq "$calls" ] || fail "$what: lavacli was run"
}

hostile escape 's["plan"]["profiles"][1]["name"] = "../../escaped"'
refused "a profile name that leaves the directory" "profile name '../../escaped'" resume "$TMP/escape"
[ ! -e "$TMP/escaped" ] && pass "nothing was written outside the directory" || fail "$TMP/escaped was created"
hostile slash 's["plan"]["profiles"][0]["name"] = "a/b"'
refused "a profile name with a slash" "profile name 'a/b'" report "$TMP/slash"

printf '#!/bin/sh\ntouch "%s/ran"\n' "$TMP" >"$TMP/evil" && chmod +x "$TMP/evil"
hostile dotprog 's["plan"]["lava"]["lavacli"] = "./evil"'
pushd "$TMP" >/dev/null
refused "a relative lavacli path" "engine lavacli './evil'" resume "$TMP/dotprog"
popd >/dev/null
hostile dashprog 's["plan"]["engine"]["qemu"] = "-evil"'
refused "a qemu program that is an option" "engine qemu '-evil'" resume "$TMP/dashprog"
hostile qemuargs 's["plan"]["engine"]["qemu_args"] = ["-device", "x\nmore"]'
refused "a qemu argument with a newline" "engine qemu_args" resume "$TMP/qemuargs"
[ ! -e "$TMP/ran" ] && pass "no program of the state ran" || fail "$TMP/evil ran"

hostile cpus 's["plan"]["engine"]["cpus"] = 100000'
refused "engine cpus out of range" "engine cpus" resume "$TMP/cpus"
hostile boots 's["plan"]["boots"] = 5000'
refused "boots out of range" "boots" resume "$TMP/boots"
hostile jobtimeout 's["plan"]["lava"]["job_timeout_s"] = -5'
refused "a negative job timeout" "engine job_timeout" resume "$TMP/jobtimeout"
hostile samples 's["plan"]["strength_samples"] = 0'
refused "strength_samples out of range" "strength_samples" resume "$TMP/samples"
hostile seedtype 's["plan"]["order"]["blocks"] = "sideways"'
refused "an unknown block order" "order blocks" resume "$TMP/seedtype"

hostile unknown 's["colour"] = "blue"'
refused "an unknown key in the state" "unknown key 'colour'" resume "$TMP/unknown"
hostile unknownboot 's["boots"][0]["colour"] = "blue"'
refused "an unknown key in a boot" "unknown key 'colour'" report "$TMP/unknownboot"

# A deep array: small as text, a huge tree (and, written back by a resume, a huge file).
hostile deep 'pass'
python3 - "$TMP/deep/campaign.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
text = json.dumps(s)
assert text.endswith("}")
open(sys.argv[1], "w").write(text[:-1] + ', "block_reports_deep": ' + "[" * 50000 + "]" * 50000 + "}")
PY
refused "a 50,000-deep array (resume)" "campaign.json.*deeper than" resume "$TMP/deep"
refused "a 50,000-deep array (report)" "campaign.json.*deeper than" report "$TMP/deep"
[ "$(stat -c %s "$TMP/deep/campaign.json")" -lt 200000 ] && pass "the deep state was not rewritten" || fail "the deep state grew"

# A FIFO as campaign.json: refused at once, never waited on.
rm -rf "$TMP/fifo" && mkdir "$TMP/fifo" && mkfifo "$TMP/fifo/campaign.json"
refused "a FIFO as campaign.json (report)" "not a regular file" report "$TMP/fifo"
refused "a FIFO as campaign.json (resume)" "not a regular file" resume "$TMP/fifo"

# A boot file labelled for another profile (another run's file) is not taken into the table.
lava_campaign "$TMP/other" 1 on
rm -rf "$TMP/label" && cp -r "$TMP/good" "$TMP/label"
cp "$TMP/other/on/boot-1.json" "$TMP/label/off/boot-1.json"
refused "a boot file labelled for another profile" "off/boot-1.json.*label" report "$TMP/label"
expect_exit 0 "the untouched campaign still reports" -- "$K" campaign --report "$TMP/good"
finish
