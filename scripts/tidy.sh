#!/usr/bin/env bash
# clang-tidy with the checks in .clang-tidy (warnings are errors) over every source file, or the
# files given, each file on its own. Configures build-tidy/ with the unity build off (so
# compile_commands.json names every file, and a file that does not include what it uses fails)
# and generates the BPF skeleton the live sampler includes; compiles nothing else.
# Usage: scripts/tidy.sh [FILE...]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-tidy >/dev/null || { echo "clang-tidy not found: apt-get install clang-tidy" >&2; exit 1; }
BUILD=build-tidy
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKSTACKLAB_UNITY=OFF \
  -DKSTACKLAB_BUILD_TESTS=OFF -DKSTACKLAB_BUILD_BENCH=OFF >/dev/null
if cmake --build "$BUILD" --target help | grep -q '^kstacklab_live_skeleton:'; then
  cmake --build "$BUILD" --target kstacklab_live_skeleton >/dev/null
fi
files=("$@")
[ ${#files[@]} -gt 0 ] || mapfile -t files < <(git ls-files 'src/*.cc')
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$BUILD" --quiet
echo "tidy: clean (${#files[@]} files)"
