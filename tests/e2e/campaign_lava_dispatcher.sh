# kstacklab campaign, engine lava, through a real LAVA dispatcher: Debian 12's lava-dispatcher
# (2023.01) runs every job kstacklab generates with `lava-run` on a qemu device (the device
# dictionary written here, QEMU under TCG), booting Debian's own kernel with an initramfs built
# here (static busybox, kstacklab and its libraries); lavacli is tests/e2e/fakes/lavacli-lava-run,
# which plays only the LAVA server (submit, wait, health, the log as the server stores it). The
# result comes back through the engine's own log reader and is verified (release, command line)
# as in a lab; a job whose kernel file does not exist ends Incomplete with the dispatcher's reason.
# A real boot (label boot): the job is run by LAVA's own dispatcher, which no stand-in replaces;
# the generated jobs are also validated against LAVA's schema without a boot (e2e_campaign_lava).
# Skips (77) only where lava-run, QEMU, busybox-static, cpio or Debian's kernel (and its config)
# is missing, or where it cannot run as root (lava-run refuses otherwise); CI installs them, runs
# as root and sets KSTACKLAB_NO_SKIP=1, which makes any of these a failure.
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
command -v lava-run >/dev/null || skip_missing "lava-run is not installed: apt-get install lava-dispatcher (scripts/install-deps.sh --all)"
[ "$(id -u)" -eq 0 ] || skip_missing "lava-run runs only as root"
need_qemu_x86
command -v cpio >/dev/null || skip_missing "cpio is not installed (scripts/install-deps.sh --test)"
RELEASE=${KERNEL##*/vmlinuz-}
[ -f "$(dirname "$KERNEL")/config-$RELEASE" ] || skip_missing "no config-$RELEASE beside $KERNEL (scripts/debian-kernel.sh puts it there)"
start=$SECONDS

# The DUT's initramfs: busybox, kstacklab on PATH with its shared libraries, the kernel's
# configuration in /boot (where kstacklab env reads it), and an /init that gives LAVA a root shell
# on the serial console (its prompt "/ # " is the job's first prompt).
# LAVA adds its test overlay into this archive (the job's initrd is format cpio.newc).
R=$TMP/rootfs
mkdir -p "$R"/bin "$R"/proc "$R"/sys "$R"/dev "$R"/tmp "$R"/root "$R"/boot
cp "$(dirname "$KERNEL")/config-$RELEASE" "$R/boot/"
cp /bin/busybox "$R/bin/busybox"
ln -s busybox "$R/bin/sh"
cp "$(readlink -f "$K")" "$R/bin/kstacklab"
for lib in $(ldd "$K" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
  mkdir -p "$R$(dirname "$lib")" && cp "$lib" "$R$lib"
done
cat >"$R/init" <<'INIT'
#!/bin/sh
/bin/busybox mount -t devtmpfs dev /dev
/bin/busybox --install -s /bin
export PATH=/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tmpfs tmp /tmp
cd /
exec setsid cttyhack sh -l
INIT
chmod 755 "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) >"$TMP/initrd.cpio.gz"

# The device dictionary of the local qemu device, as the LAVA server would render it from
# lava-server 2023.01's qemu.jinja2 (arch amd64, no_kvm), reduced to what a qemu job uses; QEMU
# runs under TCG (this host has no usable KVM) without a network (the DUT needs none).
cat >"$TMP/device.yaml" <<'YAML'
constants:
  posix:
    lava_test_sh_cmd: /bin/sh
    lava_test_results_dir: /lava-%s
    lava_test_shell_file: ~/.bashrc
  shutdown-message: 'The system is going down for reboot NOW'
  kernel-start-message: 'Linux version [0-9]'
  default-shell-prompt: 'lava-test: # '
  spawn_maxread: '4092'
  failure_retry: 1
  boot_retry:
available_architectures: [amd64, x86_64]
actions:
  deploy:
    connections: {serial: }
    methods:
      image:
        parameters:
          guest: {size: 512, interface: ide, driveid: lavatest}
  boot:
    connections: {serial: }
    methods:
      qemu:
        parameters:
          command: qemu-system-x86_64
          options:
          - -nographic
          - -accel tcg -cpu max -smp 1
          - -m 1024
          - -nic none
          - -monitor none
timeouts:
  actions:
    boot-qemu-image: {minutes: 2}
    auto-login-action: {minutes: 2}
YAML
export LAVA_RUN_DIR=$TMP/lab LAVA_RUN_DEVICE=$TMP/device.yaml
mkdir -p "$LAVA_RUN_DIR"
# lava-run runs detached (as on a worker): one still running when this script ends (a failure,
# SIGINT) is canceled, its QEMU with it. Were the script killed outright, the job's own timeout
# (8 min, the plan's job_timeout) ends it.
cleanup() {
  local f
  for f in "$LAVA_RUN_DIR"/*/pid; do
    [ -f "$f" ] && [ ! -f "${f%pid}exit" ] && kill -TERM -- "-$(cat "$f")" 2>/dev/null
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
guests() { pgrep -f "qemu-system-x86_64.*dispatcher/tmp/($(ls "$LAVA_RUN_DIR" | grep -E '^[0-9]+$' | paste -sd'|'))/" | wc -l; }

# 1. One boot of one profile: the job kstacklab writes, run by lava-run, read back and verified.
cat >"$TMP/plan.yaml" <<YAML
profiles:
  - {name: on, kernel: "file://$KERNEL", initrd: "file://$TMP/initrd.cpio.gz", release: "$RELEASE",
     cmdline: "randomize_kstack_offset=on"}
run: [--bench, syscall/getpid:raw, --repetitions, "2", --iterations, "200", --warmup, "50"]
boots: 1
engine: {name: lava, device_type: qemu, lavacli: $HERE/fakes/lavacli-lava-run, job_timeout: 8m}
YAML
t1=$SECONDS
expect_exit 0 "a lava campaign whose job lava-dispatcher runs" -- "$K" campaign "$TMP/plan.yaml" --no-store --dir "$TMP/c1"
echo "   (the campaign took $((SECONDS - t1)) s)"
expect_stdout "engine lava" "the report names the engine"
expect_stdout "syscall/getpid" "the report prints the table"
/usr/bin/python3 - "$TMP/c1" "$RELEASE" "$LAVA_RUN_DIR" <<'PY' && pass "the boot is accepted from lava-dispatcher's log: release, command line and the guest's environment verified" || fail "lava-dispatcher campaign state: see above"
import glob, json, os, sys, yaml
d, release, lab = sys.argv[1:]
s = json.load(open(os.path.join(d, "campaign.json")))
assert s["status"] == "complete", s["status"]
[b] = s["boots"]
assert b["status"] == "accepted", b
assert len(b["attempts"]) == 1, b["attempts"]
assert "randomize_kstack_offset=on" in b["cmdline"].split(), b["cmdline"]
a = b["attempts"][0]
log = open(os.path.join(d, a["console"])).read()
# The log is lava-dispatcher's: its version, the real boot command, Debian's kernel on the console.
assert "lava-dispatcher, installed at version: 2023.01" in log, log[:500]
assert "Boot command: /usr/bin/qemu-system-x86_64" in log and "-accel tcg" in log
assert "Linux version " + release in log
assert '"case": "job", "definition": "lava", "result": "pass"' in log
# The headline figure as lava-test-case reported it, through LAVA's own test shell.
assert '"case": "syscall_getpid_raw.mean"' in log and '"units": "ns"' in log
r = json.load(open(os.path.join(d, b["file"])))
assert r["label"] == "on" and r["run"]["campaign"]["engine"] == "lava", r["run"]["campaign"]
k = r["environment"]["kernel"]
assert k["release"] == release, k["release"]
assert "randomize_kstack_offset=on" in k["cmdline"].split(), k["cmdline"]
assert k["effective_kstack_randomization"] is True
# The job lava-run ran is the one kstacklab wrote, initrd carrying LAVA's overlay.
job_file = os.path.join(d, a["console"].replace(".console.log", ".job.yaml"))
[ran] = [j for j in glob.glob(os.path.join(lab, "*", "job.yaml"))]
assert open(ran).read() == open(job_file).read()
initrd = yaml.safe_load(open(job_file))["actions"][0]["deploy"]["images"]["initrd"]
assert initrd["format"] == "cpio.newc" and initrd["overlays"] == {"lava": True} and initrd["compression"] == "gz", initrd
PY
[ "$(guests)" -eq 0 ] && pass "no QEMU left after the job" || fail "a QEMU of the job is still running"

# 2. A kernel that cannot be fetched: lava-dispatcher refuses the job, it ends Incomplete, the
# boot is retried once and recorded failed with the dispatcher's reason and both logs.
sed -e "s|file://$KERNEL|file://$TMP/missing/bzImage|" "$TMP/plan.yaml" >"$TMP/bad.yaml"
expect_exit 1 "a job the dispatcher cannot deploy fails the campaign's exit code" -- "$K" campaign "$TMP/bad.yaml" --no-store --dir "$TMP/c2"
expect_stdout "ended Incomplete: Job error: Invalid job data" "the report says why the job ended Incomplete"
python3 - "$TMP/c2" <<'PY' && pass "the failed boot has two attempts, each with lava-dispatcher's error and log" || fail "incomplete state"
import json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "campaign.json")))
b = s["boots"][0]
assert b["status"] == "failed" and len(b["attempts"]) == 2, b
for a in b["attempts"]:
    # The reason is the dispatcher's own (the lava/job result's error_msg), not its generic help.
    assert "Incomplete: Job error: Invalid job data" in a["reason"], a
    assert "does not exist or is not readable" in a["reason"], a
    assert "lava-dispatcher, installed at version" in open(os.path.join(d, a["console"])).read()
PY
echo "   (this test took $((SECONDS - start)) s)"
finish
