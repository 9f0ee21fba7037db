# kstacklab bisect on the command line, without a guest: every bad plan, question or flag is
# refused with exit 2 and one line before the first boot (the directory is not created); A/A ends
# (every kernel the same) through the stand-in lavacli stop with "no regression between the ends",
# exit 1, the figures printed, no step begun; --report and --resume of the ended bisect agree.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/campaign_fixture.bash"
K=$KSTACKLAB
D=$TMP/b   # the bisect directory: must not exist after any refusal

fake_bzimage "$TMP/bzImage"
BZ=$TMP/bzImage
RUN='run: [--bench, syscall/getpid:raw, --repetitions, "2", --iterations, "200", --warmup, "50"]'
# kernels FILE N [EXTRA-LINE...]: a plan of N kernels k0..k(N-1) of one image, each its own cmdline.
kernels() {
  local file=$1 n=$2 i; shift 2
  { echo "profiles:"
    for ((i = 0; i < n; i++)); do echo "  - {name: k$i, kernel: $BZ, cmdline: \"commit=$i\"}"; done
    echo "$RUN"
    printf '%s\n' "$@"; } >"$file"
}
refused() {  # DESCRIPTION STDERR-PATTERN -- command...
  local what=$1 pattern=$2; shift 2
  expect_exit 2 "$what" "$@" && expect_stderr "$pattern" "$what: says why"
  if [ -e "$D" ]; then fail "$what: $D was created"; rm -rf "$D"; fi
  if [ "$(grep -c . "$TMP/err")" -ne 1 ]; then fail "$what: not one line on stderr: $(cat "$TMP/err")"; fi
}

kernels "$TMP/p8.yaml" 8
refused "no mode" "give one of --dir" -- "$K" bisect "$TMP/p8.yaml"
refused "no plan file" "give a plan file" -- "$K" bisect --dir "$D" --row 'syscall/getpid [raw]'
refused "no question" "--row ROW" -- "$K" bisect "$TMP/p8.yaml" --dir "$D"
refused "two questions" "one of them" -- "$K" bisect "$TMP/p8.yaml" --dir "$D" --row 'syscall/getpid [raw]' --strength distinct
refused "not a metric" "is not a metric" -- "$K" bisect "$TMP/p8.yaml" --dir "$D" --row 'syscall/getpid [raw]' --metric median
refused "not a strength fact" "is not a strength fact" -- "$K" bisect "$TMP/p8.yaml" --dir "$D" --strength bits
refused "--metric with --strength" "a --strength question has no metric" -- "$K" bisect "$TMP/p8.yaml" --dir "$D" --strength distinct --metric p99
refused "a row the run does not measure" "not a row the plan's run measures; give one of: syscall/getpid \[raw\]" -- "$K" bisect "$TMP/p8.yaml" --dir "$D" --row 'syscall/getppid [raw]'
refused "alpha out of range" "alpha 0.7 is out of range" -- "$K" bisect "$TMP/p8.yaml" --dir "$D" --strength distinct --alpha 0.7
refused "one block per look" "--min-blocks" -- "$K" bisect "$TMP/p8.yaml" --dir "$D" --strength distinct --min-blocks 1
kernels "$TMP/p1.yaml" 1
refused "a list of one kernel" "two kernels at least" -- "$K" bisect "$TMP/p1.yaml" --dir "$D" --strength distinct
kernels "$TMP/boots.yaml" 4 "boots: 3"
refused "a plan with boots" "remove boots and target" -- "$K" bisect "$TMP/boots.yaml" --dir "$D" --strength distinct
{ echo "profiles:"; for i in 0 1 2; do echo "  - {name: k$i, kernel: $BZ, cmdline: \"same\"}"; done; echo "$RUN"; } >"$TMP/same.yaml"
refused "ends that are the same kernel" "nothing between them to bisect" -- "$K" bisect "$TMP/same.yaml" --dir "$D" --strength distinct
sed "s|kernel: $BZ|kernel: /nonexistent|" "$TMP/p8.yaml" >"$TMP/missing.yaml"
refused "a missing kernel" "/nonexistent" -- "$K" bisect "$TMP/missing.yaml" --dir "$D" --strength distinct
mkdir -p "$TMP/notabisect"
D=$TMP/notabisect/x refused "--resume of a directory without bisect.json" "holds no bisect.json" -- "$K" bisect --resume "$TMP/notabisect"
refused "--resume with a question" "take the plan and the question from DIR" -- "$K" bisect --resume "$TMP/notabisect" --row x

# A/A ends through the stand-in lab: every kernel boots the same (this host runs each job's steps).
AA=$TMP/aa
{ echo "profiles:"
  for i in 0 1 2 3; do echo "  - {name: k$i, kernel: \"https://lab.example/bzImage\", cmdline: \"commit=$i\"}"; done
  echo "$RUN"
  echo "order: {seed: 3}"
  echo "engine: {name: lava, device_type: qemu, lavacli: $FAKES/lavacli}"; } >"$TMP/aa.yaml"
# alpha 0.001 with one look at 3 blocks: a false "established" on equal ends has a chance of 0.1 %.
expect_exit 1 "A/A ends: no regression, exit 1" -- "$K" bisect "$TMP/aa.yaml" --dir "$AA" \
  --row 'syscall/getpid [raw]' --alpha 0.001 --min-blocks 3 --max-blocks 3
expect_stderr "no regression between the ends: k0 and k3 do not differ in syscall/getpid \[raw\] mean after 3 blocks" "A/A: the one-line reason"
expect_stdout "ends: k0 .* vs k3 .*; difference .* after 3 blocks (6 boots): no-regression" "A/A: the ends' figures are printed"
python3 - "$AA" <<'PY' && pass "A/A: bisect.json complete, no step, the ends' campaign has 6 accepted boots" || fail "A/A state"
import json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "bisect.json")))
assert s["status"] == "complete" and s["ends"]["verdict"] == "no-regression", s
assert s["steps"] == [], s["steps"]
c = json.load(open(os.path.join(d, "ends", "campaign.json")))
assert sum(b["status"] == "accepted" for b in c["boots"]) == 6, c["boots"]
assert not any(n.startswith("step-") for n in os.listdir(d)), os.listdir(d)
PY
cp "$TMP/out" "$TMP/aa.report"
expect_exit 0 "--report of the ended bisect" -- "$K" bisect --report "$AA"
cmp -s "$TMP/out" "$TMP/aa.report" && pass "--report prints the report the run printed" || fail "--report differs: $(diff "$TMP/aa.report" "$TMP/out")"
expect_exit 1 "--resume of the ended bisect: its report and exit again" -- "$K" bisect --resume "$AA"
expect_stderr "already complete" "--resume says the bisect is complete"
finish
