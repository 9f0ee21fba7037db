#!/usr/bin/env bash
# End-to-end test of `kstacklab entropy --kernel`: a recorded fixture analysed without BPF, usage
# errors, and the live probe on this kernel (skipped, with the reason, only when the process
# cannot load BPF: not root, or a build without the probe).
# Usage: bash live_cli.sh KSTACKLAB_BINARY DATA_DIR
source "$(dirname "$0")/lib.bash"

expect_exit 0 "entropy --kernel --records fixture" -- \
  "$KSTACKLAB" entropy --kernel --records "$DATA/live/getpid-4096.csv" --lags 2
if tr -d '|' <"$TMP/out" | awk '$1 == "records" && $2 == 4096 && $3 == 64 { found = 1 } END { exit !found }'; then
  pass "fixture: 4096 samples, 64 distinct"
else
  fail "fixture: no row with 4096 samples and 64 distinct: $(cat "$TMP/out")"
fi
expect_stdout "in 4096 of 4096 records" "derived offsets checked against task_struct.kstack_offset"
expect_stdout "serial dependence" "serial dependence section"

expect_exit 0 "--records --format json" -- \
  "$KSTACKLAB" entropy --kernel --records "$DATA/live/getpid-4096.csv" --lags 3 --format json
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mode"] == "kernel", d
assert d["entropy"]["distinct"] == 64 and d["entropy"]["samples"] == 4096, d["entropy"]
assert [l["lag"] for l in d["serial_dependence"]] == [1, 2, 3], d["serial_dependence"]
for l in d["serial_dependence"]:
    for k in ("pairs", "mi_plugin_bits", "mi_miller_madow_bits", "mi_shuffled_mean_bits",
              "mi_shuffled_max_bits", "conditional_entropy_bits"):
        assert k in l, (k, l)
assert d["environment"]["design_state"] == "per-task", d["environment"]
assert d["offsets"]["state_agreeing"] == 4096, d["offsets"]
PY
then pass "json parses and has the fields"; else fail "json: $(head -c 400 "$TMP/out")"; fi

# A kernel of the plain-XOR era (x86-64, v5.13-v6.8): synthetic records whose offsets are
# (x & 0xFF) rounded up to 8 for every x in 0..1023. The geometry, its 33 offsets and its ideal
# (about 5.02 bits, not the 7.00 of the ror32 era) must follow.
python3 - "$TMP/plain-xor.csv" <<'PY'
import sys
base, h0 = 0xffffc90000000000, 16032
with open(sys.argv[1], "w") as f:
    f.write("local_addr,stack_base,ktime_ns,cpu,tid,nr,task_state,flags\n")
    for i in range(1024):
        off = ((i & 0xFF) + 7) & ~7
        f.write(f"{base + h0 - off:#x},{base:#x},{i},0,1,39,0,0\n")
PY
expect_exit 0 "entropy --kernel --records plain-XOR era" -- \
  "$KSTACKLAB" entropy --kernel --records "$TMP/plain-xor.csv" --lags 1
expect_stdout "plain-XOR era x86-64 (v5.13-v6.8" "plain-XOR era named"
expect_stdout "33 offsets {0, 8, ..., 256}" "its 33 offsets named"
expect_exit 0 "plain-XOR era --format json" -- \
  "$KSTACKLAB" entropy --kernel --records "$TMP/plain-xor.csv" --lags 1 --format json
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
g = d["offsets"]["geometry"]
assert g["count"] == 33 and g["max"] == 256 and g["align"] == 8 and g["mask"] == 255, g
assert abs(g["ideal_shannon_bits"] - 5.017) < 0.001, g
assert d["offsets"]["also_consistent"] == [], d["offsets"]
assert d["entropy"]["distinct"] == 33 and d["entropy"]["chi_square_p"] > 0.99, d["entropy"]
PY
then pass "plain-XOR era json: 33 offsets, 5.02-bit ideal"; else fail "plain-XOR json: $(head -c 400 "$TMP/out")"; fi

# Heights the samples cannot pin to one geometry: offsets 16..1024 once each fit v6.11+ and the
# 65-offset ror32 geometry with offset 0 not drawn about equally; both are named.
python3 - "$TMP/ambiguous.csv" <<'PY'
import sys
base, h0 = 0xffffc90000000000, 16032
with open(sys.argv[1], "w") as f:
    f.write("local_addr,stack_base,ktime_ns,cpu,tid,nr,task_state,flags\n")
    for i, off in enumerate(range(16, 1025, 16)):
        f.write(f"{base + h0 - off:#x},{base:#x},{i},0,1,39,0,0\n")
PY
expect_exit 0 "entropy --kernel --records ambiguous heights" -- \
  "$KSTACKLAB" entropy --kernel --records "$TMP/ambiguous.csv" --lags 1
expect_stdout "also consistent with these heights.*65 offsets" "the other geometry named"

# A v7.1+ kernel (per-CPU LFSR113 kstack_rnd_state, recorded in 12-column files): synthetic
# records stepped by an independent Python LFSR113 on two CPUs; record 1000 was preempted after
# its draw (its CPU's state stepped once more). Every other record agrees and every pair follows.
python3 - "$TMP/prng.csv" <<'PY'
import sys
M = 0xFFFFFFFF
def step(s):
    s1, s2, s3, s4 = s
    s1 = (((s1 & 0xFFFFFFFE) << 18) & M) ^ ((((s1 << 6) & M) ^ s1) >> 13)
    s2 = (((s2 & 0xFFFFFFF8) << 2) & M) ^ ((((s2 << 2) & M) ^ s2) >> 27)
    s3 = (((s3 & 0xFFFFFFF0) << 7) & M) ^ ((((s3 << 13) & M) ^ s3) >> 21)
    s4 = (((s4 & 0xFFFFFF80) << 13) & M) ^ ((((s4 << 3) & M) ^ s4) >> 12)
    return [s1, s2, s3, s4]
base, h0 = 0xffffc90000000000, 16032
states = [[0x12345679, 0x9abcdef8, 0x0fedcb90, 0x87654380],
          [0x2468ace1, 0x13579bd8, 0xfdb97530, 0xeca86420]]
with open(sys.argv[1], "w") as f:
    f.write("local_addr,stack_base,ktime_ns,cpu,tid,nr,task_state,flags,"
            "prng_s1,prng_s2,prng_s3,prng_s4\n")
    for i in range(2000):
        cpu = (i * 7 // 5) % 2
        for _ in range(i % 3):  # other tasks' syscalls on that CPU
            states[cpu] = step(states[cpu])
        states[cpu] = step(states[cpu])
        s = states[cpu]
        off = (s[0] ^ s[1] ^ s[2] ^ s[3]) & 0x3F0
        if i == 1000:
            states[cpu] = step(states[cpu])
            s = states[cpu]
        f.write(f"{base + h0 - off:#x},{base:#x},{i},{cpu},1,39,0x0,2,"
                f"{s[0]:#x},{s[1]:#x},{s[2]:#x},{s[3]:#x}\n")
PY
expect_exit 0 "entropy --kernel --records per-CPU generator" -- \
  "$KSTACKLAB" entropy --kernel --records "$TMP/prng.csv" --lags 1
expect_stdout "& 0x3F0 in 1999 of 2000 records; disagreeing: records 1000$" "per-record check and the mismatch"
expect_stdout "succession on each CPU: 1998 of 1998 consecutive pairs follow" "succession"
expect_exit 0 "per-CPU generator --format json" -- \
  "$KSTACKLAB" entropy --kernel --records "$TMP/prng.csv" --lags 1 --format json
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["prng_state"]
assert p["checked"] == 2000 and p["agreeing"] == 1999 and p["mismatches"] == [1000], p
assert p["pairs"] == 1998 and p["following"] == 1998 and p["broken"] == 0, p
assert p["breaks"] == [] and p["max_steps_searched"] == 65536 and p["max_steps"] >= 3, p
assert d["environment"]["design_state"] == "per-cpu-prng", d["environment"]
PY
then pass "per-CPU generator json"; else fail "per-CPU generator json: $(head -c 600 "$TMP/out")"; fi

expect_exit 2 "--kernel with a policy" -- "$KSTACKLAB" entropy --kernel percpu-prng
expect_stderr "drop the policy names" "policy with --kernel named"
expect_exit 2 "--syscall unknown" -- "$KSTACKLAB" entropy --kernel --syscall nosuch
expect_stderr "--syscall nosuch is not supported" "unknown syscall named"
expect_exit 2 "--lags 0" -- "$KSTACKLAB" entropy --kernel --lags 0
expect_stderr "--lags '0' is out of range: give a decimal integer from 1 to 64" "lags range named"
expect_exit 2 "--cpu 4096" -- "$KSTACKLAB" entropy --kernel --cpu 4096
expect_stderr "--cpu '4096' is out of range" "cpu named"
expect_exit 2 "--records missing file" -- "$KSTACKLAB" entropy --kernel --records "$TMP/nope.csv"

# The live probe. Skipped only where BPF really is unavailable to this process.
"$KSTACKLAB" entropy --kernel --samples 4096 --lags 1 --cpu 0 >"$TMP/live" 2>"$TMP/live.err"
rc=$?
if [ $rc -ne 0 ] && { [ "$(id -u)" -ne 0 ] || grep -q "built without the live probe" "$TMP/live.err"; }; then
  echo "skip: live probe unavailable: $(cat "$TMP/live.err")"
elif [ $rc -ne 0 ]; then
  fail "entropy --kernel exited $rc as root: $(cat "$TMP/live.err")"
elif tr -d '|' <"$TMP/live" | awk '$1 == "getpid" && $2 == 4096 && $3 == 64 { found = 1 } END { exit !found }'; then
  pass "live: 64 distinct offsets of getpid on this kernel"
else
  fail "live: not 64 distinct: $(cat "$TMP/live")"
fi

# The live attacks (same skip rule): JSON with mode "live" and the rows.
if [ "$(id -u)" -eq 0 ] && ! grep -q "built without the live probe" "$TMP/live.err"; then
  expect_exit 0 "attack timer --live" -- "$KSTACKLAB" attack timer --live --samples 4000 --format json
  if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mode"] == "live" and d["attack"] == "timer", d
assert [r["setting"] for r in d["rows"]] == ["guess", "tsc+leaks", "tsc+state"], d["rows"]
for r in d["rows"]:
    assert r["predicted"] == 1999 and 0 <= r["accuracy"] <= 1, r
PY
  then pass "timer --live json"; else fail "timer --live json: $(head -c 400 "$TMP/out")"; fi
  expect_exit 0 "attack migration --live" -- "$KSTACKLAB" attack migration --live --rounds 20 --format json
  if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mode"] == "live" and d["attack"] == "migration", d
r = d["rows"][0]
assert r["observations"] == 20 and r["migrated"] >= 1, r
PY
  then pass "migration --live json"; else fail "migration --live json: $(head -c 400 "$TMP/out")"; fi
else
  echo "skip: live attacks (not root or no sampler)"
fi
expect_exit 2 "--live --rounds 1" -- "$KSTACKLAB" attack migration --live --rounds 1
expect_stderr "--rounds 1 is out of range" "rounds range named"
finish
