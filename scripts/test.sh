#!/usr/bin/env bash
# Builds (Release: tests and benchmarks) and runs every test with ctest, one job per CPU
# (JOBS=N for another count). Usage: scripts/test.sh [extra ctest args, e.g. -L boot, -LE boot]
# Needs the test tier: scripts/install-deps.sh --test. The ctest labels (boot, long, ...) are
# described in tests/CMakeLists.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
# The tests make their own stores; a team store named in the environment is never touched.
unset KSTACKLAB_STORE
start=$SECONDS
cmake --preset release
cmake --build --preset release -j"$jobs"
echo "test.sh: configure and build took $((SECONDS - start)) s"
ctest --preset release -j"$jobs" "$@"
