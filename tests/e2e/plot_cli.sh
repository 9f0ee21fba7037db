#!/usr/bin/env bash
# End-to-end test of `kstacklab plot`: PNG and SVG output, the comparison chart, store ids,
# gnuplot missing, bad extension / kind.
# Usage: bash plot_cli.sh KSTACKLAB_BINARY DATA_DIR
. "$(dirname "$0")/lib.bash"
bin=$KSTACKLAB
data=$DATA
tmp=$TMP
export XDG_DATA_HOME="$tmp/xdg" HOME="$tmp/home" TMPDIR="$tmp/t"
mkdir -p "$TMPDIR"
base="$data/store-plot/baseline.json"
var="$data/store-plot/variant.json"

is_png() { [ -s "$1" ] && [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }

if ! command -v gnuplot >/dev/null 2>&1; then
  echo "SKIP: gnuplot is not installed (apt-get install gnuplot-nox)"
  exit 77
fi

# 1. CDF to PNG: exit 0, the path on stdout, a real PNG.
"$bin" plot "$base" "$var" -o "$tmp/cdf.png" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || fail "plot cdf png: exit $rc ($(cat "$tmp/err"))"
is_png "$tmp/cdf.png" || fail "plot cdf png: not a PNG"
grep -qx "$tmp/cdf.png" "$tmp/out" || fail "plot cdf png: stdout: $(cat "$tmp/out")"

# 2. CDF to SVG: an <svg> document naming both curves and the panels.
"$bin" plot "$base" "$var" -o "$tmp/cdf.svg" >/dev/null 2>"$tmp/err" || fail "plot cdf svg: $(cat "$tmp/err")"
grep -q '<svg' "$tmp/cdf.svg" || fail "plot cdf svg: no <svg"
grep -q 'rndstack-off' "$tmp/cdf.svg" || fail "plot cdf svg: curve label rndstack-off missing"
grep -q 'rndstack-on' "$tmp/cdf.svg" || fail "plot cdf svg: curve label rndstack-on missing"
grep -q 'syscall/getppid' "$tmp/cdf.svg" || fail "plot cdf svg: panel title missing"
grep -q 'overhead 20 ns subtracted' "$tmp/cdf.svg" || fail "plot cdf svg: overhead note missing"

# 3. Tail view and the comparison chart (store ids as inputs).
"$bin" plot "$base" "$var" --kind tail -o "$tmp/tail.png" >/dev/null 2>"$tmp/err" || fail "plot tail: $(cat "$tmp/err")"
is_png "$tmp/tail.png" || fail "plot tail: not a PNG"
"$bin" results import --store "$tmp/s.db" "$base" "$var" >/dev/null 2>&1 || fail "import for plot"
"$bin" plot --store "$tmp/s.db" 1 2 --kind compare -o "$tmp/cmp.svg" >/dev/null 2>"$tmp/err" \
  || fail "plot compare from store ids: $(cat "$tmp/err")"
grep -q '% change vs rndstack-off (baseline)' "$tmp/cmp.svg" || fail "plot compare: title missing"
grep -q 'syscall/getpid p99.9' "$tmp/cmp.svg" || fail "plot compare: row label missing"
grep -q '(R)' "$tmp/cmp.svg" || fail "plot compare: the fixtures' regression is not marked (R)"

# 4. No temp files left behind.
[ -z "$(ls -A "$TMPDIR")" ] || fail "temp files left in TMPDIR: $(ls -A "$TMPDIR")"

# 5. gnuplot not on PATH: exit 1 with the install command, no output file.
PATH=/nonexistent "$bin" plot "$base" -o "$tmp/none.png" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "plot without gnuplot: exit $rc, want 1"
grep -q 'gnuplot not found' "$tmp/err" && grep -q 'apt-get install gnuplot-nox' "$tmp/err" \
  || fail "plot without gnuplot: message: $(cat "$tmp/err")"
[ -e "$tmp/none.png" ] && fail "plot without gnuplot left an output file"

# 6. Bad extension and bad kind: exit 2 naming the allowed values, before reading inputs.
"$bin" plot "$base" -o "$tmp/x.jpg" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "plot -o x.jpg: exit $rc, want 2"
grep -q '.png or .svg' "$tmp/err" || fail "plot -o x.jpg: message: $(cat "$tmp/err")"
grep -q -- "-o: image file '$tmp/x.jpg'" "$tmp/err" || fail "plot -o x.jpg: flag prefix: $(cat "$tmp/err")"
"$bin" plot "$base" --kind pie -o "$tmp/x.png" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "plot --kind pie: exit $rc, want 2"
grep -q 'cdf, tail or compare' "$tmp/err" || fail "plot --kind pie: message: $(cat "$tmp/err")"
grep -q -- "--kind: plot kind 'pie' is not known" "$tmp/err" || fail "plot --kind pie: flag prefix: $(cat "$tmp/err")"
"$bin" plot "$tmp/missing.json" -o "$tmp/x.png" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "plot of a missing file: exit $rc, want 2"

# 7. Text from the inputs never runs as gnuplot: labels, names and variants reach the script only
# as single-quoted strings, where gnuplot does no backquote (command) or @macro substitution.
# Hostile ones in every kind of plot: no command runs, the plot is still drawn.
python3 - "$base" "$tmp/evil.json" "$tmp/pwned" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = sys.argv[3]
d["label"] = "x`touch %s-label`' ; system('touch %s-sys') ; '@M" % (p, p)
for b in d["benchmarks"]:
    b["name"] = b["name"] + "`touch %s-name`" % p
json.dump(d, open(sys.argv[2], "w"))
PY
# A second hostile run with the same (hostile) benchmark names, so --kind compare has rows in
# common and must draw them.
python3 - "$tmp/evil.json" "$tmp/evil2.json" "$tmp/pwned" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["label"] = "y$(touch %s-label2)\"; system('touch %s-sys2'); \"" % (sys.argv[3], sys.argv[3])
d["created"] = "2026-01-02T03:04:05Z"
json.dump(d, open(sys.argv[2], "w"))
PY
for kind in cdf tail; do
  "$bin" plot "$tmp/evil.json" "$base" --kind "$kind" -o "$tmp/evil-$kind.svg" >/dev/null 2>"$tmp/err"
  rc=$?
  [ "$rc" -eq 0 ] || fail "plot --kind $kind of hostile text: exit $rc ($(cat "$tmp/err"))"
done
"$bin" plot "$tmp/evil.json" "$tmp/evil2.json" --kind compare -o "$tmp/evil-compare.svg" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && pass "plot --kind compare of hostile text: drawn" ||
  fail "plot --kind compare of hostile text: exit $rc ($(cat "$tmp/err"))"
ls "$tmp"/pwned* >/dev/null 2>&1 && fail "a command in a label or name ran: $(ls "$tmp"/pwned*)" ||
  pass "hostile labels and names ran nothing"
grep -q 'touch' "$tmp/evil-compare.svg" && pass "the hostile text is drawn as text in the compare chart" ||
  fail "the hostile text did not reach the compare chart"
grep -q 'touch' "$tmp/evil-cdf.svg" && pass "the hostile label is drawn as text" ||
  fail "the label did not reach the plot as text"

# A file-size limit (ulimit -f) cuts gnuplot's image short while gnuplot still exits 0: plot must
# notice the incomplete image, exit 1 and write nothing (it wrote a stump with exit 0). Over a
# range of limits every outcome is a whole PNG with exit 0 or no file with exit 1, and some limit
# hits the image itself (not the data files written before it).
cut=0; bad=0
for kib in 1 2 4 8 12 16 24 32 48 64 96 128; do
  rm -f "$tmp/limited.png"
  (ulimit -f $kib; "$bin" plot "$base" -o "$tmp/limited.png" >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/rc")
  rc=$(cat "$tmp/rc")
  if [ "$rc" = 0 ]; then
    is_png "$tmp/limited.png" && [ "$(tail -c 8 "$tmp/limited.png" | od -An -tx1 | tr -d ' \n')" = "49454e44ae426082" ] || bad=$((bad + 1))
  elif [ "$rc" = 1 ] && [ ! -e "$tmp/limited.png" ]; then
    grep -q "incomplete image" "$tmp/err" && cut=$((cut + 1))
  else
    bad=$((bad + 1))
  fi
done
[ $bad = 0 ] && pass "plot under ulimit -f: a whole image or none, never a stump" || fail "plot under ulimit -f: $bad limits left a cut image or a wrong exit"
[ $cut -gt 0 ] && pass "plot under ulimit -f: an image cut short is noticed ($cut limits)" || fail "no limit cut the image itself"
finish
