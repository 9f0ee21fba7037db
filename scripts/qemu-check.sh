#!/usr/bin/env bash
# Runs what this machine's CPU and kernel cannot show: boots Debian 12's own kernel
# (linux-image-amd64, 6.1) under QEMU software emulation (TCG, `-cpu max`, which implements PKU:
# CR4.PKE, WRPKRU/RDPKRU and the pkey check of every page-walk access), with an initramfs holding
# busybox and this build, and checks in the guest:
#   run    the main job, `kstacklab run` (default suite, 3 x 2000 calls: it works on that kernel),
#          the Micromm tests and `run --suite micromm --param size=64M` (the h:0/h:1 mappings are
#          what they claim on a kernel whose THP mode is `always`, Debian's default);
#   pkeys  micromm_test --gtest_filter='Pkeys.*' (a write outside the window faults in a child
#          with SEGV_PKUERR, inside it succeeds; PKRU is left as found; every pkeys row runs
#          through the runner: they skip nowhere here),
#          kstacklab run --suite pkeys, then kstacklab compare --bench pkeys/update;
#   live   live_test (the BPF probe on this older kernel: x & 0x3FF rounded up to 8 bytes, not
#          the v6.11+ x & 0x3F0), kstacklab entropy --kernel, attack timer --live and
#          attack migration --live.
# It brings back the log, the result files and the saved records, and exits non-zero unless every
# check passed (the pkeys tests ran, not skipped; all 7 pkeys rows were measured).
#
# Correctness, not cost: under TCG every instruction is translated and QEMU's WRPKRU helper
# flushes the emulated TLB, so its times are the emulator's. Figures from here are labelled
# "QEMU TCG" and never stand for hardware (docs/micromm.md, docs/live.md).
#
# usage: scripts/qemu-check.sh [BUILD_DIR] [OUT_DIR]
#   BUILD_DIR  a built tree holding src/kstacklab, tests/micromm_test, tests/live_test (default build)
#   OUT_DIR    where log.txt, console.txt and the results go (default BUILD_DIR/qemu-check)
# environment:
#   KSTACKLAB_QEMU_KERNEL   a bzImage to boot (default: Debian's linux-image-amd64, fetched with
#                           apt-get download into ~/.cache/kstacklab/qemu the first time)
#   KSTACKLAB_QEMU_RUN      `kstacklab run` flags for the pkeys suite (default:
#                           --repetitions 10 --iterations 2000)
#   KSTACKLAB_QEMU_SAMPLES  entropy --kernel / attack timer --live samples (default 100000)
#   KSTACKLAB_QEMU_TIMEOUT  seconds before the guest is killed (default 1200)
# needs: qemu-system-x86 busybox-static cpio (Debian packages: scripts/install-deps.sh --test)
set -euo pipefail

BUILD=${1:-build}
OUT=${2:-$BUILD/qemu-check}
RUN_FLAGS=${KSTACKLAB_QEMU_RUN:---repetitions 10 --iterations 2000}
SAMPLES=${KSTACKLAB_QEMU_SAMPLES:-100000}
TIMEOUT=${KSTACKLAB_QEMU_TIMEOUT:-1200}

die() { echo "qemu-check: $1" >&2; exit "${2:-1}"; }

for f in src/kstacklab tests/micromm_test tests/live_test; do
  [[ -x $BUILD/$f ]] \
    || die "no $f in '$BUILD': build first (cmake --preset release && cmake --build --preset release)" 2
done
[[ $SAMPLES =~ ^[0-9]+$ && $TIMEOUT =~ ^[0-9]+$ ]] \
  || die "KSTACKLAB_QEMU_SAMPLES and KSTACKLAB_QEMU_TIMEOUT must be whole numbers" 2
for tool in qemu-system-x86_64 cpio; do
  command -v "$tool" >/dev/null \
    || die "$tool not found: scripts/install-deps.sh --test (qemu-system-x86 busybox-static cpio)"
done
BUSYBOX=/bin/busybox
# ldd fails on a static executable; Debian's busybox-static is one, the plain busybox is not.
{ [[ -x $BUSYBOX ]] && ! ldd "$BUSYBOX" >/dev/null 2>&1; } \
  || die "a static busybox is needed: apt-get install busybox-static"

kernel=$("$(dirname "$0")/debian-kernel.sh") || die "no kernel to boot: set KSTACKLAB_QEMU_KERNEL to a bzImage"
[[ -r $kernel ]] || die "kernel '$kernel' is not readable" 2

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kstacklab-qemu-XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,proc,sys,dev,tmp,k}
cp "$BUSYBOX" "$root/bin/busybox"
bins=("$BUILD/src/kstacklab" "$BUILD/tests/micromm_test" "$BUILD/tests/live_test")
cp "${bins[@]}" "$root/k/"
# The dynamic loader and every library the binaries need, at the paths they were linked for.
for lib in $(ldd "${bins[@]}" | awk '/=> \// {print $3} /^\t\/lib/ {print $1}' | sort -u); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
# live_test reads its recorded fixtures from the source tree it was built from (a path baked in
# at build time): put them at the same path in the guest.
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
[[ -n $src && -d $src/tests/data/live ]] || die "cannot find the source tree of '$BUILD' (CMakeCache.txt)" 2
mkdir -p "$root$src/tests/data"
cp -r "$src/tests/data/live" "$root$src/tests/data/"

cat >"$root/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp
export PATH=/bin HOME=/tmp XDG_DATA_HOME=/tmp/data
mkdir -p /tmp/out
(
  set -x
  uname -r
  grep -m1 'model name' /proc/cpuinfo
  grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\\n' | grep -x -e pku -e ospke
  /k/kstacklab run --no-store --repetitions 3 --iterations 2000 -o /tmp/out/default.json; echo "default-run-rc=\$?"
  /k/micromm_test --gtest_filter='Micromm.*'; echo "micromm-tests-rc=\$?"
  /k/kstacklab run --no-store --suite micromm --param size=64M --repetitions 2 -o /tmp/out/micromm.json; echo "micromm-run-rc=\$?"
  /k/micromm_test --gtest_filter='Pkeys.*'; echo "pkeys-tests-rc=\$?"
  /k/kstacklab run --no-store --suite pkeys $RUN_FLAGS -o /tmp/out/pkeys.json; echo "pkeys-run-rc=\$?"
  /k/kstacklab compare /tmp/out/pkeys.json --bench pkeys/update --metrics mean,p50; echo "pkeys-compare-rc=\$?"
  /k/live_test; echo "live-tests-rc=\$?"
  /k/kstacklab entropy --kernel --samples $SAMPLES --cpu 0 --save-records /tmp/out/getpid-records.csv; echo "entropy-rc=\$?"
  /k/kstacklab attack timer --live --samples $SAMPLES; echo "timer-rc=\$?"
  /k/kstacklab attack migration --live --rounds 3000; echo "migration-rc=\$?"
) >/tmp/out/log.txt 2>&1
cat /tmp/out/log.txt
tar -C /tmp/out -cf - . | base64 >/dev/ttyS1
sync
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

echo "qemu-check: booting $(basename "$kernel") under QEMU TCG -cpu max (PKU emulated); up to ${TIMEOUT}s" >&2
: >"$work/ttyS1"
timeout "$TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 2048 \
  -display none -no-reboot -kernel "$kernel" -initrd "$work/initrd.gz" \
  -append "console=ttyS0 quiet panic=-1" \
  -serial "file:$OUT/console.txt" -serial "file:$work/ttyS1" \
  || die "QEMU failed or timed out after ${TIMEOUT}s: see $OUT/console.txt"
tr -d '\r' <"$work/ttyS1" | base64 -d | tar -x -C "$OUT" \
  || die "the guest sent no results back: see $OUT/console.txt"

cat "$OUT/log.txt"
failed=()
for check in default-run micromm-tests micromm-run pkeys-tests pkeys-run pkeys-compare live-tests entropy timer migration; do
  grep -q "^$check-rc=0\$" "$OUT/log.txt" || failed+=("$check")
done
# The pkeys tests must have run, not skipped: the guest's CPU has PKU. As many must pass as the
# shipped micromm_test holds (listed on the host: listing runs no test).
# (grep without -q: it reads all of sed's output, so sed never dies of SIGPIPE under pipefail)
npk=$("$BUILD/tests/micromm_test" --gtest_list_tests --gtest_filter='Pkeys.*' | grep -c '^  ')
sed -n "/gtest_filter=Pkeys/,/pkeys-tests-rc=/p" "$OUT/log.txt" | grep "PASSED.* $npk tests\." >/dev/null \
  || failed+=("pkeys-tests-not-all-run")
if [[ -f $OUT/pkeys.json ]]; then
  rows=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for b in d["benchmarks"] if b["name"].startswith("pkeys/")))' "$OUT/pkeys.json")
  [[ $rows == 7 ]] || failed+=("pkeys-rows=$rows")
fi
((${#failed[@]} == 0)) || die "failed in the guest: ${failed[*]} (see $OUT/log.txt)"
echo "qemu-check: PASS — pkeys under emulated PKU ($npk tests, 7 rows) and the live probe on $(basename "$kernel"); results in $OUT (QEMU TCG times: not hardware costs)" >&2
