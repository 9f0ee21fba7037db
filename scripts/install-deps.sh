#!/usr/bin/env bash
# Installs kstacklab's build and run dependencies (Debian 12 packages only). Idempotent: installs
# only what is missing; needs root (or sudo) when something is missing. On amd64 it also installs
# what the aarch64 cross build and its emulated tests need (CROSS_ARM64 below, docs/arm64.md);
# on arm64 the same PACKAGES build natively (every one of them exists for arm64 in Debian 12).
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=(
  build-essential cmake ninja-build pkg-config  # toolchain
  libfmt-dev            # formatting of tables and messages
  libcli11-dev          # command-line parsing
  nlohmann-json3-dev    # result files, environment capture, JSON output
  libboost-math-dev     # Student-t / normal quantiles for the statistics
  libsqlite3-dev        # the results store (embedded default)
  libpq-dev             # the results store on PostgreSQL (--store postgresql://…), through libpq
  postgresql            # tests only: a throw-away server for the store tests (scripts/pg-test-server.sh)
  libsodium-dev         # independent cross-checks of ChaCha20 / SipHash in tests and benchmarks
  zlib1g-dev            # reading /proc/config.gz
  libgtest-dev          # unit tests
  libbenchmark-dev      # self-benchmarks under bench/
  gnuplot-nox           # kstacklab plot
  python3               # end-to-end test scripts check JSON with it
  clang-format          # the format check in CI (scripts/check-format.sh)
  clang-tidy            # the lint in CI (scripts/tidy.sh)
  linux-perf            # bench/compare-perf.sh runs `perf bench syscall basic` beside kstacklab
  libbpf-dev bpftool    # the live BPF probe (entropy --kernel, docs/live.md)
  llvm                  # llvm-symbolizer: readable ASan/UBSan and libFuzzer stack traces
  clang libclang-rt-14-dev  # the BPF program (clang -target bpf) and the libFuzzer targets (scripts/fuzz.sh)
  libyaml-cpp-dev       # campaign plan files (kstacklab campaign PLAN.yaml)
  qemu-system-x86 busybox-static  # the campaign engine `qemu` (a guest per boot; its tests boot Debian's kernel)
  qemu-system-arm       # the campaign engine `qemu` for arm64 kernels (qemu-system-aarch64 -M virt)
  cpio                  # the campaign tests list the generated initramfs with it; scripts/qemu-check.sh
  openssh-client        # the campaign engine `ssh` drives the machine with ssh; its test makes keys with ssh-keygen
  dropbear-bin          # the SSH server inside the ssh engine's test guest (tests/e2e/campaign_ssh.sh)
  kexec-tools           # kexec inside the ssh engine's test guest (the engine's machines need it too)
  lavacli               # the campaign engine `lava` submits and follows jobs with it
  lava-common           # LAVA's job schema: tests/e2e/campaign_lava.sh validates every generated job
  lava-dispatcher       # tests only: lava-run runs a generated job on a local qemu device (tests/e2e/campaign_lava_dispatcher.sh)
  man-db zsh            # tests only: the installed man page renders, the zsh completion loads
)
# The aarch64 cross build on an amd64 host (cmake --preset aarch64, scripts/test-aarch64.sh).
# Only the Multi-Arch: same :arm64 packages are installed beside the amd64 ones; libpq-dev and
# libyaml-cpp-dev are not (installing their :arm64 versions would remove the amd64 ones and break
# the native build), so scripts/arm64-dev-cache.sh unpacks those two into a cache instead and
# their shared libraries (libpq5, libyaml-cpp0.7) are installed here.
CROSS_ARM64=(
  crossbuild-essential-arm64  # aarch64-linux-gnu-gcc/g++ and the arm64 C library
  qemu-user-static      # qemu-aarch64: ctest runs the aarch64 tests under it (CMAKE_CROSSCOMPILING_EMULATOR)
  libc6:arm64 libstdc++6:arm64  # the arm64 loader and C++ runtime qemu-aarch64 runs the binaries with
  libfmt-dev:arm64 libsqlite3-dev:arm64 zlib1g-dev:arm64 libpq5:arm64 libyaml-cpp0.7:arm64  # the tool's libraries
  libgtest-dev:arm64 libsodium-dev:arm64  # the unit tests' libraries
  libbpf-dev:arm64      # the live probe in the aarch64 build (libbpf, its headers and the arm64 asm/ headers)
)
host_arch=$(dpkg --print-architecture)
cross=0
if [ "$host_arch" = amd64 ]; then
  cross=1
  PACKAGES+=("${CROSS_ARM64[@]}")
fi
# --qemu is kept for old instructions: QEMU is now always installed (the campaign engine).
if [ "${1:-}" = "--qemu" ]; then
  :
elif [ $# -gt 0 ]; then
  echo "usage: scripts/install-deps.sh [--qemu]" >&2
  exit 2
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
updated=0
if [ "$cross" = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "install-deps: adding the arm64 architecture (dpkg --add-architecture arm64)"
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
  updated=1
fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
else
  echo "install-deps: installing ${missing[*]}"
  [ "$updated" = 1 ] || $SUDO apt-get update -qq
  updated=1
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ "$cross" = 1 ]; then
  # The arm64 libpq-dev and libyaml-cpp-dev, unpacked into the user's cache (as this user, not
  # root). An old package list may name a version the mirror no longer has: update once, retry.
  if [ "$updated" = 0 ] && ! scripts/arm64-dev-cache.sh >/dev/null 2>&1; then
    $SUDO apt-get update -qq
  fi
  scripts/arm64-dev-cache.sh >/dev/null
fi
