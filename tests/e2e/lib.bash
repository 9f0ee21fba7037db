# Shared helpers for the end-to-end scripts: `bash script.sh KSTACKLAB DATA_DIR`.
set -u
KSTACKLAB=${1:?usage: script.sh KSTACKLAB_BINARY DATA_DIR}
DATA=${2:?usage: script.sh KSTACKLAB_BINARY DATA_DIR}
TMP=$(mktemp -d)
export XDG_DATA_HOME=$TMP/xdg   # never touch the user's real results store
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
# skip_missing REASON: a tool or a kernel image this test needs is missing — skip (exit 77), or,
# where KSTACKLAB_NO_SKIP=1 (CI, which installs everything), fail: CI never skips such a test.
skip_missing() {
  if [ "${KSTACKLAB_NO_SKIP:-}" = 1 ]; then
    echo "FAIL: $1 (KSTACKLAB_NO_SKIP=1: this test must run here)"
    exit 1
  fi
  echo "skip: $1"
  exit 77
}

# need_qemu_x86: what an x86-64 QEMU guest of Debian's kernel needs here (qemu-system-x86_64, a
# static busybox, the kernel: scripts/debian-kernel.sh, fetched once), the kernel's path in KERNEL;
# skips (77) without any of them (a failure under KSTACKLAB_NO_SKIP=1, as CI sets it).
need_qemu_x86() {
  command -v qemu-system-x86_64 >/dev/null || skip_missing "qemu-system-x86 is not installed (scripts/install-deps.sh --test)"
  [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || skip_missing "busybox-static is not installed (scripts/install-deps.sh --test)"
  KERNEL=$("$(dirname "${BASH_SOURCE[0]}")/../../scripts/debian-kernel.sh") \
    || skip_missing "Debian's kernel cannot be fetched (scripts/debian-kernel.sh said why)"
}

# expect_exit CODE DESCRIPTION -- command...; stdout/stderr kept in $TMP/out, $TMP/err
expect_exit() {
  local want=$1 what=$2; shift 3
  "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    fail "$what: exit $got, want $want; stderr: $(head -c 400 "$TMP/err")"
    return 1
  fi
  pass "$what (exit $got)"
}
expect_stderr() {  # PATTERN DESCRIPTION
  if grep -q -- "$1" "$TMP/err"; then pass "$2"; else fail "$2: stderr lacks '$1': $(head -c 400 "$TMP/err")"; fi
}
expect_stdout() {
  if grep -q -- "$1" "$TMP/out"; then pass "$2"; else fail "$2: stdout lacks '$1': $(head -c 400 "$TMP/out")"; fi
}
# fake_bzimage FILE: a 4 KiB file with an x86 boot header (boot_flag 0xAA55, "HdrS", protocol
# 2.00, no version string). The plan checks read only the header; nothing boots it.
fake_bzimage() {
  python3 - "$1" <<'PY'
import sys
img = bytearray(4096)
img[0x1FE:0x200] = b"\x55\xAA"
img[0x202:0x206] = b"HdrS"
img[0x206:0x208] = b"\x00\x02"
open(sys.argv[1], "wb").write(img)
PY
}
# wait_cpu_time PID TICKS: waits until process PID has used TICKS clock ticks of CPU time
# (utime + stime in /proc/PID/stat, getconf CLK_TCK per second) — progress that a loaded machine
# cannot fake, unlike a wall-clock sleep. Fails (returns 1) if PID exits first or after 120 s.
wait_cpu_time() {
  local pid=$1 want=$2 i stat rest
  for ((i = 0; i < 2400; i++)); do
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    rest=${stat##*) }   # the fields after "(comm) ": state is field 3, utime 14, stime 15
    read -r -a f <<<"$rest"
    if (( f[11] + f[12] >= want )); then return 0; fi
    sleep 0.05
  done
  return 1
}

finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
}
