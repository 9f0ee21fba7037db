#!/usr/bin/env bash
# Prints the path of Debian 12's own kernel image (linux-image-amd64's vmlinuz), fetched once with
# `apt-get download` into ${XDG_CACHE_HOME:-~/.cache}/kstacklab/qemu, with its config-RELEASE
# beside it (as in /boot, where `kstacklab campaign` looks for a kernel's configuration), and the
# e1000 network driver module as e1000-RELEASE.ko (the ssh engine's test guest needs a network;
# Debian builds the driver as a module).
# Used by scripts/qemu-check.sh and the campaign tests. Exit 1 with a message when apt cannot
# fetch it (no network to Debian's mirror): set KSTACKLAB_QEMU_KERNEL to a bzImage instead.
#
# `--arch arm64`: Debian 12's arm64 kernel instead (linux-image-arm64's vmlinuz, an uncompressed
# arm64 Image with an EFI stub, 32 MB; the :arm64 package, fetched whatever this machine's
# architecture) and its config, into ${XDG_CACHE_HOME:-~/.cache}/kstacklab/qemu-arm64;
# KSTACKLAB_QEMU_KERNEL_ARM64 names one instead.
set -euo pipefail
if [[ ${1:-} == --arch ]]; then
  [[ ${2:-} == arm64 ]] || { echo "debian-kernel: --arch takes arm64" >&2; exit 2; }
  if [[ -n ${KSTACKLAB_QEMU_KERNEL_ARM64:-} ]]; then echo "$KSTACKLAB_QEMU_KERNEL_ARM64"; exit 0; fi
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/kstacklab/qemu-arm64
  mkdir -p "$cache"
  kernel=$(ls "$cache"/vmlinuz-* 2>/dev/null | tail -n 1 || true)
  if [[ -z $kernel || ! -f $cache/config-${kernel##*/vmlinuz-} ]]; then
    depends() { apt-cache depends linux-image-arm64:arm64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'; }
    pkg=$(depends)
    if [[ -z $pkg ]]; then apt-get update -qq >/dev/null 2>&1 || true; pkg=$(depends); fi
    [[ -n $pkg ]] || { echo "debian-kernel: no linux-image-arm64 package (dpkg --add-architecture arm64 && apt-get update); set KSTACKLAB_QEMU_KERNEL_ARM64" >&2; exit 1; }
    pkg=${pkg%:arm64}
    (cd "$cache" && apt-get download "$pkg:arm64" >/dev/null 2>&1) \
      || { echo "debian-kernel: apt-get download $pkg:arm64 failed; set KSTACKLAB_QEMU_KERNEL_ARM64" >&2; exit 1; }
    dpkg-deb --fsys-tarfile "$cache"/"$pkg"_*_arm64.deb \
      | tar -x -C "$cache" --wildcards --strip-components=2 './boot/vmlinuz-*' './boot/config-*'
    rm -f "$cache"/"$pkg"_*_arm64.deb
    kernel=$(ls "$cache"/vmlinuz-* | tail -n 1)
  fi
  echo "$kernel"
  exit 0
fi
if [[ -n ${KSTACKLAB_QEMU_KERNEL:-} ]]; then echo "$KSTACKLAB_QEMU_KERNEL"; exit 0; fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}/kstacklab/qemu
mkdir -p "$cache"
kernel=$(ls "$cache"/vmlinuz-* 2>/dev/null | tail -n 1 || true)
if [[ -z $kernel || ! -f $cache/config-${kernel##*/vmlinuz-} || ! -f $cache/e1000-${kernel##*/vmlinuz-}.ko ]]; then
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  if [[ -z $pkg ]]; then
    apt-get update -qq >/dev/null 2>&1 || true
    pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  fi
  [[ -n $pkg ]] || { echo "debian-kernel: cannot find Debian's linux-image package; set KSTACKLAB_QEMU_KERNEL" >&2; exit 1; }
  (cd "$cache" && apt-get download "$pkg" >/dev/null 2>&1) \
    || { echo "debian-kernel: apt-get download $pkg failed; set KSTACKLAB_QEMU_KERNEL" >&2; exit 1; }
  dpkg-deb --fsys-tarfile "$cache"/"$pkg"_*.deb \
    | tar -x -C "$cache" --wildcards --strip-components=2 './boot/vmlinuz-*' './boot/config-*'
  release=$(basename "$(ls "$cache"/vmlinuz-* | tail -n 1)"); release=${release#vmlinuz-}
  dpkg-deb --fsys-tarfile "$cache"/"$pkg"_*.deb \
    | tar -x -O --wildcards './lib/modules/*/kernel/drivers/net/ethernet/intel/e1000/e1000.ko' \
    >"$cache/e1000-$release.ko"
  rm -f "$cache"/"$pkg"_*.deb
  kernel=$(ls "$cache"/vmlinuz-* | tail -n 1)
fi
echo "$kernel"
