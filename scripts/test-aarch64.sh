#!/usr/bin/env bash
# The aarch64 cross build and its tests on an x86-64 host (docs/arm64.md): configure and build
# the aarch64 preset, run its ctest under qemu-user (KSTACKLAB_EMULATED=qemu-user: the tests
# whose subject is the host kernel or the CPU itself skip, each saying why), then, when the
# native release build exists (build/, scripts/test.sh), run the native build's tests of the
# aarch64 binary (ctest label aarch64-compare): the models print the same on both architectures,
# and a campaign of Debian's arm64 kernel under qemu-system-aarch64 runs the aarch64 binary in its
# guest (tests/cross/campaign_qemu_arm64.sh). Usage: scripts/test-aarch64.sh [-jN]
# Times under emulation are not costs: nothing here measures anything.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${1:--j2}
if [ "$(uname -m)" = aarch64 ]; then
  echo "test-aarch64: this host is aarch64: the native build (scripts/test.sh) is the aarch64 build; nothing to cross-build"
  exit 0
fi
unset KSTACKLAB_STORE
start=$SECONDS
cmake --preset aarch64
cmake --build --preset aarch64 "$jobs"
echo "test-aarch64: cross build took $((SECONDS - start)) s"
start=$SECONDS
ctest --preset aarch64 "$jobs"
echo "test-aarch64: emulated ctest took $((SECONDS - start)) s"
if [ -x build/src/kstacklab ]; then
  start=$SECONDS
  ctest --test-dir build -L aarch64-compare --output-on-failure "$jobs"
  echo "test-aarch64: the native build's tests of the aarch64 binary took $((SECONDS - start)) s"
else
  echo "test-aarch64: no native build (build/src/kstacklab): run scripts/test.sh for the same-output check" >&2
  [ "${KSTACKLAB_NO_SKIP:-}" != 1 ] || exit 1
fi
