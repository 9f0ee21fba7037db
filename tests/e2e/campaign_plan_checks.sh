# kstacklab campaign: plan checks before boot 1 (exit 2, one line naming the key or value, DIR not
# created): duplicate keys at every level of a plan, keys of another engine, an honest NUL in a
# message, a release longer than uname(2) holds, a FIFO where a program file is read; and --dir
# as a new path with a trailing slash, a symlink of one's own, a read-only directory or mount; the
# shorthand's flags stored as the plan's fields.
# No guest is booted: every plan names /bin/false as its QEMU and a busybox that does not exist,
# so even a plan that passed its checks would be refused before boot 1.
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
D=$TMP/c
fake_bzimage "$TMP/bzImage"
BZ=$TMP/bzImage
plan() { printf '%s\n' "$@" >"$TMP/plan.yaml"; }
refused() {  # DESCRIPTION STDERR-PATTERN -- command...
  local what=$1 pattern=$2; shift 2
  expect_exit 2 "$what" "$@" && expect_stderr "$pattern" "$what: says why"
  if [ -e "$D" ]; then fail "$what: $D was created"; rm -rf "$D"; fi
  if [ "$(grep -c . "$TMP/err")" -ne 1 ]; then fail "$what: more than one line on stderr: $(cat "$TMP/err")"; fi
}
P="profiles: [{name: off, kernel: $BZ}]"
E="engine: {name: qemu, qemu: /bin/false, busybox: /nonexistent}"

# Duplicate keys: yaml-cpp keeps the first; a plan must say each thing once.
plan "$P" "boots: 1" "boots: 1000" "$E"
refused "a duplicate top-level key" "line 3: .*key 'boots' is given twice" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles: [{name: off, kernel: $BZ, cmdline: a, cmdline: b}]" "boots: 1" "$E"
refused "a duplicate profile key" "line 1: .*key 'cmdline' is given twice" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles: [{name: off, kernel: $BZ, sysctl: {kernel.x: 1, kernel.x: 2}}]" "boots: 1" "$E"
refused "a duplicate sysctl" "line 1: .*sysctl 'kernel.x' is given twice" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "$P" "boots: 1" "engine:" "  name: qemu" "  cpus: 1" "  cpus: 64" "  qemu: /bin/false" "  busybox: /nonexistent"
refused "a duplicate engine key" "line 6: .*key 'cpus' is given twice" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles: [{name: a, kernel: $BZ}, {name: b, kernel: $BZ}]" "target: {mdc_pct: 2, mdc_pct: 50}" "$E"
refused "a duplicate target key" "line 2: .*key 'mdc_pct' is given twice" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "$P" "boots: 1" "order: {seed: 1, seed: 2}" "$E"
refused "a duplicate order key" "line 3: .*key 'seed' is given twice" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"

# A key of another engine.
plan "profiles: [{name: off, kernel: $BZ, boot_entry: x}]" "boots: 1" "$E"
refused "boot_entry under engine qemu" "boot_entry.*engine ssh" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"

# A NUL byte is reported as what it is (yaml-cpp reads a raw NUL as the start of an escape: NUL
# and 'b' become U+0008, NUL and a newline "unknown escape character \x0a").
for tail in 'b' '\n'; do
  printf "profiles: [{name: a\\000$tail, kernel: $BZ}]\nboots: 1\n$E\n" >"$TMP/plan.yaml"
  refused "a NUL byte in a profile name (then $(printf %q "$tail"))" 'line 1: .*NUL byte (\\0, U+0000)' -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
  grep -qE 'U\+000[0-9A-F]*[1-9A-F]|x0a' "$TMP/err" && fail "a NUL is reported as another character: $(cat "$TMP/err")" || pass "a NUL is reported as no other character"
done
plan "profiles: [{name: \"a\\0b\", kernel: $BZ}]" "boots: 1" "$E"
refused "an escaped NUL in a profile name" 'U+0000' -- "$K" campaign "$TMP/plan.yaml" --dir "$D"

# A release uname(2) cannot hold (__NEW_UTS_LEN 64: 64 bytes and the NUL).
long=$(printf 'r%.0s' $(seq 65))
plan "profiles: [{name: off, kernel: \"https://lab.example/bzImage\", release: $long}]" "boots: 1" "engine: {name: lava}"
refused "a 65-byte release" "release.*64" -- "$K" campaign "$TMP/plan.yaml" --dir "$D" --dry-run
ok=$(printf 'r%.0s' $(seq 64))
plan "profiles: [{name: off, kernel: \"https://lab.example/bzImage\", release: $ok}]" "boots: 1" "engine: {name: lava}"
expect_exit 0 "a 64-byte release" -- "$K" campaign "$TMP/plan.yaml" --dir "$TMP/ok64" --dry-run

# A FIFO as engine busybox: refused at once, never waited on.
mkfifo "$TMP/busybox.fifo"
plan "$P" "boots: 1" "engine: {name: qemu, qemu: /bin/true, busybox: $TMP/busybox.fifo}"
refused "a FIFO as engine busybox" "busybox.fifo.*not a regular file" -- timeout 60 "$K" campaign "$TMP/plan.yaml" --dir "$D" --no-store
mkfifo "$TMP/plan.fifo"
refused "a FIFO as the plan file" "plan.fifo.*not a regular file" -- timeout 60 "$K" campaign "$TMP/plan.fifo" --dir "$D"

# --dir, in both ways a directory is made: a campaign (its QEMU is /bin/false: each boot fails at
# once, exit 1, after the directory checks and the state are done) and --dry-run (engine lava).
[ -x /bin/busybox ] || { echo "skip: no static /bin/busybox (apt-get install busybox-static)"; finish; exit 77; }
plan "$P" "boots: 1" "engine: {name: qemu, qemu: /bin/false, accel: tcg}"
cp "$TMP/plan.yaml" "$TMP/qemu.yaml"
plan "profiles: [{name: off, kernel: \"https://lab.example/bzImage\"}]" "boots: 1" "engine: {name: lava}"
cp "$TMP/plan.yaml" "$TMP/lava.yaml"
made() {  # DESCRIPTION DIR-GIVEN DIR-MADE: the campaign and the dry run both use the directory
  expect_exit 1 "$1: a campaign" -- "$K" campaign "$TMP/qemu.yaml" --no-store --dir "$2"
  [ -f "$3/campaign.json" ] && pass "$1: the campaign is in $3" || fail "$1: no campaign.json in $3: $(head -c 300 "$TMP/err")"
  rm -rf "${3:?}"/* "${3:?}"/.??* 2>/dev/null
  expect_exit 0 "$1: a dry run" -- "$K" campaign "$TMP/lava.yaml" --dir "$2" --dry-run
  [ -f "$3/jobs/off-1.yaml" ] && pass "$1: the jobs are in $3" || fail "$1: no job file in $3"
}
made "--dir NEW/ (a trailing slash)" "$TMP/new/" "$TMP/new"
rm -rf "$TMP/new"
mkdir "$TMP/target" && ln -s "$TMP/target" "$TMP/link"
made "--dir a symlink of one's own to an empty directory of one's own" "$TMP/link" "$TMP/target"
ln -s "$TMP/nowhere" "$TMP/dangling"
for mode in qemu lava; do
  expect_exit 2 "--dir a dangling symlink ($mode)" -- "$K" campaign "$TMP/$mode.yaml" --no-store --dir "$TMP/dangling" $([ $mode = lava ] && echo --dry-run)
  expect_stderr "symbolic link to nothing" "a dangling symlink ($mode): says so"
done
# Read-only, as input (exit 2) however it is read-only. As root a mode-555 directory is writable.
ro_refused() {  # DESCRIPTION DIR [PREFIX...]: both ways refused with exit 2, pointing elsewhere
  local what=$1 dir=$2 mode; shift 2
  for mode in qemu lava; do
    expect_exit 2 "$what ($mode)" -- "$@" "$K" campaign "$TMP/$mode.yaml" --no-store --dir "$dir" $([ $mode = lava ] && echo --dry-run)
    expect_stderr "give a directory you can write" "$what ($mode): says to pick a writable directory"
  done
}
if [ "$(id -u)" -ne 0 ]; then
  mkdir "$TMP/ro" && chmod 555 "$TMP/ro"
  ro_refused "--dir an existing read-only directory" "$TMP/ro"
  ro_refused "--dir a new directory in a read-only one" "$TMP/ro/new"
  chmod 755 "$TMP/ro"
fi
# A read-only mount (root included), in a mount namespace of our own where one can be made.
RO=$TMP/romount
mkdir -p "$RO"
MOUNT="mount -t tmpfs none '$RO' && mkdir '$RO/empty' && mount -o remount,ro '$RO'"
if unshare -m sh -c "$MOUNT" 2>/dev/null; then
  ro_refused "--dir an empty directory on a read-only mount" "$RO/empty" unshare -m sh -c "$MOUNT"' && exec "$0" "$@"'
  ro_refused "--dir a new directory on a read-only mount" "$RO/new" unshare -m sh -c "$MOUNT"' && exec "$0" "$@"'
else
  echo "note: no mount namespace here; the read-only mount is not tried"
fi
# The shorthand's flags make the plan a plan file makes (campaign.json's "plan"): each flag of the
# plan's fields (campaign/plan_fields.cc) and of engine qemu's shorthand lands in its key. The
# state is written before boot 1; the campaign is stopped (SIGTERM) as soon as it is there, and
# QEMU is a stand-in on PATH that fails at once, so nothing boots either way.
mkdir -p "$TMP/fakebin"
printf '#!/bin/sh\nexit 1\n' >"$TMP/fakebin/qemu-system-x86_64"
chmod +x "$TMP/fakebin/qemu-system-x86_64"
short() {  # DIR FLAGS...: a shorthand campaign into $TMP/DIR, stopped once its state is written
  local dir=$1 pid i; shift
  env PATH="$TMP/fakebin:$PATH" "$K" campaign --kernel "$BZ" --profile a=x --profile b=y=1 \
    --no-store --dir "$TMP/$dir" "$@" -- --suite syscall >"$TMP/out" 2>"$TMP/err" &
  pid=$!
  for i in $(seq 1 600); do  # 60 s
    [ -f "$TMP/$dir/campaign.json" ] || ! kill -0 "$pid" 2>/dev/null && break
    sleep 0.1
  done
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
  if [ -f "$TMP/$dir/campaign.json" ]; then pass "the shorthand into campaign.json ($dir)"
  else fail "the shorthand into campaign.json ($dir): none written: $(head -c 300 "$TMP/err")"; fi
}
short sh_boots --boots 3 --order fixed --seed 42 --strength --kstacklab "$K" --accel tcg --cpus 3 \
  --memory 1G --boot-timeout 20min --init-timeout 3min
short sh_target --target-mdc 2.5 --target-metric p99 --max-boots 9 --budget 2h --order randomized
python3 - "$TMP/sh_boots/campaign.json" "$TMP/sh_target/campaign.json" "$(readlink -f "$K")" <<'PY' && pass "the shorthand's flags are the plan's fields" || fail "the shorthand's flags are not the plan's fields"
import json, sys
a = json.load(open(sys.argv[1]))["plan"]
b = json.load(open(sys.argv[2]))["plan"]
want_a = {"boots": 3, "target": None, "order": {"blocks": "fixed", "seed": 42}, "strength": True,
          "kstacklab": sys.argv[3], "run": ["--suite", "syscall"]}
for k, v in want_a.items():
    assert a[k] == v, (k, a[k], v)
e = a["engine"]
assert (e["name"], e["accel"], e["cpus"], e["memory"], e["boot_timeout_s"], e["init_timeout_s"]) == \
    ("qemu", "tcg", 3, "1G", 1200, 180), e
assert [p["name"] for p in a["profiles"]] == ["a", "b"] and a["profiles"][1]["cmdline"] == "y=1"
assert b["boots"] == 0 and b["order"]["blocks"] == "randomised" and b["strength"] is False
assert b["target"] == {"mdc_pct": 2.5, "metric": "p99", "min_boots": 3, "max_boots": 9,
                       "budget_s": 7200.0}, b["target"]
PY
refused "a target's flag without --target-mdc" "--max-boots is the target's; give --target-mdc" -- "$K" campaign --kernel "$BZ" --profile a=x --profile b=y --boots 2 --max-boots 5 --dir "$D"
refused "--order's words" "--order must be randomised or fixed" -- "$K" campaign --kernel "$BZ" --profile a=x --profile b=y --boots 2 --order shuffled --dir "$D"
refused "--target-mdc not a number" "--target-mdc 'lots' is not a number" -- "$K" campaign --kernel "$BZ" --profile a=x --profile b=y --target-mdc lots --dir "$D"
finish
