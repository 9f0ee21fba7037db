#!/usr/bin/env bash
# clang-tidy over every source file with the checks in .clang-tidy (warnings are errors).
# Needs a compile_commands.json: run `cmake --preset release` first. Usage: scripts/tidy.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
[ -f "$BUILD/compile_commands.json" ] || { echo "no $BUILD/compile_commands.json: run cmake --preset release" >&2; exit 2; }
command -v clang-tidy >/dev/null || { echo "clang-tidy not found: apt-get install clang-tidy" >&2; exit 1; }
git ls-files 'src/*.cc' | xargs -P "$(nproc)" -n 4 clang-tidy -p "$BUILD" --quiet
echo "tidy: clean"
