#!/usr/bin/env bash
# End-to-end test of `kstacklab attack`: the three attacks on the models (table and JSON), the
# separations the issue asks for, reproducibility for a seed, usage errors (exit 2).
# Usage: bash attack_cli.sh KSTACKLAB_BINARY DATA_DIR
source "$(dirname "$0")/lib.bash"

expect_exit 0 "prng-recover table" -- "$KSTACKLAB" attack prng-recover --policy percpu-prng \
  --observations 12 --observations 24 --trials 2 --predict 500
if awk -F'|' '$2 ~ /percpu-prng/ && $4+0 == 24 && $10 ~ /^ recovered/ { f = 1 } END { exit !f }' "$TMP/out"; then
  pass "24 offsets: recovered"
else
  fail "no recovered row for 24 offsets: $(cat "$TMP/out")"
fi
if awk -F'|' '$2 ~ /percpu-prng/ && $4+0 == 12 && $10 ~ /rank below 113: not recovered/ { f = 1 } END { exit !f }' "$TMP/out"; then
  pass "12 offsets: rank reported, not recovered"
else
  fail "12 offsets row wrong: $(cat "$TMP/out")"
fi
expect_stdout "Claim: " "footer states the claim"

expect_exit 0 "prng-recover json" -- "$KSTACKLAB" attack prng-recover --policy percpu-prng \
  --policy siphash --observations 24 --trials 2 --predict 2000 --format json
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "kstacklab-attack/1" and d["attack"] == "prng-recover", d
assert d["mode"] == "model" and d["seed"] == 1 and abs(d["chance"] - 1 / 64) < 1e-12
rows = {r["design"]: r for r in d["rows"]}
for r in rows.values():
    for k in ("setting", "observations", "predicted", "correct", "accuracy", "chance",
              "remaining_bits", "verdict", "rank", "check_bits", "candidates",
              "candidates_lower_bound", "recovered"):
        assert k in r, (k, r)
p, s = rows["percpu-prng"], rows["siphash"]
assert p["accuracy"] == 1 and p["recovered"] == "2/2" and p["rank"] == 113, p
assert p["candidates"] == 1 and p["candidates_lower_bound"] is False, p
assert s["recovered"] == "0/2" and s["accuracy"] < 2 / 64, s
PY
then pass "json: percpu-prng recovered, siphash at chance"; else fail "json: $(head -c 600 "$TMP/out")"; fi

expect_exit 0 "migration json" -- "$KSTACKLAB" attack migration --syscalls 5000 --seed 3 --format json
cp "$TMP/out" "$TMP/mig1.json"
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = {r["design"]: r for r in d["rows"]}
assert rows["legacy-arm64"]["accuracy"] > 0.5, rows["legacy-arm64"]
assert rows["per-task"]["accuracy"] < 2 / 64, rows["per-task"]
assert rows["percpu-prng"]["accuracy"] < 2 / 64, rows["percpu-prng"]
assert rows["uniform"]["verdict"] == "chance"
PY
then pass "migration separates legacy per-CPU from per-task / percpu-prng"; else fail "migration: $(head -c 600 "$TMP/out")"; fi
expect_exit 0 "migration again, same seed" -- "$KSTACKLAB" attack migration --syscalls 5000 --seed 3 --format json
if cmp -s "$TMP/out" "$TMP/mig1.json"; then pass "same seed, same output"; else fail "migration not reproducible"; fi

expect_exit 0 "timer table" -- "$KSTACKLAB" attack timer --resolution-hz 24e6 --resolution-hz 1e9 \
  --jitter-ns 5 --samples 5000
expect_stdout "24 MHz" "24 MHz row"
expect_stdout "1 GHz" "1 GHz row"
expect_stdout "uniform" "uniform reference row"

expect_exit 2 "unknown attack" -- "$KSTACKLAB" attack no-such-attack
expect_exit 2 "prng-recover unsupported policy" -- "$KSTACKLAB" attack prng-recover --policy legacy-x86
expect_stderr "--policy legacy-x86 is not supported" "policy named"
expect_stderr "percpu-prng" "valid policies listed"
expect_exit 2 "--gaps 9" -- "$KSTACKLAB" attack prng-recover --gaps 9
expect_stderr "--gaps 9 is out of range" "--gaps range named"
expect_exit 2 "--migrate-prob 2" -- "$KSTACKLAB" attack migration --migrate-prob 2
expect_stderr "--migrate-prob 2 is out of range; give a number in \[0, 1\]" "--migrate-prob range named"
expect_exit 2 "--migrate-prob half" -- "$KSTACKLAB" attack migration --migrate-prob half
expect_stderr "--migrate-prob 'half' is not a number; give e.g. 0.5" "--migrate-prob not a number"
expect_exit 2 "--migrate-prob 1e999" -- "$KSTACKLAB" attack migration --migrate-prob 1e999
expect_stderr "not a number" "--migrate-prob overflow is not a number"
# A probability too small for a normal double is a (subnormal) probability, not a syntax error.
expect_exit 0 "--migrate-prob 1e-320" -- "$KSTACKLAB" attack migration --migrate-prob 1e-320 --syscalls 5000
expect_exit 2 "--cpus 1" -- "$KSTACKLAB" attack migration --cpus 1
expect_exit 2 "--resolution-hz fast" -- "$KSTACKLAB" attack timer --resolution-hz fast
expect_stderr "--resolution-hz 'fast'" "--resolution-hz named"
expect_exit 2 "--format xml" -- "$KSTACKLAB" attack timer --format xml
expect_stderr "--format xml" "--format named"

# Work beyond the bound (60 s or 512 MiB, estimated before anything runs) is refused
# with the estimate, what to reduce and --allow-long; the defaults run.
expect_exit 2 "migration 1e8 syscalls x 1024 cpus x other-rate 100" -- "$KSTACKLAB" attack migration \
  --syscalls 100000000 --cpus 1024 --other-rate 100
expect_stderr "attack migration: the requested work is estimated at about .* days" "estimate given"
expect_stderr "give --allow-long" "--allow-long named"
if [ "$(wc -l <"$TMP/err")" -eq 1 ]; then pass "one line"; else fail "not one line: $(cat "$TMP/err")"; fi
expect_exit 2 "prng-recover --gaps 8 --search-budget 4e7" -- "$KSTACKLAB" attack prng-recover \
  --gaps 8 --search-budget 40000000
expect_stderr "attack prng-recover: the requested work is estimated at about .* h and .* GiB" "time and memory"
expect_exit 2 "prng-recover --search-budget 1e9 (accepted range, still bounded)" -- "$KSTACKLAB" \
  attack prng-recover --gaps 8 --search-budget 1000000000 --trials 1 --observations 12 --policy uniform
expect_stderr "GiB" "memory of 1e9 nodes"
expect_exit 2 "timer --measure --measure-calls 1e8" -- "$KSTACKLAB" attack timer --measure \
  --measure-calls 100000000 --resolution-hz 1e9
expect_stderr "attack timer: the requested work is estimated at .* and 1.5 GiB" "memory named"
expect_exit 2 "timer --samples 1e8 over 15 rows" -- "$KSTACKLAB" attack timer --samples 100000000 \
  --resolution-hz 24e6 --resolution-hz 1e9 --jitter-ns 1 --jitter-ns 2 --jitter-ns 3 --jitter-ns 4 --jitter-ns 5
expect_exit 0 "within the bound with --allow-long" -- "$KSTACKLAB" attack migration --syscalls 1000 \
  --allow-long --policy percpu-prng
expect_exit 0 "default prng-recover within the bound" -- "$KSTACKLAB" attack prng-recover --trials 1
# A non-terminal stderr gets no progress line.
expect_exit 0 "no progress off a terminal" -- "$KSTACKLAB" attack migration --syscalls 2000000 \
  --cpus 4 --policy legacy-x86
if [ ! -s "$TMP/err" ]; then pass "stderr empty"; else fail "stderr: $(cat -v "$TMP/err")"; fi
# On a terminal: "[ NN%] ETA ...  attack migration", erased at the end, stdout untouched.
if python3 - "$KSTACKLAB" "$TMP/pty" <<'PY'
import os, pty, subprocess, sys
m, s = pty.openpty()
with open(sys.argv[2], "wb") as out:
    p = subprocess.Popen([sys.argv[1], "attack", "migration", "--syscalls", "30000000", "--cpus", "8",
                          "--policy", "percpu-prng", "--policy", "legacy-x86", "--format", "json"],
                         stdout=out, stderr=s)
os.close(s)
err = b""
while True:
    try:
        d = os.read(m, 4096)
    except OSError:
        break
    if not d:
        break
    err += d
assert p.wait() == 0
assert b"% ETA" not in err or err.endswith(b"\r\x1b[K"), err[-80:]
assert b"attack migration" in err, err[:200]
import json
json.load(open(sys.argv[2]))
PY
then pass "progress on a terminal, erased, JSON intact"; else fail "progress on a pty"; fi

# --live refuses the model's flags (they were ignored, and "seed 0" was printed after
# --seed 5), one line naming the flag, before anything live is tried (no root needed).
for flag in "--cpus 4" "--syscalls 1000" "--migrate-prob 0.1" "--user-migrate-prob 0.1" \
  "--other-rate 1" "--policy percpu-prng" "--seed 5" "--allow-long"; do
  # shellcheck disable=SC2086
  expect_exit 2 "migration --live $flag" -- "$KSTACKLAB" attack migration --live $flag
  expect_stderr "^kstacklab: error: ${flag%% *} does not apply to \`attack migration --live\`" "${flag%% *} named"
done
for flag in "--jitter-ns 5" "--resolution-hz 24e6" "--measure" "--seed 5" "--allow-long"; do
  # shellcheck disable=SC2086
  expect_exit 2 "timer --live $flag" -- "$KSTACKLAB" attack timer --live $flag
  expect_stderr "^kstacklab: error: ${flag%% *} does not apply to \`attack timer --live\`" "${flag%% *} named"
  if [ "$(wc -l <"$TMP/err")" -eq 1 ]; then pass "one line"; else fail "not one line: $(cat "$TMP/err")"; fi
done

finish
