#!/usr/bin/env bash
# Builds (Release) and runs every test with ctest. Usage: scripts/test.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset release
cmake --build --preset release -j2
ctest --preset release -j2 "$@"
