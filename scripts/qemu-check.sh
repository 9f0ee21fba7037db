#!/usr/bin/env bash
# Runs the pkeys code on a CPU with PKU when this machine has none: boots Debian's kernel under
# QEMU software emulation (TCG, `-cpu max`, which implements PKU: CR4.PKE, WRPKRU/RDPKRU and the
# pkey checks of the page walk), with an initramfs holding busybox and this build, and runs
#   1. micromm_test --gtest_filter='Pkeys.*'  (a write outside the window faults in a child,
#      inside it succeeds; every pkeys row runs through the runner) — they skip nowhere here;
#   2. kstacklab run --suite pkeys, then kstacklab compare --bench pkeys/update.
# It brings back the log and the result file and exits non-zero unless the tests passed and the
# run measured all 7 pkeys rows.
#
# This checks that the code is right on PKU; it is NOT a cost measurement: under TCG every
# instruction is translated and QEMU's WRPKRU helper flushes the emulated TLB, so a switch costs
# what the emulator makes it cost. Figures from here are labelled "QEMU TCG" and never stand for
# hardware (docs/micromm.md, "Checking pkeys without PKU").
#
# usage: scripts/pku-qemu.sh [BUILD_DIR] [OUT_DIR]
#   BUILD_DIR  a built tree holding src/kstacklab and tests/micromm_test (default build)
#   OUT_DIR    where log.txt, pkeys.json and console.txt go (default BUILD_DIR/pku-qemu)
# environment:
#   KSTACKLAB_QEMU_KERNEL  a bzImage to boot (default: Debian's linux-image-amd64, fetched with
#                          apt-get download into ~/.cache/kstacklab/qemu the first time)
#   KSTACKLAB_QEMU_RUN     extra `kstacklab run` flags (default: --repetitions 10 --iterations 2000)
#   KSTACKLAB_QEMU_TIMEOUT seconds before the guest is killed (default 900)
# needs: qemu-system-x86 busybox-static cpio (Debian packages: scripts/install-deps.sh --qemu)
set -euo pipefail

BUILD=${1:-build}
OUT=${2:-$BUILD/pku-qemu}
RUN_FLAGS=${KSTACKLAB_QEMU_RUN:---repetitions 10 --iterations 2000}
TIMEOUT=${KSTACKLAB_QEMU_TIMEOUT:-900}

die() { echo "pku-qemu: $*" >&2; exit "${2:-1}"; }

[[ -x $BUILD/src/kstacklab && -x $BUILD/tests/micromm_test ]] \
  || die "no built kstacklab in '$BUILD': build first (cmake --preset release && cmake --build --preset release)" 2
for tool in qemu-system-x86_64 cpio; do
  command -v "$tool" >/dev/null || die "$tool not found: apt-get install qemu-system-x86 busybox-static cpio"
done
BUSYBOX=/bin/busybox
# ldd fails on a static executable; Debian's busybox-static is one, the plain busybox is not.
{ [[ -x $BUSYBOX ]] && ! ldd "$BUSYBOX" >/dev/null 2>&1; } \
  || die "a static busybox is needed: apt-get install busybox-static"

kernel=${KSTACKLAB_QEMU_KERNEL:-}
if [[ -z $kernel ]]; then
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/kstacklab/qemu
  mkdir -p "$cache"
  kernel=$(ls "$cache"/vmlinuz-* 2>/dev/null | tail -n 1 || true)
  if [[ -z $kernel ]]; then
    pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    [[ -n $pkg ]] || die "cannot find Debian's linux-image package: set KSTACKLAB_QEMU_KERNEL to a bzImage"
    (cd "$cache" && apt-get download "$pkg" >/dev/null 2>&1) \
      || die "apt-get download $pkg failed: set KSTACKLAB_QEMU_KERNEL to a bzImage"
    dpkg-deb --fsys-tarfile "$cache"/"$pkg"_*.deb | tar -x -C "$cache" --wildcards --strip-components=2 './boot/vmlinuz-*'
    rm -f "$cache"/"$pkg"_*.deb
    kernel=$(ls "$cache"/vmlinuz-* | tail -n 1)
  fi
fi
[[ -r $kernel ]] || die "kernel '$kernel' is not readable" 2

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kstacklab-pku-XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,proc,sys,dev,tmp,k,lib64,lib/x86_64-linux-gnu}
cp "$BUSYBOX" "$root/bin/busybox"
cp "$BUILD/src/kstacklab" "$BUILD/tests/micromm_test" "$root/k/"
# The dynamic loader and every library the two binaries need, at the paths they were linked for.
for lib in $(ldd "$BUILD/src/kstacklab" "$BUILD/tests/micromm_test" | awk '/=> \// {print $3} /^\t\/lib/ {print $1}' | sort -u); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done

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
  /k/micromm_test --gtest_filter='Pkeys.*' --gtest_brief=0; echo "gtest-rc=\$?"
  /k/kstacklab run --no-store --suite pkeys $RUN_FLAGS -o /tmp/out/pkeys.json; echo "run-rc=\$?"
  /k/kstacklab compare /tmp/out/pkeys.json --bench pkeys/update --metrics mean,p50; echo "compare-rc=\$?"
) >/tmp/out/log.txt 2>&1
cat /tmp/out/log.txt
tar -C /tmp/out -cf - . | base64 >/dev/ttyS1
sync
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

echo "pku-qemu: booting $(basename "$kernel") under QEMU TCG -cpu max (PKU emulated); up to ${TIMEOUT}s" >&2
: >"$work/ttyS1"
timeout "$TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 2048 \
  -display none -no-reboot -kernel "$kernel" -initrd "$work/initrd.gz" \
  -append "console=ttyS0 quiet panic=-1 transparent_hugepage=madvise" \
  -serial "file:$OUT/console.txt" -serial "file:$work/ttyS1" \
  || die "QEMU failed or timed out after ${TIMEOUT}s: see $OUT/console.txt"
tr -d '\r' <"$work/ttyS1" | base64 -d | tar -x -C "$OUT" \
  || die "the guest sent no results back: see $OUT/console.txt"

cat "$OUT/log.txt"
grep -q '^gtest-rc=0$' "$OUT/log.txt" || die "the Pkeys tests failed under PKU: see $OUT/log.txt"
grep -q 'PASSED.* 3 tests' "$OUT/log.txt" || die "not all 3 Pkeys tests ran (a skip?): see $OUT/log.txt"
grep -q '^run-rc=0$' "$OUT/log.txt" || die "kstacklab run --suite pkeys failed: see $OUT/log.txt"
rows=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for b in d["benchmarks"] if b["name"].startswith("pkeys/")))' "$OUT/pkeys.json")
[[ $rows == 7 ]] || die "the run measured $rows pkeys rows, not 7: see $OUT/log.txt"
echo "pku-qemu: PASS — 3 Pkeys tests passed and 7 pkeys rows measured under emulated PKU; $OUT/pkeys.json (QEMU TCG figures: not hardware costs)" >&2
