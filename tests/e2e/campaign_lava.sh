# kstacklab campaign, engine lava, without a lab: --dry-run writes one job per boot and every job
# validates with LAVA's own schema (Debian's lava-common, lava_common.schemas.validate, strict)
# for the qemu device type and for an x86 bootloader device type; a campaign then runs against a
# stand-in lavacli (tests/e2e/fakes/lavacli: it runs the job's test steps here as the DUT and
# prints lava-dispatcher's log records), the result is read back from the log and verified
# against the command line in the job, and an Incomplete job is a failed boot with its log kept.
# Skips (77) only where Debian's python3 with lava-common is missing; CI installs it and sets
# KSTACKLAB_NO_SKIP=1, which makes that a failure.
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3   # Debian's python3: lava-common is installed for it
$PY -c 'import lava_common.schemas' 2>/dev/null || skip_missing "lava-common is not installed (scripts/install-deps.sh --test)"

validate() {  # FILE...: each a valid LAVA job (strict)
  $PY - "$@" <<'PY'
import sys, yaml
from lava_common.schemas import validate
for path in sys.argv[1:]:
    try:
        validate(yaml.safe_load(open(path)), strict=True)
    except Exception as e:
        sys.exit(f"{path}: {e}")
PY
}

# 1. --dry-run on the qemu device type: a job per boot, each valid, each with its command line.
cat >"$TMP/qemu.yaml" <<'YAML'
profiles:
  - {name: off, kernel: "https://lab.example/bzImage", initrd: "https://lab.example/rootfs.cpio.gz",
     cmdline: "randomize_kstack_offset=off x=$(touch /tmp/pwned);"}
  - {name: on, kernel: "https://lab.example/bzImage", initrd: "https://lab.example/rootfs.cpio.gz",
     cmdline: "randomize_kstack_offset=on", sysctl: {kernel.randomize_va_space: 2}}
run: [--bench, syscall/getpid:raw, --repetitions, "2", --iterations, "200", --warmup, "50"]
boots: 2
engine: {name: lava, device_type: qemu, identity: mylab}
YAML
expect_exit 0 "--dry-run writes the qemu jobs" -- "$K" campaign "$TMP/qemu.yaml" --dir "$TMP/d1" --dry-run
[ "$(ls "$TMP/d1/jobs" | tr '\n' ' ')" = "off-1.yaml off-2.yaml on-1.yaml on-2.yaml " ] \
  && pass "one job file per boot" || fail "job files: $(ls "$TMP/d1/jobs")"
[ ! -e "$TMP/d1/campaign.json" ] && pass "a dry run leaves no campaign state" || fail "a dry run wrote campaign.json"
validate "$TMP"/d1/jobs/*.yaml && pass "every qemu job validates with lava_common.schemas.validate" || fail "a qemu job is invalid"
grep -q -- '-append "console=ttyS0,115200 randomize_kstack_offset=off x=$(touch /tmp/pwned);"' "$TMP/d1/jobs/off-1.yaml" \
  && pass "the qemu job carries the profile's command line in the kernel's -append" || fail "off-1.yaml lacks its command line"
grep -q "extra_kernel_args" "$TMP/d1/jobs/off-1.yaml" && fail "a qemu job has extra_kernel_args" || pass "no extra_kernel_args on qemu"

# 2. --dry-run on an x86 bootloader device type (tftp + ipxe): extra_kernel_args.
sed -e 's/device_type: qemu/device_type: x86, boot_method: ipxe, tags: [epyc]/' \
    -e 's/ x=$(touch \/tmp\/pwned);//' "$TMP/qemu.yaml" >"$TMP/x86.yaml"
expect_exit 0 "--dry-run writes the x86 jobs" -- "$K" campaign "$TMP/x86.yaml" --dir "$TMP/d2" --dry-run
validate "$TMP"/d2/jobs/*.yaml && pass "every x86 job validates with lava_common.schemas.validate" || fail "an x86 job is invalid"
grep -q "extra_kernel_args: randomize_kstack_offset=on" "$TMP/d2/jobs/on-2.yaml" \
  && pass "the x86 job carries the command line in context: extra_kernel_args" || fail "on-2.yaml: $(head -30 "$TMP/d2/jobs/on-2.yaml")"
grep -q "method: ipxe" "$TMP/d2/jobs/on-2.yaml" && grep -q "to: tftp" "$TMP/d2/jobs/on-2.yaml" \
  && pass "the x86 job deploys by tftp and boots by ipxe" || fail "x86 job actions"
sed -e 's/boot_method: ipxe/boot_method: grub/' "$TMP/x86.yaml" >"$TMP/grub.yaml"
expect_exit 0 "--dry-run writes grub jobs" -- "$K" campaign "$TMP/grub.yaml" --dir "$TMP/d3" --dry-run
validate "$TMP"/d3/jobs/*.yaml && pass "grub jobs validate" || fail "a grub job is invalid"

# 2b. arm64 (profiles with arch: aarch64): on qemu, context {arch: arm64, machine: virt, cpu: max}
# and virt's PL011 console; on a bootloader device type, the kernel deployed as an Image (booti).
sed -e 's|kernel: "https://lab.example/bzImage"|kernel: "https://lab.example/Image.gz", arch: aarch64|' \
    -e 's/ x=$(touch \/tmp\/pwned);//' "$TMP/qemu.yaml" >"$TMP/arm64.yaml"
expect_exit 0 "--dry-run writes arm64 qemu jobs" -- "$K" campaign "$TMP/arm64.yaml" --dir "$TMP/d5" --dry-run
validate "$TMP"/d5/jobs/*.yaml && pass "every arm64 qemu job validates with lava_common.schemas.validate" || fail "an arm64 qemu job is invalid"
python3 - "$TMP/d5/jobs/on-1.yaml" <<'PY' && pass "the arm64 job asks for qemu-system-aarch64 -M virt -cpu max with ttyAMA0" || fail "arm64 job: $(head -40 "$TMP/d5/jobs/on-1.yaml")"
import sys, yaml
j = yaml.safe_load(open(sys.argv[1]))
assert j["context"] == {"arch": "arm64", "machine": "virt", "cpu": "max"}, j["context"]
k = j["actions"][0]["deploy"]["images"]["kernel"]
assert k["image_arg"].startswith('-kernel {kernel} -append "console=ttyAMA0,115200 randomize_kstack_offset=on'), k
PY
sed -e 's/device_type: qemu/device_type: juno-r2, boot_method: u-boot/' "$TMP/arm64.yaml" >"$TMP/arm64-board.yaml"
expect_exit 0 "--dry-run writes arm64 board jobs" -- "$K" campaign "$TMP/arm64-board.yaml" --dir "$TMP/d6" --dry-run
validate "$TMP"/d6/jobs/*.yaml && pass "every arm64 board job validates" || fail "an arm64 board job is invalid"
grep -q "type: image" "$TMP/d6/jobs/on-1.yaml" && grep -q "compression: gz" "$TMP/d6/jobs/on-1.yaml" \
  && pass "the board job deploys the kernel as an Image, inflated by LAVA" || fail "arm64 board job: $(head -40 "$TMP/d6/jobs/on-1.yaml")"
sed -e '0,/, arch: aarch64/s///' "$TMP/arm64.yaml" >"$TMP/arm64-mixed.yaml"
expect_exit 2 "--dry-run with an arm64 and an x86 profile" -- "$K" campaign "$TMP/arm64-mixed.yaml" --dir "$TMP/d7" --dry-run
expect_stderr "is x86_64 but profile 'on' kernel 'https://lab.example/Image.gz' is aarch64" "mixed architectures: says which"
[ ! -e "$TMP/d7" ] && pass "refused: nothing written" || fail "$TMP/d7 was created"

# Refusals before anything is written.
expect_exit 2 "--dry-run with engine qemu" -- "$K" campaign --kernel /bin/sh --profile a=x --boots 1 --dir "$TMP/d4" --dry-run
[ ! -e "$TMP/d4" ] && pass "--dry-run refused: nothing written" || fail "$TMP/d4 was created"
expect_exit 2 "--dry-run into a used directory" -- "$K" campaign "$TMP/qemu.yaml" --dir "$TMP/d1" --dry-run
expect_stderr "not an empty directory" "--dry-run into a used directory: says why"

# 3. A campaign against the stand-in lavacli: submitted, followed, read back, verified.
export FAKE_LAVA_DIR=$TMP/lab FAKE_LAVA_KSTACKLAB=$(readlink -f "$K")
mkdir -p "$FAKE_LAVA_DIR"
sed -e "s|engine: {name: lava, device_type: qemu, identity: mylab}|engine: {name: lava, device_type: qemu, identity: mylab, lavacli: $HERE/fakes/lavacli}|" \
    -e 's/boots: 2/boots: 1/' -e 's/, sysctl: {kernel.randomize_va_space: 2}//' "$TMP/qemu.yaml" >"$TMP/lab.yaml"
expect_exit 0 "a lava campaign through lavacli" -- "$K" campaign "$TMP/lab.yaml" --no-store --dir "$TMP/c1"
expect_stdout "engine lava" "the report names the engine"
expect_stdout "syscall/getpid" "the report prints the table"
grep -q -- "-i mylab jobs submit" "$FAKE_LAVA_DIR/calls" && grep -q -- "-i mylab jobs logs 1 --raw --no-follow" "$FAKE_LAVA_DIR/calls" \
  && pass "lavacli is called with the plan's identity: submit, wait, show, logs" || fail "lavacli calls: $(cat "$FAKE_LAVA_DIR/calls")"
python3 - "$TMP/c1" <<'PY' && pass "both boots accepted from their logs, each verified against its job's command line" || fail "lava campaign state"
import json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "campaign.json")))
assert s["status"] == "complete", s["status"]
for b in s["boots"]:
    assert b["status"] == "accepted", b
    assert f"randomize_kstack_offset={b['profile']}" in b["cmdline"].split(), b["cmdline"]
    a = b["attempts"][0]
    log = open(os.path.join(d, a["console"])).read()
    assert '"lvl": "target"' in log and "kstacklab-done" in log
    assert os.path.exists(os.path.join(d, a["console"].replace(".console.log", ".job.yaml")))
    # the headline figure was reported as a LAVA test case with its measurement
    assert '"case": "syscall_getpid_raw.mean"' in log and '"units": "ns"' in log, log[-2000:]
    r = json.load(open(os.path.join(d, b["file"])))
    assert r["label"] == b["profile"] and r["run"]["campaign"]["engine"] == "lava"
PY
[ ! -e /tmp/pwned ] && pass "the hostile command line ran nowhere" || fail "/tmp/pwned exists"

# 4. An Incomplete job is a failed boot (retried once) with its log kept.
sed -e 's/boots: 1/boots: 1/' "$TMP/lab.yaml" | python3 -c 'import sys; t=sys.stdin.read(); i=t.index("  - {name: on"); print(t[:i] + t[t.index("run:"):], end="")' >"$TMP/inc.yaml"
FAKE_LAVA_HEALTH=Incomplete expect_exit 1 "an Incomplete job fails the campaign's exit code" -- "$K" campaign "$TMP/inc.yaml" --no-store --dir "$TMP/c2"
expect_stdout "ended Incomplete" "the report says the job ended Incomplete"
python3 - "$TMP/c2" <<'PY' && pass "the failed boot has two attempts, each with its LAVA log" || fail "incomplete state"
import json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "campaign.json")))
b = s["boots"][0]
assert b["status"] == "failed" and len(b["attempts"]) == 2, b
for a in b["attempts"]:
    assert "Incomplete" in a["reason"] and "timed out" in a["reason"], a
    assert "auto-login-action timed out" in open(os.path.join(d, a["console"])).read()
PY
finish
