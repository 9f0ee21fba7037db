#!/usr/bin/env bash
# The two arm64 development packages that Debian 12 cannot install beside their amd64 versions
# (libpq-dev and libyaml-cpp-dev are not Multi-Arch: same: installing libpq-dev:arm64 removes
# libpq-dev, and with it the native build). They are fetched with `apt-get download` and
# unpacked, never installed, into a cache directory that cmake/aarch64-linux-gnu.cmake searches:
#   ${XDG_CACHE_HOME:-~/.cache}/kstacklab/arm64-dev/<package>_<version>/usr/...
# Their shared libraries (libpq5:arm64, libyaml-cpp0.7:arm64) are Multi-Arch: same and installed
# by scripts/install-deps.sh --all; the unpacked development links are pointed at them. Idempotent:
# a package whose version is already unpacked is not fetched again. Prints the cache directory.
set -euo pipefail
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/kstacklab/arm64-dev
LIBDIR=/usr/lib/aarch64-linux-gnu
mkdir -p "$CACHE"
for pkg in libpq-dev libyaml-cpp-dev; do
  version=$(apt-cache show --no-all-versions "$pkg:arm64" 2>/dev/null | sed -n 's/^Version: //p' | head -1)
  if [ -z "$version" ]; then
    echo "arm64-dev-cache: no $pkg:arm64 in the package lists: run scripts/install-deps.sh --all (it adds the arm64 architecture and runs apt-get update)" >&2
    exit 1
  fi
  dir=$CACHE/${pkg}_${version//:/%3a}
  if [ -d "$dir/usr" ]; then
    continue
  fi
  work=$(mktemp -d "$CACHE/.fetch.XXXXXX")
  # apt-get download writes into the current directory, as the _apt user when it can.
  chmod 755 "$work"
  (cd "$work" && apt-get download -qq "$pkg:arm64=$version") >/dev/null 2>&1 ||
    { rm -rf "$work"; echo "arm64-dev-cache: apt-get download $pkg:arm64=$version failed: run apt-get update" >&2; exit 1; }
  dpkg-deb -x "$work"/*.deb "$work/root"
  # Development links point at the shared library beside them (libpq.so -> libpq.so.5.15),
  # which is installed under $LIBDIR, not unpacked here: point them there.
  for link in "$work/root$LIBDIR"/*.so; do
    [ -L "$link" ] || continue
    ln -sfn "$LIBDIR/$(readlink "$link")" "$link"
  done
  # yaml-cpp's CMake package names the library by its full version under its own prefix.
  for lib in "$LIBDIR"/libyaml-cpp.so.*; do
    [ "$pkg" = libyaml-cpp-dev ] && [ -e "$lib" ] && ln -sfn "$lib" "$work/root$LIBDIR/${lib##*/}"
  done
  # pkg-config files name /usr: make them name the unpacked tree. Requires.private (libpq's
  # libssl, libcrypto) only matters to a static link, which the cross build never does; dropped so
  # that pkg-config does not ask for their arm64 -dev packages.
  for pc in "$work/root$LIBDIR"/pkgconfig/*.pc; do
    sed -i -e "s|^prefix=/usr\$|prefix=$dir/usr|" -e '/^Requires.private:/d' "$pc"
  done
  rm -rf "$dir"
  mv "$work/root" "$dir"
  rm -rf "$work"
done
echo "$CACHE"
