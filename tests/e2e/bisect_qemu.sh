# kstacklab bisect end to end under QEMU TCG with Debian 12's kernel: eight "kernels" (one image,
# command lines standing for commits; the profiles are named by the commits of a small git
# repository), randomize_kstack_offset=off for the first five and on after, the question a strength
# fact (distinct offsets). The first bad one is found in log2(8) = 3 steps, each decided; a SIGINT
# in the ends leaves a state that --resume finishes without redoing a finished boot; the bisect's
# log replays in git (`git bisect replay`) to the same first bad commit.
# Emulated boots: the figures here are offsets (correctness), never costs. Real boots (label
# boot), because the question is the offsets the live probe reads in the booted kernel, which no
# stand-in lab gives; the driver's logic runs under ASan in campaign_bisect_test (a scripted
# engine) and e2e_bisect_step_git (the stand-in LAVA lab, a cost question).
# Skips (77) only where qemu-system-x86 / busybox-static / git are missing or Debian's kernel
# cannot be fetched; CI installs them and sets KSTACKLAB_NO_SKIP=1, which makes any a failure.
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
need_qemu_x86
command -v git >/dev/null || skip_missing "git is not installed"
export KSTACKLAB_KVM_DEVICE=/nonexistent/kvm   # TCG from the start (see campaign_qemu.sh)

# The commits: c0..c7 of a throw-away repository; the profiles are named by their short ids.
REPO=$TMP/repo
git init -q "$REPO"
for i in 0 1 2 3 4 5 6 7; do
  git -C "$REPO" -c user.name=t -c user.email=t@example.org commit -q --allow-empty -m "c$i"
done
mapfile -t C < <(git -C "$REPO" rev-list --reverse --abbrev-commit --abbrev=12 HEAD)
{ echo "profiles:"
  for i in 0 1 2 3 4 5 6 7; do
    if [ "$i" -lt 5 ]; then v=off; else v=on; fi
    echo "  - {name: ${C[$i]}, kernel: $KERNEL, cmdline: \"randomize_kstack_offset=$v\"}"
  done
  echo "run: [--bench, syscall/getpid:raw, --repetitions, '2', --iterations, '200', --warmup, '10']"
  # Debian's 6.1 shows 129 offsets with randomisation on; 20000 samples see all of them, so
  # each step is decided at its first look (2 blocks).
  echo "strength_samples: 20000"
  echo "engine: {name: qemu, cpus: 1}"
  echo "order: {seed: 5}"; } >"$TMP/plan.yaml"

D=$TMP/b
accepted() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1]+"/ends/campaign.json")); print(sum(b["status"]=="accepted" for b in s["boots"]))' "$D" 2>/dev/null || echo 0; }
"$K" bisect "$TMP/plan.yaml" --dir "$D" --strength distinct --min-blocks 2 >"$TMP/b.out" 2>"$TMP/b.err" &
pid=$!
for ((i = 0; i < 3000; i++)); do [ "$(accepted)" -ge 1 ] && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
[ $rc -eq 130 ] && pass "SIGINT during the ends exits 130" || fail "SIGINT: exit $rc: $(cat "$TMP/b.err")"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1]+"/bisect.json")); assert s["status"]=="interrupted", s["status"]' "$D" \
  && pass "SIGINT: bisect.json says interrupted" || fail "SIGINT: bisect.json"
before=$(accepted)
expect_exit 0 "--resume finishes the bisect" -- "$K" bisect --resume "$D"
cat "$TMP/err"
expect_stdout "first bad kernel: ${C[5]} (last good: ${C[4]})" "the first bad kernel is the first with randomisation on"
expect_stdout "ends: ${C[0]} 1.000 vs ${C[7]}" "the ends: one offset at the good end"
python3 - "$D" "$before" "${C[5]}" <<'PY' && pass "3 steps, each decided at 2 blocks; no accepted boot redone; the offsets are 1 and the 6.1 geometry" || fail "bisect state"
import json, os, sys
d, before, first_bad = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = json.load(open(os.path.join(d, "bisect.json")))
assert s["status"] == "complete", s["status"]
assert len(s["steps"]) == 3, s["steps"]
for st in s["steps"]:
    assert st["verdict"] in ("good", "bad") and st["blocks"] == 2 and st["boots"] == 6, st
ends = json.load(open(os.path.join(d, "ends", "campaign.json")))
boots = ends["boots"]
# the boots accepted before the SIGINT are still the first ones, with one attempt each
assert sum(len(b["attempts"]) == 1 for b in boots[:before]) == before, boots[:before]
for c in ["ends"] + [st["dir"] for st in s["steps"]]:
    st = json.load(open(os.path.join(d, c, "campaign.json")))
    for b in st["boots"]:
        if b["status"] != "accepted":
            continue
        on = "randomize_kstack_offset=on" in b["cmdline"].split()
        assert (b["strength"]["distinct"] > 64) if on else (b["strength"]["distinct"] == 1), b
PY
grep -q "step 3: .*boots, theta" "$TMP/err" && pass "a line per step on stderr" || fail "no step lines: $(cat "$TMP/err")"
# The log replays in git to the same commit.
git -C "$REPO" bisect replay "$D/bisect.log" >"$TMP/replay.out" 2>&1
bad=$(git -C "$REPO" rev-parse --short=12 refs/bisect/bad 2>/dev/null)
[ "$bad" = "${C[5]}" ] && pass "git bisect replay of bisect.log ends at the same commit" || fail "git bisect replay: refs/bisect/bad $bad, want ${C[5]}: $(cat "$TMP/replay.out")"
grep -q "${C[5]}.* is the first bad commit\|is the first bad commit" "$TMP/replay.out" && pass "git names the first bad commit" || fail "git replay output: $(cat "$TMP/replay.out")"
finish
