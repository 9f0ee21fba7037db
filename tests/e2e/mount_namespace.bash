# Sourced first by a script that mounts a small tmpfs of its own: re-runs the script in a private
# mount namespace (root and `unshare -m`), so its mounts never reach the host. Without one it
# skips (77), a failure under KSTACKLAB_NO_SKIP=1 (CI), as lib.bash's skip_missing.
if [ -z "${KSTACKLAB_MOUNT_NS:-}" ]; then
  if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
    if [ "${KSTACKLAB_NO_SKIP:-}" = 1 ]; then
      echo "FAIL: needs root and unshare -m for a private tmpfs (KSTACKLAB_NO_SKIP=1: this test must run here)"
      exit 1
    fi
    echo "skip: needs root and unshare -m for a private tmpfs"
    exit 77
  fi
  exec unshare -m env KSTACKLAB_MOUNT_NS=1 bash "$0" "$@"
fi
