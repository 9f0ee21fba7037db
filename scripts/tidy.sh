#!/usr/bin/env bash
# clang-tidy with the checks in .clang-tidy (warnings are errors) over every file in src/.
#   scripts/tidy.sh              one run per library, on its unity translation unit (what CI
#                                runs: each header is analysed once per library, ~3x faster)
#   scripts/tidy.sh --each [F…]  every file (or the files given) on its own, with the unity
#                                build off: also fails on a file that does not include what it
#                                uses (the unity build can hide that)
# Configures build-tidy/ (or build-tidy-each/, without the precompiled header: clang-tidy reads
# the units as written) inside the tree, so clang-tidy finds .clang-tidy
# from the generated unity files too, and generates the BPF skeleton the live probe includes;
# compiles nothing else. A file that is in no unity unit (the probe stub when the real probe
# is built) is linted on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-tidy >/dev/null || { echo "clang-tidy not found: apt-get install clang-tidy" >&2; exit 1; }
each=0
if [ "${1:-}" = "--each" ]; then each=1; shift; fi
if [ $each = 0 ] && [ $# -gt 0 ]; then
  echo "usage: scripts/tidy.sh [--each [FILE...]]" >&2
  exit 2
fi
BUILD=build-tidy
[ $each = 1 ] && BUILD=build-tidy-each
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKSTACKLAB_UNITY=$([ $each = 1 ] && echo OFF || echo ON) -DKSTACKLAB_PCH=OFF \
  -DKSTACKLAB_BUILD_TESTS=OFF -DKSTACKLAB_BUILD_BENCH=OFF >/dev/null
# The target list is read whole before it is searched: `… | grep -q` would stop reading at the
# first match, and the build tool's SIGPIPE then fails the pipeline (pipefail), skipping the
# skeleton so that the probe cannot be linted (seen in a clean-clone CI run).
targets=$(cmake --build "$BUILD" --target help)
if grep -q '^kstacklab_live_skeleton:' <<<"$targets"; then
  cmake --build "$BUILD" --target kstacklab_live_skeleton >/dev/null
fi
# The commit header `--version` includes (src/cli/version.cc) is generated too.
cmake --build "$BUILD" --target kstacklab_commit >/dev/null
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t sources < <(git ls-files 'src/*.cc')
  if [ $each = 1 ]; then
    files=("${sources[@]}")
  else
    mapfile -t files < <(find "$BUILD" -path '*/Unity/unity_*.cxx' | sort)
    [ ${#files[@]} -gt 0 ] || { echo "tidy: no unity files in $BUILD" >&2; exit 1; }
    for s in "${sources[@]}"; do  # files in no unity unit are linted on their own
      grep -qF "\"$PWD/$s\"" "${files[@]}" || files+=("$s")
    done
  fi
fi
# In a unity unit the .cc files are #included on purpose: that check is off for the run.
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 1 clang-tidy -p "$BUILD" --quiet \
  --checks=-bugprone-suspicious-include
echo "tidy: clean (${#files[@]} translation units)"
