# kstacklab bisect of a cost question under QEMU TCG with Debian 12's kernel and a plant TCG sees:
# three "kernels" (one image; command lines standing for commits), pti=off for the first and
# pti=on after. With page-table isolation every syscall switches CR3 twice and TCG flushes its
# software TLB each time, so `syscall/getpid [raw]` is many times slower (docs/bisect.md, "What TCG
# can and cannot bisect"). The question is that row's per-boot minimum: TCG's per-boot noise is in
# the mean and the tail (a boot's mean varies by tens of percent), while the fastest call of a
# boot moves by a few percent. The ends are established, the one candidate decided bad, the first
# bad kernel is the first with pti=on, and the report prints the boots of the step and the
# evidence table. Beside other tests (CI's ctest -j2) the host's load moves even the minimum and
# the rule takes more looks: 25 boots, 5.5 minutes, in one such run (docs/bisect.md).
# Emulated times: the plant's size under TCG is the point, never the figures. Real boots (label
# boot): a planted change found in boots' own measurements, as the statistics are used; the
# stand-in lab's seccomp plant (e2e_bisect_step_git) measures on the host, not in a guest.
# Skips (77) only where qemu-system-x86 / busybox-static are missing or Debian's kernel cannot be
# fetched; CI installs them and sets KSTACKLAB_NO_SKIP=1, which makes any a failure.
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
need_qemu_x86
export KSTACKLAB_KVM_DEVICE=/nonexistent/kvm   # TCG from the start (see campaign_qemu.sh)

cat >"$TMP/plan.yaml" <<YAML
profiles:
  - {name: k0, kernel: $KERNEL, cmdline: "pti=off"}
  - {name: k1, kernel: $KERNEL, cmdline: "pti=on"}
  - {name: k2, kernel: $KERNEL, cmdline: "pti=on"}
run: [--bench, syscall/getpid:raw, --repetitions, '3', --iterations, '1000', --warmup, '50']
engine: {name: qemu, cpus: 1}
order: {seed: 3}
YAML
D=$TMP/b
start=$SECONDS
expect_exit 0 "a cost bisect of three kernels (pti=off, then pti=on)" -- \
  "$K" bisect "$TMP/plan.yaml" --dir "$D" --row "syscall/getpid [raw]" --metric min
echo "   (the bisect: $((SECONDS - start)) s)"
cat "$TMP/err"
expect_stdout "first bad kernel: k1 (last good: k0)" "the first bad kernel is the first with pti=on"
grep -q "step 1: k1: [0-9]* boots, theta" "$TMP/err" && pass "the step's line gives its boots and theta" \
  || fail "no step line with its boots: $(cat "$TMP/err")"
python3 - "$D" <<'PY' && pass "the ends established, one step decided bad; pti=on many times slower" || fail "bisect state"
import json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "bisect.json")))
assert s["status"] == "complete", s["status"]
assert s["ends"]["verdict"] == "established", s["ends"]
# Emulated: pti=on's fastest getpid is many times pti=off's under TCG (docs/bisect.md).
assert s["ends"]["bad_mean"] > 3 * s["ends"]["good_mean"], s["ends"]
assert len(s["steps"]) == 1, s["steps"]
st = s["steps"][0]
# decided bad: the whole interval of theta above 1/2, from blocks of three boots
assert st["verdict"] == "bad" and st["low"] > 0.5 and st["boots"] == 3 * st["blocks"], st
print(f"   (ends: {s['ends']['boots']} boots, {s['ends']['blocks']} blocks; step: {st['boots']} boots, "
      f"{st['blocks']} blocks, theta {st['theta']:.3f} [{st['low']:.3f}, {st['high']:.3f}])")
PY
expect_exit 0 "--report prints the evidence table" -- "$K" bisect --report "$D"
expect_stdout "first bad" "the report names the first bad kernel"
finish
