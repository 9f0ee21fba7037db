# kstacklab campaign, engine ssh, end to end on this machine's loopback: a QEMU guest (TCG where
# KVM cannot boot it) runs Debian 12's kernel with an initramfs holding dropbear (the SSH server),
# kexec-tools and the libraries kstacklab needs, reachable on 127.0.0.1 only. A two-profile
# campaign switches the guest's kernel with kexec between boots and verifies each boot's
# /proc/cmdline; hostile profile strings reach the guest's kernel command line as text and run
# nowhere; a guest killed mid-campaign is a failed boot with the machine recorded unreachable,
# and --resume finishes once a machine answers again; a machine that is down is brought back by
# the plan's recover command, and `switch: alternate` boots by kexec, then by a full reboot.
# Real boots (label boot), because kexec, a reboot and an SSH server are the machine's own: no
# stand-in runs kexec-tools or dropbear. The engine's waits, refusals and recovery logic run
# under ASan with scripted ssh (campaign_engines_test's CampaignSsh cases).
# (The guest is booted twice for all the cases and kexec'd between them.)
# Skips (77) only where qemu-system-x86, busybox-static, dropbear-bin, kexec-tools or
# openssh-client are missing or Debian's kernel cannot be fetched; CI installs them and sets
# KSTACKLAB_NO_SKIP=1, which makes any of these a failure.
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
for tool in qemu-system-x86_64 ssh ssh-keygen dropbearkey cpio gzip; do
  command -v "$tool" >/dev/null || skip_missing "$tool is not installed (scripts/install-deps.sh --test)"
done
for f in /usr/sbin/dropbear /usr/sbin/kexec /bin/busybox; do
  [ -x "$f" ] || skip_missing "$f is not installed (scripts/install-deps.sh --test)"
done
KERNEL=$("$ROOT/scripts/debian-kernel.sh") || skip_missing "Debian's kernel cannot be fetched (scripts/debian-kernel.sh said why)"
RELEASE=${KERNEL##*/vmlinuz-}
E1000=$(dirname "$KERNEL")/e1000-$RELEASE.ko
[ -f "$E1000" ] || { fail "scripts/debian-kernel.sh left no $E1000"; finish; }

QEMU_PIDS=()
cleanup() {
  for p in "${QEMU_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -f "$TMP/guest.pid" ] && kill -9 "$(cat "$TMP/guest.pid")" 2>/dev/null  # the recover script's guest
  rm -rf "$TMP"
}
trap cleanup EXIT

# ---- the machine under test: an initramfs with dropbear, kexec and kstacklab's libraries -------
R=$TMP/root
mkdir -p "$R"/{bin,usr/sbin,etc/dropbear,root/.ssh,proc,sys,dev,tmp,var/tmp,boot,lib64}
cp /bin/busybox "$R/bin/busybox"
ln -s busybox "$R/bin/sh"
cp /usr/sbin/dropbear /usr/sbin/kexec "$R/usr/sbin/"
cp "$E1000" "$R/e1000.ko"
cp "$(dirname "$KERNEL")/config-$RELEASE" "$R/boot/"   # as a Debian machine has it
for bin in /usr/sbin/dropbear /usr/sbin/kexec "$K"; do
  ldd "$bin" | grep -o '/[^ ]*' | while read -r lib; do
    mkdir -p "$R$(dirname "$lib")"; cp -L "$lib" "$R$lib"
  done
done
ssh-keygen -q -t ed25519 -N '' -f "$TMP/key"
cp "$TMP/key.pub" "$R/root/.ssh/authorized_keys"
chmod 700 "$R/root" "$R/root/.ssh"; chmod 600 "$R/root/.ssh/authorized_keys"
dropbearkey -t ed25519 -f "$R/etc/dropbear/dropbear_ed25519_host_key" >/dev/null 2>&1
echo 'root:x:0:0:root:/root:/bin/sh' >"$R/etc/passwd"
echo 'root:x:0:' >"$R/etc/group"
echo /bin/sh >"$R/etc/shells"
cat >"$R/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox mount -t devtmpfs dev /dev
/bin/busybox --install -s /bin
export PATH=/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tmpfs tmp /tmp
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
insmod /e1000.ko
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
echo "test-guest: $(cat /proc/sys/kernel/random/boot_id) cmdline: $(cat /proc/cmdline)" > /dev/ttyS0
dropbear -s -p 22 -P /tmp/dropbear.pid
# PID 1 is this shell: busybox's reboot asks init with SIGTERM, so do what an init does.
trap 'echo "test-guest: rebooting" >/dev/ttyS0; sync; reboot -f' TERM
while :; do sleep 3600 & wait $!; done
INIT
chmod 755 "$R/init"
(cd "$R" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$TMP/initrd.gz"
echo "   (the test guest's initramfs: $(($(stat -c %s "$TMP/initrd.gz") / 1048576)) MiB gzipped)"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$TMP/ssh_config" <<CFG
Host guest
  HostName 127.0.0.1
  IdentityFile $TMP/key
  IdentitiesOnly yes
  UserKnownHostsFile $TMP/known_hosts
  StrictHostKeyChecking accept-new
  LogLevel ERROR
CFG
gssh() { ssh -F "$TMP/ssh_config" -p "$port" -l root -o BatchMode=yes -o ConnectTimeout=5 guest "$@"; }

start_guest() {  # boots the guest with its original kernel; waits for SSH (300 s)
  qemu-system-x86_64 -nodefaults -no-user-config -display none -accel tcg,thread=multi -cpu max \
    -smp 2 -m 1G -kernel "$KERNEL" -initrd "$TMP/initrd.gz" -append "console=ttyS0 panic=-1" \
    -serial "file:$TMP/console-$1.log" \
    -nic "user,model=e1000,hostfwd=tcp:127.0.0.1:$port-:22" >"$TMP/qemu-$1.log" 2>&1 &
  QEMU_PIDS+=($!)
  disown $!   # killed on purpose below and on exit: no job-control message
  for ((i = 0; i < 150; i++)); do gssh true 2>/dev/null && return 0; sleep 2; done
  return 1
}
start_guest 1 || { fail "the test guest never answered over SSH: $(tail -5 "$TMP/console-1.log")"; finish; }
pass "the test guest answers over SSH on 127.0.0.1:$port"

plan() {  # NAME BOOTS CMDLINE-OFF CMDLINE-ON
  cat >"$TMP/$1.yaml" <<YAML
profiles:
  - {name: off, kernel: $KERNEL, initrd: $TMP/initrd.gz, cmdline: '$3'}
  - {name: on, kernel: $KERNEL, initrd: $TMP/initrd.gz, cmdline: '$4'}
run: [--bench, syscall/getpid:raw, --repetitions, "3", --iterations, "500", --warmup, "100"]
boots: $2
order: {blocks: fixed}
engine: {name: ssh, host: guest, port: $port, user: root, ssh_config: $TMP/ssh_config,
         switch: kexec, cmdline: "console=ttyS0 panic=-1", boot_timeout: 5min, run_timeout: 10min,
         connect_timeout: 10s}
YAML
}

# 1. off and on, one boot each, switched by kexec; hostile words ride along in both command lines.
HOSTILE="x=\$(touch /tmp/pwned) y=;touch /tmp/pwned2;"
echo "   ($(date -u +%T) campaign 1 starts; load $(cut -d' ' -f1-3 /proc/loadavg))"
plan c1 1 "randomize_kstack_offset=off $HOSTILE" "randomize_kstack_offset=on $HOSTILE"
D1=$TMP/c1
rm -f /tmp/pwned /tmp/pwned2
start=$SECONDS
expect_exit 0 "a two-profile ssh campaign, kexec between boots" -- "$K" campaign "$TMP/c1.yaml" --no-store --dir "$D1"
echo "   (campaign 1: $((SECONDS - start)) s)"
expect_stdout "engine ssh" "the report names the engine"
expect_stdout "syscall/getpid" "the report prints the table"
expect_stdout "machine guest: running profile 'on'" "the report says which kernel the machine was left in"
python3 - "$D1" <<'PY' && pass "two accepted boots, each verified in its own kexec'd kernel" || fail "campaign 1 state and files"
import json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "campaign.json")))
assert s["status"] == "complete", s["status"]
assert s["machine"].startswith("running profile 'on'"), s["machine"]
boots = {b["profile"]: b for b in s["boots"]}
assert set(boots) == {"off", "on"}
for name, b in boots.items():
    assert b["status"] == "accepted", b
    words = b["cmdline"].split()
    assert f"randomize_kstack_offset={name}" in words, b["cmdline"]
    # the hostile words arrived as text in the kexec'd kernel's command line
    for w in ("x=$(touch", "/tmp/pwned)", "y=;touch", "/tmp/pwned2;"):
        assert w in words, (w, b["cmdline"])
    assert b["effective_kstack_randomization"] is (name == "on"), b
    r = json.load(open(os.path.join(d, b["file"])))
    assert r["label"] == name and r["run"]["campaign"]["engine"] == "ssh"
    assert r["run"]["campaign"]["emulated"] is False
    log = open(os.path.join(d, b["attempts"][0]["console"])).read()
    assert "kexec" in log and "--append=" in log, log[:500]
    print(f"   ({name}: {b['attempts'][0]['seconds']:.1f} s from the switch to the end of the run)")
PY
ids=$(grep -o 'test-guest: [0-9a-f-]*' "$TMP/console-1.log" | sort -u | wc -l)
[ "$ids" -ge 3 ] && pass "the guest booted three kernels (its own, then two kexecs): $ids boot ids" \
  || fail "the console shows $ids boots, want 3: $(grep test-guest "$TMP/console-1.log")"
gssh 'test ! -e /tmp/pwned && test ! -e /tmp/pwned2' && pass "nothing ran on the guest from the hostile command line" \
  || fail "the hostile command line ran on the guest"
[ ! -e /tmp/pwned ] && [ ! -e /tmp/pwned2 ] && pass "nothing ran on the host either" || fail "the hostile command line ran on the host"

# The campaign as a Fastpath plan and results CSV: the plan's key paths are the documented
# example's (tests/data/fastpath), less what a campaign lacks, plus cmdline.
expect_exit 0 "--report --fastpath writes a Fastpath plan and results" -- "$K" campaign --report "$D1" --fastpath "$TMP/fp"
/usr/bin/python3 - "$TMP/fp" "$DATA/fastpath/learning-path-plan.yaml" <<'PY' && pass "the Fastpath plan has the documented layout; the CSV a row per boot, repetition and metric" || fail "fastpath export"
import csv, sys, yaml
def paths(node, prefix=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, f"{prefix}/{k}")
    elif isinstance(node, list):
        for v in node:
            yield from paths(v, prefix + "[]")
    else:
        yield prefix
ours = yaml.safe_load(open(sys.argv[1] + "/plan.yaml"))
ref = yaml.safe_load(open(sys.argv[2]))
want = set(paths(ref)) - {"/swprofiles[]/modules", "/defaults/benchmark/timeout"}
got = set(paths(ours))
assert want <= got, want - got
assert got - want == {"/swprofiles[]/cmdline"}, got - want
assert ours["sut"]["connection"] == {"method": "SSH", "params": {"user": "root", "host": "guest"}}
assert [p["name"] for p in ours["swprofiles"]] == ["off", "on"]
assert ours["swprofiles"][1]["cmdline"].startswith("randomize_kstack_offset=on x=$(touch")
assert ours["benchmarks"] == [{"include": "syscall/getpid.yaml"}], ours["benchmarks"]
assert ours["defaults"]["benchmark"]["sessions"] == 1 and ours["defaults"]["benchmark"]["repeats"] == 3
rows = list(csv.DictReader(open(sys.argv[1] + "/results.csv")))
assert len(rows) == 2 * 3 * 3, len(rows)  # profiles x repetitions x (mean, p99, p99.9)
assert {r["swprofile"] for r in rows} == {"off", "on"}
assert {r["resultclass"] for r in rows} == {"mean (ns)", "p99 (ns)", "p99.9 (ns)"}
assert all(float(r["value"]) > 0 and r["session"] == "1" and r["sut"] == "guest" for r in rows)
PY
expect_exit 2 "--fastpath refuses to replace its files" -- "$K" campaign --report "$D1" --fastpath "$TMP/fp"

# 2. The guest is killed mid-campaign: that attempt fails, the campaign stops with the machine
# recorded unreachable (no later boot could work), and --resume finishes once it answers again.
plan c2 1 "randomize_kstack_offset=off" "randomize_kstack_offset=on"
sed -i 's/boot_timeout: 5min/boot_timeout: 2min/' "$TMP/c2.yaml"   # a loaded CI boots slowly
D2=$TMP/c2
echo "   ($(date -u +%T) campaign 2 starts; load $(cut -d' ' -f1-3 /proc/loadavg))"
"$K" campaign "$TMP/c2.yaml" --no-store --dir "$D2" >"$TMP/c2.out" 2>"$TMP/c2.err" &
cpid=$!
accepted() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1]+"/campaign.json")); print(sum(b["status"]=="accepted" for b in s["boots"]))' "$D2" 2>/dev/null || echo 0; }
for ((i = 0; i < 3000 && $(accepted) < 1; i++)); do kill -0 $cpid 2>/dev/null || break; sleep 0.2; done
[ "$(accepted)" -ge 1 ] || fail "the first boot of the kill test was not accepted: $(tail -3 "$TMP/c2.err")"
kill -9 "${QEMU_PIDS[-1]}"
for ((i = 0; i < 100 && $(kill -0 "${QEMU_PIDS[-1]}" 2>/dev/null && echo 1 || echo 0); i++)); do sleep 0.1; done
wait $cpid; rc=$?
[ $rc -eq 1 ] && pass "a campaign whose machine died exits 1" || fail "machine killed: exit $rc: $(tail -3 "$TMP/c2.err")"
grep -q "resume" "$TMP/c2.err" && pass "it points to --resume" || fail "no --resume hint: $(cat "$TMP/c2.err")"
python3 - "$D2" <<'PY' && pass "the killed boot's attempt is failed, the state says stopped and unreachable" || fail "campaign 2 state"
import json, sys
s = json.load(open(sys.argv[1] + "/campaign.json"))
assert s["status"] == "stopped", s["status"]
assert "machine was lost" in s["stop_reason"], s["stop_reason"]
assert s["machine"].startswith("unreachable"), s["machine"]
b = {x["profile"]: x for x in s["boots"]}
assert b["off"]["status"] == "accepted", b["off"]
# the killed boot's attempt is recorded "lost" (not counted as a try): the boot waits for --resume
assert b["on"]["status"] == "pending" and b["on"]["attempts"][-1]["outcome"] == "lost", b["on"]
why = b["on"]["attempts"][-1]["reason"]  # lost mid-copy, or while it was to come back
assert "stopped answering" in why or "did not come back" in why, why
PY
grep -q "machine guest: unreachable" "$TMP/c2.out" && pass "the report says the machine is unreachable" || fail "report: $(head -5 "$TMP/c2.out")"
start_guest 2 || { fail "the guest did not come back"; finish; }
expect_exit 0 "--resume with the machine back finishes the campaign" -- "$K" campaign --resume "$D2"
python3 - "$D2" <<'PY' && pass "resumed: the killed boot retried and accepted, nothing redone" || fail "resumed campaign 2 state"
import json, sys
s = json.load(open(sys.argv[1] + "/campaign.json"))
assert s["status"] == "complete", s["status"]
b = {x["profile"]: x for x in s["boots"]}
assert b["off"]["status"] == "accepted" and len(b["off"]["attempts"]) == 1, b["off"]
assert b["on"]["status"] == "accepted" and len(b["on"]["attempts"]) == 2, b["on"]
assert s["machine"].startswith("running profile 'on'"), s["machine"]
PY

# 3. The other switch and the recover hook. The machine is down when the campaign starts; the
# plan's recover command (a power-cycle stand-in: it kills whatever is left of the guest and
# starts it afresh) brings it back. `switch: alternate` then makes boot 1 a kexec and boot 2 a
# full reboot: the reboot command stands in for grub-reboot (QEMU's firmware always boots its
# -kernel with its -append, which holds the profile's argument), and busybox's reboot restarts the
# guest. Both boots are verified like any other. boot_timeout is 150 s: the wait for the machine
# that is down before recover runs, and the full reboot's deadline (a TCG reboot took over 60 s in
# CI's release stage beside the QEMU campaign test; about 20 s alone).
cat >"$TMP/recover.sh" <<REC
#!/bin/bash
# Power-cycles the test guest: kill the recorded QEMU, start a new one, wait for SSH (300 s).
[ -f "$TMP/guest.pid" ] && kill -9 "\$(cat "$TMP/guest.pid")" 2>/dev/null
echo "recover \$(date -u +%T)" >>"$TMP/recover.log"
qemu-system-x86_64 -nodefaults -no-user-config -display none -accel tcg,thread=multi -cpu max \
  -smp 2 -m 1G -kernel "$KERNEL" -initrd "$TMP/initrd.gz" -append "console=ttyS0 panic=-1" \
  -serial "file:$TMP/console-r\$\$.log" \
  -nic "user,model=e1000,hostfwd=tcp:127.0.0.1:$port-:22" >/dev/null 2>&1 </dev/null &
echo \$! >"$TMP/guest.pid"
for ((i = 0; i < 150; i++)); do
  ssh -F "$TMP/ssh_config" -p "$port" -l root -o BatchMode=yes -o ConnectTimeout=5 guest true 2>/dev/null && exit 0
  sleep 2
done
exit 1
REC
chmod +x "$TMP/recover.sh"
cat >"$TMP/c3.yaml" <<YAML
profiles:
  - {name: dflt, kernel: $KERNEL, initrd: $TMP/initrd.gz, cmdline: 'panic=-1', boot_entry: qemu-default}
run: [--bench, syscall/getpid:raw, --repetitions, "3", --iterations, "500", --warmup, "100"]
boots: 2
engine: {name: ssh, host: guest, port: $port, user: root, ssh_config: $TMP/ssh_config,
         switch: alternate, cmdline: "console=ttyS0", reboot_command: [true, "{entry}"],
         recover: [$TMP/recover.sh], boot_timeout: 150s, run_timeout: 10min, connect_timeout: 10s}
YAML
for p in "${QEMU_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done   # the machine is down
D3=$TMP/c3
echo "   ($(date -u +%T) campaign 3 starts; load $(cut -d' ' -f1-3 /proc/loadavg))"
start=$SECONDS
expect_exit 0 "a machine that is down is brought back by recover; kexec then reboot" -- \
  "$K" campaign "$TMP/c3.yaml" --no-store --dir "$D3"
echo "   (campaign 3: $((SECONDS - start)) s; recover ran $(grep -c . "$TMP/recover.log" 2>/dev/null || echo 0) time(s))"
n=$(grep -c . "$TMP/recover.log" 2>/dev/null || echo 0)
[ "$n" = 1 ] && pass "the recover command ran once (for the machine that was down)" \
  || fail "the recover command ran $n times; once was expected (did the reboot not come back?)"
python3 - "$D3" <<'PY' && pass "boot 1 by kexec and boot 2 by reboot, both verified" || fail "campaign 3 state"
import json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "campaign.json")))
assert s["status"] == "complete", s["status"]
boots = sorted(s["boots"], key=lambda b: b["index"])
assert [b["status"] for b in boots] == ["accepted", "accepted"], boots
logs = [open(os.path.join(d, b["attempts"][-1]["console"])).read() for b in boots]
assert "by kexec" in logs[0] and "--append=" in logs[0], logs[0][:600]
assert "by reboot" in logs[1] and "kexec -l" not in logs[1], logs[1][:600]
assert "recover:" in logs[0], "no recover line in boot 1's step log"
assert "recover:" not in logs[1], "boot 2 came back only through the recover command"
for b in boots:
    assert "panic=-1" in b["cmdline"].split(), b["cmdline"]
assert "console=ttyS0" in boots[1]["cmdline"] and "reboot" in s["machine"], s["machine"]
PY
finish
