#!/usr/bin/env bash
# Builds (Release) and runs every test with ctest. Usage: scripts/test.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests make their own stores; a team store named in the environment is never touched.
unset KSTACKLAB_STORE
cmake --preset release
cmake --build --preset release -j2
ctest --preset release -j2 "$@"
