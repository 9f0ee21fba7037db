#!/usr/bin/env bash
# Installing kstacklab as a user would: `cmake --install` into a DESTDIR, then the installed
# binary runs `run` and `compare`, its man page renders, its bash and zsh completion load and
# complete; then the Debian package CPack builds installs with apt-get, answers --version, and
# removes cleanly (root only: without root that part is skipped, exit 77 at the end).
# Usage: bash install_package.sh BUILD_DIR
set -u
build=${1:?usage: install_package.sh BUILD_DIR}
TMP=$(mktemp -d)
installed_pkg=0
cleanup() {
  if [ "$installed_pkg" = 1 ]; then  # never leave the package behind, whatever failed
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq kstacklab >/dev/null 2>&1
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
check() {  # DESCRIPTION -- command...: passes when the command succeeds
  local what=$1; shift 2
  if "$@" >"$TMP/out" 2>"$TMP/err"; then pass "$what"; else fail "$what: $(head -c 400 "$TMP/err")"; fi
}

# 1. cmake --install into a DESTDIR, prefix /usr as the package has it.
dest="$TMP/dest"
check "cmake --install into a DESTDIR" -- env DESTDIR="$dest" cmake --install "$build" --prefix /usr
for f in usr/bin/kstacklab usr/share/man/man1/kstacklab.1 \
         usr/share/bash-completion/completions/kstacklab usr/share/zsh/vendor-completions/_kstacklab \
         usr/share/doc/kstacklab/README.md usr/share/doc/kstacklab/docs/store.md; do
  [ -f "$dest/$f" ] || fail "not installed: /$f"
done
k="$dest/usr/bin/kstacklab"

# 2. The installed binary works: --version names the commit, run and compare.
check "--version" -- "$k" --version
grep -Eq '^kstacklab [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}(\+changes)?|unknown), ' "$TMP/out" \
  || fail "--version does not name the commit: $(cat "$TMP/out")"
small=(--bench syscall/getpid --repetitions 3 --iterations 200 --warmup 10 --no-store)
check "installed run (a)" -- "$k" run "${small[@]}" --label a -o "$TMP/a.json"
check "installed run (b)" -- "$k" run "${small[@]}" --label b -o "$TMP/b.json"
check "installed compare" -- "$k" compare "$TMP/a.json" "$TMP/b.json"
grep -q 'syscall/getpid' "$TMP/out" || fail "compare's table lacks the row: $(head -c 400 "$TMP/out")"

# 3. The man page renders, without groff warnings, and documents the commands and options.
man1="$dest/usr/share/man/man1/kstacklab.1"
check "man -l renders the page" -- env MANWIDTH=100 LC_ALL=C.UTF-8 man -l "$man1"
for want in "kstacklab run" "kstacklab results copy" "--store" "EXIT STATUS" "KSTACKLAB_STORE"; do
  grep -qF -- "$want" "$TMP/out" || fail "the man page lacks '$want'"
done
groff -ww -z -man "$man1" >"$TMP/groff" 2>&1
[ -s "$TMP/groff" ] && fail "groff warns about the man page: $(head -c 400 "$TMP/groff")"

# 4. bash completion loads and completes.
bc="$dest/usr/share/bash-completion/completions/kstacklab"
check "bash: complete -p kstacklab" -- bash -c "source '$bc' && complete -p kstacklab"
grep -q -- '-F _kstacklab kstacklab' "$TMP/out" || fail "complete -p: $(cat "$TMP/out")"
complete_words() {  # WORDS...: what _kstacklab offers for the last word
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _kstacklab; echo "${COMPREPLY[*]}"' \
    _ "$bc" "$@"
}
[ "$(complete_words kstacklab results '')" = "list show export import copy -h --help --store" ] \
  || fail "bash: 'kstacklab results <TAB>' gives '$(complete_words kstacklab results '')'"
[ "$(complete_words kstacklab run --timing '')" = "percall loop" ] \
  || fail "bash: 'run --timing <TAB>' gives '$(complete_words kstacklab run --timing '')'"
[ "$(complete_words kstacklab com)" = "compare completion" ] \
  || fail "bash: 'kstacklab com<TAB>' gives '$(complete_words kstacklab com)'"
[ -z "$(complete_words kstacklab run --iterations '')" ] || fail "bash: a number completed to words"

# 5. zsh completion: valid zsh, and compinit finds and loads it from its directory.
zc="$dest/usr/share/zsh/vendor-completions/_kstacklab"
if command -v zsh >/dev/null 2>&1; then
  check "zsh: the script parses" -- zsh -n "$zc"
  check "zsh: compinit loads _kstacklab" -- zsh -f -c "fpath=('$(dirname "$zc")' \$fpath); autoload -Uz compinit; compinit -u -d '$TMP/zcompdump'; autoload -Uz _kstacklab; (( \${+functions[_kstacklab]} )) && [[ \${_comps[kstacklab]} = _kstacklab ]]"
else
  fail "zsh is not installed (scripts/install-deps.sh --test installs it)"
fi

# 6. The Debian package: built by CPack, installed with apt-get, removed cleanly.
if [ "$(id -u)" -ne 0 ]; then
  echo "skip: installing the Debian package needs root"
  [ "$failures" -eq 0 ] && exit 77
elif dpkg-query -W -f='${Status}' kstacklab 2>/dev/null | grep -q "install ok installed"; then
  fail "a kstacklab package is already installed here; this test will not replace it"
else
  check "cpack -G DEB" -- cpack -G DEB -B "$TMP/pkg" --config "$build/CPackConfig.cmake"
  deb=$(ls "$TMP"/pkg/kstacklab_*.deb 2>/dev/null | head -n 1)
  if [ -z "$deb" ]; then
    fail "cpack made no kstacklab_*.deb: $(tail -c 400 "$TMP/out")"
  else
    dpkg-deb -f "$deb" Depends >"$TMP/depends"
    grep -q 'libc6' "$TMP/depends" || fail "Depends does not come from the shared libraries: $(cat "$TMP/depends")"
    installed_pkg=1
    check "apt-get install ./kstacklab_*.deb" -- env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb"
    check "the package's kstacklab --version" -- /usr/bin/kstacklab --version
    grep -q '^kstacklab ' "$TMP/out" || fail "installed --version: $(cat "$TMP/out")"
    check "man kstacklab (from the package)" -- env MANWIDTH=100 man kstacklab
    dpkg -L kstacklab >"$TMP/files"
    check "apt-get purge kstacklab" -- env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq kstacklab
    installed_pkg=0
    dpkg-query -W -f='${Status}' kstacklab 2>/dev/null | grep -q "installed" && fail "still installed after purge"
    left=$(while read -r f; do [ -f "$f" ] && echo "$f"; done <"$TMP/files")
    [ -z "$left" ] || fail "files left after removal: $left"
  fi
fi

if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all checks passed"
