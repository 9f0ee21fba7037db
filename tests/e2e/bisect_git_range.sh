# kstacklab bisect with a git range (`kernels: {tree, good, bad, command, image}`) on the command
# line, without a guest: every bad range is refused with exit 2 and one line before any build (the
# directory is not created, the tree untouched); a good end whose build fails stops the bisect with
# exit 1 naming its build log, the user's checkout as it was; --resume tries the build again and
# --report names the range.
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
command -v git >/dev/null || skip_missing "git is not installed"
D=$TMP/b   # the bisect directory: must not exist after any refusal
RUN='run: [--bench, syscall/getpid:raw, --repetitions, "2", --iterations, "200", --warmup, "50"]'

# The tree: c0..c4 on the main line, and a branch "side" from c1 with one commit of its own.
REPO=$TMP/linux
git init -q "$REPO"
g() { git -C "$REPO" -c user.name=t -c user.email=t@example.org "$@"; }
printf '#!/bin/sh\n[ -e broken ] && { echo "error: this commit does not build" >&2; exit 2; }\nmkdir -p out && git rev-parse HEAD >out/image\n' >"$REPO/build.sh"
for i in 0 1 2 3 4; do
  if [ "$i" -eq 0 ]; then touch "$REPO/broken"; else rm -f "$REPO/broken"; fi
  echo "$i" >"$REPO/level"
  g add -A && g commit -q -m "c$i"
  [ "$i" -eq 1 ] && g branch side
done
mapfile -t C < <(g rev-list --reverse HEAD)
g checkout -q side && echo s >"$REPO/side" && g add side && g commit -q -m s1 && g checkout -q -
S=$(g rev-parse side)
echo dirty >>"$REPO/level"   # the user's own change: it must stay
before=$(g rev-parse HEAD; g symbolic-ref HEAD; g status --porcelain; g worktree list --porcelain)

# range FILE GOOD BAD [IMAGE] [EXTRA-LINE...]: a plan whose kernels are that range of $REPO.
range() {
  local file=$1 good=$2 bad=$3 image=${4:-out/image}; shift 4 2>/dev/null || shift $#
  { echo "kernels:"
    echo "  tree: $REPO"
    echo "  good: \"$good\""
    echo "  bad: \"$bad\""
    echo "  command: [sh, build.sh]"
    echo "  image: \"$image\""
    printf '  %s\n' "$@"
    echo "$RUN"; } >"$file"
}
refused() {  # DESCRIPTION STDERR-PATTERN -- command...
  local what=$1 pattern=$2; shift 2
  expect_exit 2 "$what" "$@" && expect_stderr "$pattern" "$what: says why"
  if [ -e "$D" ]; then fail "$what: $D was created"; rm -rf "$D"; fi
  if [ "$(grep -c . "$TMP/err")" -ne 1 ]; then fail "$what: not one line on stderr: $(cat "$TMP/err")"; fi
}
Q=(--row 'syscall/getpid [raw]')

range "$TMP/norepo.yaml" "${C[0]}" "${C[4]}"
sed -i "s|tree: $REPO|tree: $TMP|" "$TMP/norepo.yaml"
refused "a tree that is not a repository" "is not a git repository" -- "$K" bisect "$TMP/norepo.yaml" --dir "$D" "${Q[@]}"
range "$TMP/unknown.yaml" v9.9 "${C[4]}"
refused "an unknown commit" "kernels good 'v9.9' is not a commit" -- "$K" bisect "$TMP/unknown.yaml" --dir "$D" "${Q[@]}"
range "$TMP/same.yaml" "${C[2]}" "${C[2]}"
refused "good and bad the same commit" "are the same commit" -- "$K" bisect "$TMP/same.yaml" --dir "$D" "${Q[@]}"
range "$TMP/order.yaml" "${C[3]}" "${C[1]}"
refused "good not an ancestor of bad (reversed)" "is not an ancestor of bad" -- "$K" bisect "$TMP/order.yaml" --dir "$D" "${Q[@]}"
range "$TMP/side.yaml" "$S" "${C[4]}"
refused "good on another branch" "is not an ancestor of bad" -- "$K" bisect "$TMP/side.yaml" --dir "$D" "${Q[@]}"
range "$TMP/up.yaml" "${C[0]}" "${C[4]}" "../out/image"
refused "an image path with .." "must be a file's path inside the worktree" -- "$K" bisect "$TMP/up.yaml" --dir "$D" "${Q[@]}"
range "$TMP/abs.yaml" "${C[0]}" "${C[4]}" "/boot/vmlinuz"
refused "an absolute image path" "must be a file's path inside the worktree" -- "$K" bisect "$TMP/abs.yaml" --dir "$D" "${Q[@]}"
for dir_image in . out/. out/; do
  range "$TMP/dot.yaml" "${C[0]}" "${C[4]}" "$dir_image"
  refused "image '$dir_image', a directory" "must be a file's path inside the worktree" -- "$K" bisect "$TMP/dot.yaml" --dir "$D" "${Q[@]}"
done
range "$TMP/nocmd.yaml" "${C[0]}" "${C[4]}"
sed -i 's|command: \[sh, build.sh\]|command: []|' "$TMP/nocmd.yaml"
refused "no command" "kernels command is empty" -- "$K" bisect "$TMP/nocmd.yaml" --dir "$D" "${Q[@]}"
range "$TMP/timeout.yaml" "${C[0]}" "${C[4]}" out/image "build_timeout: 10 years"
refused "a bad build_timeout" "build_timeout" -- "$K" bisect "$TMP/timeout.yaml" --dir "$D" "${Q[@]}"
range "$TMP/both.yaml" "${C[0]}" "${C[4]}"
echo "profiles: [{name: k0, kernel: /nonexistent}]" >>"$TMP/both.yaml"
refused "profiles and kernels both" "not both" -- "$K" bisect "$TMP/both.yaml" --dir "$D" "${Q[@]}"
after=$(g rev-parse HEAD; g symbolic-ref HEAD; g status --porcelain; g worktree list --porcelain)
[ "$before" = "$after" ] && pass "the refusals left the user's checkout as it was" || fail "checkout changed: $before / $after"

# The good end (c0) does not build: exit 1 naming its build log, before any boot.
range "$TMP/p.yaml" "${C[0]}" "${C[4]}" out/image "build_timeout: 60s"
expect_exit 1 "a good end that does not build stops the bisect" -- "$K" bisect "$TMP/p.yaml" --dir "$D" "${Q[@]}"
expect_stderr "the good end ${C[0]:0:12} has no image: the build exited with status 2; its build log: $D/images/${C[0]}/build.log" "names the end and its build log"
grep -q "error: this commit does not build" "$D/images/${C[0]}/build.log" && pass "the build's output is in its log" || fail "build log: $(cat "$D/images/${C[0]}/build.log")"
[ -z "$(ls -A "$D/worktrees")" ] && pass "the build's worktree is removed" || fail "worktrees left: $(ls "$D/worktrees")"
after=$(g rev-parse HEAD; g symbolic-ref HEAD; g status --porcelain; g worktree list --porcelain)
[ "$before" = "$after" ] && pass "the build left the user's checkout as it was" || fail "checkout changed: $before / $after"
python3 - "$D" "${C[@]}" <<'PY' && pass "bisect.json keeps the range and its commits, status stopped" || fail "bisect.json"
import json, sys
s = json.load(open(sys.argv[1] + "/bisect.json"))
r = s["range"]
assert r["commits"] == sys.argv[2:], r["commits"]
assert r["command"] == ["sh", "build.sh"] and r["image"] == "out/image" and r["build_timeout_s"] == 60, r
assert s["status"] == "stopped", s["status"]
assert [p["name"] for p in s["plan"]["profiles"]] == [sys.argv[2][:12], sys.argv[-1][:12]], s["plan"]
PY
K=$(readlink -f "$K")
cd "$TMP" || exit 1   # a relative directory: the worktree is still made in it, not in the tree
expect_exit 1 "--resume builds the end again" -- "$K" bisect --resume b
cd - >/dev/null || exit 1
[ ! -e "$REPO/b" ] && [ ! -e "$REPO/worktrees" ] && pass "--resume of a relative directory builds in it" || fail "a worktree was made inside the tree: $(ls "$REPO")"
expect_stderr "building ${C[0]:0:12}" "--resume: the build is tried again"
expect_exit 0 "--report of the stopped bisect" -- "$K" bisect --report "$D"
expect_stdout "kernels: the first-parent line of $REPO from ${C[0]} to ${C[4]} (5 commits), each built by \`sh build.sh\`" "--report names the range"

# c1 builds, but what it makes is no kernel image: checked once built (as a listed kernel is
# before boot 1), the good end has none to boot: exit 1.
range "$TMP/notakernel.yaml" "${C[1]}" "${C[4]}"
expect_exit 1 "a built image that is not a kernel stops the bisect" -- "$K" bisect "$TMP/notakernel.yaml" --dir "$TMP/nk" "${Q[@]}"
expect_stderr "the good end ${C[1]:0:12} has no image: its image is not one to boot: " "says the end's image is not a kernel"
[ -f "$TMP/nk/images/${C[1]}/image" ] && pass "the image was built and cached" || fail "no cached image: $(ls -R "$TMP/nk/images")"
finish
