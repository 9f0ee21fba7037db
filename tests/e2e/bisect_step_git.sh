# kstacklab bisect step under `git bisect run`, in a small git repository whose commits name the
# kernel command line a candidate boots: the ends are measured once (a bisect of two kernels),
# then git drives the steps. The planted change is real: from commit c5 on, the stand-in lab
# (tests/e2e/fakes/lavacli) runs the DUT's kstacklab under a seccomp filter of 1500 instructions
# (tests/tools/planted_seccomp.cc), which slows every syscall. git ends at c5; c3, whose "build"
# fails, exits 125 and is skipped; a step's bad input exits 255 (git aborts) and never 1.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/campaign_fixture.bash"
K=$(readlink -f "$KSTACKLAB")
command -v git >/dev/null || skip_missing "git is not installed"
[ -x "${KSTACKLAB_PLANTED_SECCOMP:-}" ] || skip_missing "KSTACKLAB_PLANTED_SECCOMP does not name the planted_seccomp helper (ctest sets it)"
RUN='run: [--bench, syscall/getpid:raw, --repetitions, "3", --iterations, "1000", --warmup, "100"]'
PLANT="kstacklab_test_plant=1500"

# The ends: c0's command line and c7's, measured until they differ. The question is the median
# (p50): the mean of a repetition carries the host's stalls, which on a loaded machine swamp the
# planted change for dozens of blocks (measured: a bimodal 100/500 ns mean beside the 100 ns p50).
{ echo "profiles:"
  echo "  - {name: good, kernel: \"https://lab.example/bzImage\", cmdline: \"commit=0\"}"
  echo "  - {name: bad, kernel: \"https://lab.example/bzImage\", cmdline: \"$PLANT commit=7\"}"
  echo "$RUN"
  echo "order: {seed: 3}"
  echo "engine: {name: lava, device_type: qemu, lavacli: $FAKES/lavacli}"; } >"$TMP/ends.yaml"
D=$TMP/ends
expect_exit 0 "the ends of two kernels are measured" -- "$K" bisect "$TMP/ends.yaml" --dir "$D" --row 'syscall/getpid [raw]' --metric p50
expect_stdout "the ends differ" "the ends are established"

# Bad input to a step: exit 255 (git bisect run aborts), one line, before a boot.
expect_exit 255 "step without --kernel" -- "$K" bisect step "$D"
expect_stderr "--kernel IMAGE" "step without --kernel: says what to give"
expect_exit 255 "step with an unknown flag" -- "$K" bisect step "$D" --kernel x --frobnicate
expect_stderr "frobnicate" "step with an unknown flag: names it"
expect_exit 255 "step named as an end" -- "$K" bisect step "$D" --kernel "https://lab.example/bzImage" --name good
expect_stderr "is an end's" "step named as an end: says why"
mkdir -p "$TMP/empty"
expect_exit 255 "step on a directory that is no bisect" -- "$K" bisect step "$TMP/empty" --kernel "https://lab.example/bzImage"
expect_stderr "holds no bisect.json" "step on a directory that is no bisect: says what to give"
[ -z "$(ls -A "$TMP/empty")" ] && pass "step on a directory that is no bisect writes nothing there" \
  || fail "step left files in a directory that is no bisect: $(ls -A "$TMP/empty")"
# A campaign's directory is no bisect either: nothing written into it (no .lock).
mkdir -p "$TMP/camp" && echo '{}' >"$TMP/camp/campaign.json"
expect_exit 255 "step on a campaign's directory" -- "$K" bisect step "$TMP/camp" --kernel "https://lab.example/bzImage"
[ "$(ls -A "$TMP/camp")" = campaign.json ] && pass "step on a campaign's directory writes nothing there" \
  || fail "step left files in a campaign's directory: $(ls -A "$TMP/camp")"

# The repository: c0..c7, each with the command line its kernel boots; c3's "build" fails (c3 is
# git's first midpoint, so it is visited; skipping it leaves c4 to test, and the answer exact).
REPO=$TMP/repo
git init -q "$REPO"
for i in 0 1 2 3 4 5 6 7; do
  if [ "$i" -ge 5 ]; then echo "$PLANT commit=$i" >"$REPO/cmdline"; else echo "commit=$i" >"$REPO/cmdline"; fi
  if [ "$i" -eq 3 ]; then touch "$REPO/broken"; else rm -f "$REPO/broken"; fi
  git -C "$REPO" add -A && git -C "$REPO" -c user.name=t -c user.email=t@example.org commit -q -m "c$i"
done
mapfile -t C < <(git -C "$REPO" rev-list --reverse HEAD)
cat >"$TMP/step.sh" <<STEP
#!/bin/sh
# the user's "build": fails on a broken commit, which git bisect skips (125)
[ -e broken ] && exit 125
exec "$K" bisect step "$D" --kernel "https://lab.example/bzImage" --name "\$(git rev-parse --short=12 HEAD)" --cmdline "\$(cat cmdline)"
STEP
chmod +x "$TMP/step.sh"
cd "$REPO" || exit 1
git bisect start "${C[7]}" "${C[0]}" >/dev/null
git bisect run "$TMP/step.sh" >"$TMP/run.out" 2>"$TMP/run.err"
rc=$?
git bisect log >"$TMP/log.out"
first=$(git rev-parse refs/bisect/bad)
git bisect reset >/dev/null 2>&1
cd - >/dev/null || exit 1
[ $rc -eq 0 ] && pass "git bisect run ends (exit 0)" || fail "git bisect run: exit $rc: $(tail -5 "$TMP/run.err") $(tail -5 "$TMP/run.out")"
[ "$first" = "${C[5]}" ] && pass "git bisect run ends at the planted commit c5" || fail "git bisect run ended at $first, want ${C[5]}: $(cat "$TMP/log.out")"
grep -q "is the first bad commit" "$TMP/run.out" && pass "git names the first bad commit" || fail "git run output: $(cat "$TMP/run.out")"
n=$(grep -c "^git bisect \(good\|bad\)" "$TMP/log.out")
[ "$n" -ge 2 ] && [ "$n" -le 6 ] && pass "each step decided by kstacklab ($n good/bad lines)" || fail "git bisect log: $(cat "$TMP/log.out")"
grep -q "^git bisect skip ${C[3]}" "$TMP/log.out" && pass "the commit whose build fails is skipped (125)" \
  || fail "c3 was not skipped: $(cat "$TMP/log.out")"
# Every step's campaign is in the bisect's directory, its boots verified.
ls -d "$D"/candidate-* >/dev/null 2>&1 && pass "each candidate's campaign is kept in DIR/candidate-NAME" || fail "no candidate campaigns in $D"
finish
