# kstacklab campaign of Debian 12's arm64 kernel under qemu-system-aarch64 (TCG, emulated: no
# figure here is a cost), driven by this host's kstacklab with the cross-built aarch64 one in the
# guest: the shorthand a user types, profiles off and on, one boot each, a tiny run and
# --strength. Both boots accepted and verified; the result files say aarch64, the counter and its
# frequency; the live probe (a kprobe on the syscall's handler on arm64) sees 1 offset with
# randomisation off and the ror32-era arm64 geometry with it on (Debian's 6.1.y carries the
# stable ror32 backport: x & 0x3FF rounded up to 16 bytes, 65 offsets); the report prints the
# table. Usage (a ctest of the native build; on x86-64 label aarch64-compare, which
# scripts/test-aarch64.sh runs after the cross build):
#   bash tests/cross/campaign_qemu_arm64.sh KSTACKLAB AARCH64_KSTACKLAB
# Skips (77) only where qemu-system-arm, the cross build or Debian's arm64 kernel are missing; CI
# installs them and sets KSTACKLAB_NO_SKIP=1, which makes any of these a failure.
source "$(dirname "$0")/../e2e/lib.bash" "$1" "$(dirname "$0")/../data"
K=$KSTACKLAB
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GUEST_K=${2:?usage: campaign_qemu_arm64.sh KSTACKLAB AARCH64_KSTACKLAB}
command -v qemu-system-aarch64 >/dev/null || skip_missing "qemu-system-arm is not installed (scripts/install-deps.sh --all)"
[ -x "$GUEST_K" ] || skip_missing "no aarch64 kstacklab at $GUEST_K (scripts/test-aarch64.sh builds it)"
KERNEL=$("$ROOT/scripts/debian-kernel.sh" --arch arm64) || skip_missing "Debian's arm64 kernel cannot be fetched (scripts/debian-kernel.sh said why)"
export KSTACKLAB_KVM_DEVICE=/nonexistent/kvm   # TCG from the start (no aarch64 KVM on this host)
# The busybox-static:arm64 the engine fetches goes to the test's cache, not the user's.
export XDG_CACHE_HOME=${KSTACKLAB_TEST_CACHE:-$TMP/cache}
RUN=(--bench syscall/getpid:raw --repetitions 2 --iterations 300 --warmup 50)

D=$TMP/c
start=$SECONDS
expect_exit 0 "an arm64 campaign off/on, one boot each, with --strength" -- "$K" campaign \
  --kernel "$KERNEL" --kstacklab "$GUEST_K" \
  --profile off=randomize_kstack_offset=off --profile on=randomize_kstack_offset=on \
  --boots 1 --strength --no-store --dir "$D" -- "${RUN[@]}"
echo "   (the campaign: $((SECONDS - start)) s, two TCG boots)"
expect_stdout "syscall/getpid" "the report prints the table"
expect_stdout "QEMU TCG" "the report names the accelerator"
expect_stdout "machine: qemu-system-aarch64 -M virt -cpu max (TCG, emulated)" "the report names the emulator, machine and CPU model"
python3 - "$D" "${KERNEL##*/vmlinuz-}" <<'PY' && pass "both boots accepted and verified: aarch64, cntvct_el0, 1 offset off and all 65 of the geometry on" || fail "arm64 campaign state and files"
import json, os, sys
d, release = sys.argv[1], sys.argv[2]
s = json.load(open(os.path.join(d, "campaign.json")))
assert s["status"] == "complete", s["status"]
boots = {b["profile"]: b for b in s["boots"]}
assert set(boots) == {"off", "on"}
for name, b in boots.items():
    assert b["status"] == "accepted", b
    assert f"randomize_kstack_offset={name}" in b["cmdline"].split(), b["cmdline"]
    assert "console=ttyAMA0" in b["cmdline"].split(), b["cmdline"]
    assert b["effective_kstack_randomization"] is (name == "on"), b
    r = json.load(open(os.path.join(d, b["file"])))
    env = r["environment"]
    assert env["kernel"]["machine"] == "aarch64", env["kernel"]
    assert env["kernel"]["release"] == release, (env["kernel"]["release"], release)
    assert r["timer"]["source"] == "cntvct_el0", r["timer"]
    # QEMU's virt gives the guest a 62.5 MHz generic timer (16 ns); Armv8.6+ hardware 1 GHz.
    assert 1e6 <= r["timer"]["freq_hz"] <= 2e9, r["timer"]
    assert env["cpu"]["arm64"]["features"], env["cpu"]
    camp = r["run"]["campaign"]
    assert camp["emulated"] is True and camp["accelerator"] == "tcg", camp
    assert camp["machine_model"].startswith("qemu-system-aarch64 -M virt -cpu max"), camp
    st = b["strength"]
    if name == "off":
        assert st["distinct"] == 1, st  # (one offset fits every geometry: none is inferred)
    else:
        # Debian's 6.1.y: x & 0x3FF rounded up to 16 bytes (the ror32 backport), 65 offsets.
        assert st["geometry_offsets"] == 65 and st["geometry_max_bytes"] == 1024, st
        # Offset 0 has probability 1/1024 per call: the default 100000 samples miss it with
        # probability (1 - 1/1024)^100000, about 1e-42.
        assert st["distinct"] == 65, st
    print(f"   ({name}: distinct {st['distinct']}, {b['attempts'][-1]['seconds']:.1f} s)")
PY
expect_stdout "65 distinct offsets of the 65 its geometry has (0 to 1024 bytes)" "the report gives the offsets against the geometry"
finish
