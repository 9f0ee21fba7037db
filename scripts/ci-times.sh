#!/usr/bin/env bash
# Prints each stage's wall time from a CI log (what .ci/run prints: "== STAGE" opens a stage,
# "   (took N s; total M s)" closes the one before) against CI's budget, 40 minutes (2400 s);
# exit 1 when the total is over it. Usage: scripts/ci-times.sh LOG   (or - for standard input)
# dev/ci-times.md records the figures per machine kind.
set -euo pipefail
budget=${CI_BUDGET_S:-2400}
[ $# -eq 1 ] || { echo "usage: scripts/ci-times.sh LOG|-" >&2; exit 2; }
src=$1
[ "$src" = - ] && src=/dev/stdin
[ "$src" = /dev/stdin ] || [ -r "$src" ] || { echo "ci-times: cannot read $src" >&2; exit 2; }
awk -v budget="$budget" '
  /^== \[background\] .*: started$/ { next }
  /^== \[background\] / { bg = substr($0, 4); next }
  /^   \(took [0-9]+ s beside the other stages; total [0-9]+ s\)/ {
    if (bg != "") printf "%6d s  %5.1f %%  %s (beside the stages above and below it)\n", $2, 100 * $2 / budget, bg
    bg = ""
    next
  }
  /^== / { name = substr($0, 4); next }
  /^   \(took [0-9]+ s; total [0-9]+ s\)/ {
    t = $2 + 0; total = $5 + 0
    if (name != "") { printf "%6d s  %5.1f %%  %s\n", t, 100 * t / budget, name; n++ }
    name = ""
    next
  }
  END {
    if (n == 0) { print "ci-times: no stage times in the log (lines \"== STAGE\" and \"   (took N s; total M s)\")" > "/dev/stderr"; exit 2 }
    status = total > budget ? "OVER" : "within"
    printf "%6d s  %5.1f %%  total, %s the budget of %d s (%d min)\n", total, 100 * total / budget, status, budget, budget / 60
    exit total > budget ? 1 : 0
  }' "$src"
