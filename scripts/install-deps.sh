#!/usr/bin/env bash
# Installs kstacklab's Debian 12 packages, by tier (scripts/packages.txt lists each package once,
# with what it is for):
#   scripts/install-deps.sh           the tool: build and run kstacklab (README command 1)
#   scripts/install-deps.sh --test    and every test of scripts/test.sh (README command 2)
#   scripts/install-deps.sh --all     and CI's lint, fuzzers, lava-dispatcher, perf; on amd64 the
#                                     aarch64 cross build (adds dpkg's arm64 architecture)
#   scripts/install-deps.sh --list [--test|--all]   print the packages, install nothing
#   scripts/install-deps.sh --table [--test|--all]  the same as the Markdown table README.md and
#                                     docs/install.md hold (ctest install_tiers compares them);
#                                     with --all the cross tier too, whatever the host
# Idempotent: installs only what is missing (root or sudo only then). Every package exists for
# amd64 and arm64 in Debian 12; on arm64 `--all` builds natively and needs no cross tier.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: scripts/install-deps.sh [--test | --all] [--list | --table]" >&2; exit 2; }
tier=tool
list=0
table=0
for a in "$@"; do
  case $a in
    --test) tier=test ;;
    --all) tier=all ;;
    --list) list=1 ;;
    --table) table=1 ;;
    --qemu) tier=test ;;  # old instructions: QEMU is in the test tier
    *) usage ;;
  esac
done
host_arch=$(dpkg --print-architecture)
case $tier in
  tool) tiers="tool" ;;
  test) tiers="tool test" ;;
  all) tiers="tool test all"; [ "$host_arch" != amd64 ] && [ $table = 0 ] || tiers="$tiers cross" ;;
esac
packages=()
rows=()
while IFS='|' read -r t pkgs what; do
  t=${t// /}
  case $t in ''|'#'*) continue ;; esac
  for want in $tiers; do
    if [ "$t" = "$want" ]; then
      read -ra words <<<"$pkgs"
      packages+=("${words[@]}")
      rows+=("| $t | $(printf '`%s` ' "${words[@]}" | sed 's/ $//') | ${what# } |")
    fi
  done
done < scripts/packages.txt
if [ $table = 1 ]; then
  echo "| tier | packages | for |"
  echo "|---|---|---|"
  printf '%s\n' "${rows[@]}"
  exit 0
fi
if [ $list = 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
updated=0
cross=0
case " $tiers " in *" cross "*) cross=1 ;; esac
if [ $cross = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "install-deps: adding the arm64 architecture (dpkg --add-architecture arm64) for the cross build"
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
  updated=1
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages of the '$tier' tier are present"
else
  echo "install-deps: installing the '$tier' tier's missing packages: ${missing[*]}"
  [ "$updated" = 1 ] || $SUDO apt-get update -qq
  updated=1
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ $cross = 1 ]; then
  # The arm64 libpq-dev and libyaml-cpp-dev, unpacked into the user's cache (as this user, not
  # root). An old package list may name a version the mirror no longer has: update once, retry.
  if [ "$updated" = 0 ] && ! scripts/arm64-dev-cache.sh >/dev/null 2>&1; then
    $SUDO apt-get update -qq
  fi
  scripts/arm64-dev-cache.sh >/dev/null
fi
