#!/usr/bin/env bash
# Installs kstacklab's build and run dependencies (Debian 12 packages only). Idempotent: installs
# only what is missing; needs root (or sudo) when something is missing.
set -euo pipefail
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
  cpio                  # the campaign tests list the generated initramfs with it; scripts/qemu-check.sh
  openssh-client        # the campaign engine `ssh` drives the machine with ssh; its test makes keys with ssh-keygen
  dropbear-bin          # the SSH server inside the ssh engine's test guest (tests/e2e/campaign_ssh.sh)
  kexec-tools           # kexec inside the ssh engine's test guest (the engine's machines need it too)
  lavacli               # the campaign engine `lava` submits and follows jobs with it
  lava-common           # LAVA's job schema: tests/e2e/campaign_lava.sh validates every generated job
  lava-dispatcher       # tests only: lava-run runs a generated job on a local qemu device (tests/e2e/campaign_lava_dispatcher.sh)
  man-db zsh            # tests only: the installed man page renders, the zsh completion loads
)
# --qemu is kept for old instructions: QEMU is now always installed (the campaign engine).
if [ "${1:-}" = "--qemu" ]; then
  :
elif [ $# -gt 0 ]; then
  echo "usage: scripts/install-deps.sh [--qemu]" >&2
  exit 2
fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all dependencies present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
