# The models give the same output on x86-64 and aarch64: each seeded model command (rng sources,
# attacks) run by the native kstacklab and by the aarch64 one under qemu-user, outputs diffed
# byte for byte (stdout, stderr, exit code). Usage (a ctest of the native build, label
# aarch64-compare; scripts/test-aarch64.sh runs it after the cross build):
#   bash tests/cross/same_output.sh NATIVE_KSTACKLAB AARCH64_KSTACKLAB
# Skips (exit 77) without the aarch64 binary or qemu-aarch64, and fails instead where
# KSTACKLAB_NO_SKIP=1 (CI).
source "$(dirname "$0")/../e2e/lib.bash" "$1" "$(dirname "$0")/../data"
ARM=${2:?usage: same_output.sh NATIVE_KSTACKLAB AARCH64_KSTACKLAB}
QEMU=$(command -v qemu-aarch64-static || command -v qemu-aarch64) ||
  skip_missing "no qemu-aarch64: apt-get install qemu-user-static (scripts/install-deps.sh --all)"
[ -x "$ARM" ] || skip_missing "no aarch64 build at $ARM: scripts/test-aarch64.sh builds it"
file_arch=$(od -An -tx1 -j18 -N2 "$ARM" | tr -d ' ')
[ "$file_arch" = b700 ] || { fail "$ARM is not an aarch64 ELF binary (e_machine $file_arch)"; finish; }
[ "$(uname -m)" != aarch64 ] || skip_missing "this host is aarch64: the native binary is the aarch64 one"

export TZ=UTC LC_ALL=C
K32=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
CASES=(
  "rng prandom --seed 1 --count 2000"
  "rng prandom --state 0x12345678,0x9abcdef0,0x13579bdf,0x2468ace0 --count 500"
  "rng chacha20 --count 64 --key $K32 --nonce 000000090000004a00000000 --counter 1"
  "rng crng-u16 --count 2000 --base-key $K32"
  "rng crng-u32 --count 500 --base-key $K32"
  "rng siphash --key 000102030405060708090a0b0c0d0e0f --u64 1"
  "rng siphash --key 000102030405060708090a0b0c0d0e0f --u64 1 --u64 2"
  "attack prng-recover --policy percpu-prng --observations 12 --observations 24 --trials 2 --predict 500 --seed 5"
  "attack prng-recover --policy percpu-prng --policy siphash --observations 24 --trials 2 --predict 2000 --format json --seed 5"
  "attack migration --syscalls 5000 --seed 3 --format json"
  "attack timer --resolution-hz 24e6 --resolution-hz 1e9 --jitter-ns 5 --samples 5000 --seed 9"
  "entropy off --samples 5000 --format json"
  "rng prandom --key 00"
)
n=0
for c in "${CASES[@]}"; do
  read -r -a args <<<"$c"
  n=$((n + 1))
  "$KSTACKLAB" "${args[@]}" >"$TMP/x86.out" 2>"$TMP/x86.err"
  echo "rc $?" >>"$TMP/x86.err"
  "$QEMU" "$ARM" "${args[@]}" >"$TMP/arm.out" 2>"$TMP/arm.err"
  echo "rc $?" >>"$TMP/arm.err"
  if [ ! -s "$TMP/x86.out" ] && ! grep -q "rng prandom --key" <<<"$c"; then
    fail "kstacklab $c: no output on x86-64: $(head -c 300 "$TMP/x86.err")"
  elif cmp -s "$TMP/x86.out" "$TMP/arm.out" && cmp -s "$TMP/x86.err" "$TMP/arm.err"; then
    pass "kstacklab $c: same stdout ($(wc -c <"$TMP/x86.out") bytes), stderr and exit code"
  else
    fail "kstacklab $c differs between x86-64 and aarch64: $(diff "$TMP/x86.out" "$TMP/arm.out" | head -5) $(diff "$TMP/x86.err" "$TMP/arm.err" | head -5)"
  fi
done
finish
