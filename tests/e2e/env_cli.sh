#!/usr/bin/env bash
# End-to-end test of `kstacklab env [--json]`.
# Usage: bash env_cli.sh KSTACKLAB_BINARY DATA_DIR
. "$(dirname "$0")/lib.bash"
bin=$KSTACKLAB
data=$DATA
tmp=$TMP

# 1. JSON on a fixture root: exact fields.
KSTACKLAB_SYSROOT="$data/sysinfo/x86_vm_gz" "$bin" env --json >"$tmp/vm.json" 2>"$tmp/vm.err"
rc=$?
[ "$rc" -eq 0 ] || fail "env --json on fixture: exit $rc (stderr: $(cat "$tmp/vm.err"))"
[ -s "$tmp/vm.err" ] && fail "env --json on fixture wrote to stderr: $(cat "$tmp/vm.err")"
python3 - "$tmp/vm.json" <<'PY' || fail "env --json on fixture: fields differ (see above)"
import json, sys
env = json.load(open(sys.argv[1]))
want = {
    ("kernel", "release"): "6.18.0-kstacklab-vm",
    ("kernel", "randomize_kstack_offset"): "off",
    ("kernel", "effective_kstack_randomization"): False,
    ("config", "source"): "/proc/config.gz",
    ("config", "options", "CONFIG_KSTACK_ERASE"): "y",
    ("config", "options", "CONFIG_INIT_STACK_ALL_ZERO"): "y",
    ("config", "preemption"): "dynamic(full)",
    ("config", "hz"): 1000,
    ("sysctl", "kernel.stack_erasing"): 1,
    ("cpu", "count_online"): 4,
    ("cpu", "flags", "hypervisor"): True,
    ("cpu", "clocksource"): "kvm-clock",
    ("vulnerabilities", "meltdown"): "Not affected",
    ("virtualization", "is_vm"): True,
    ("problems",): [],
}
bad = 0
for path, value in want.items():
    cur = env
    for k in path:
        cur = cur[k]
    if cur != value:
        print(f"  {'.'.join(path)} = {cur!r}, want {value!r}")
        bad += 1
keys = list(env.keys())
if keys != ["kernel", "config", "sysctl", "cpu", "vulnerabilities", "virtualization", "tool", "problems"]:
    print("  top-level keys:", keys); bad += 1
sys.exit(1 if bad else 0)
PY

# 2. Garbled fixture: still exit 0, problems listed, unknowns are null.
KSTACKLAB_SYSROOT="$data/sysinfo/garbled" "$bin" env --json >"$tmp/garbled.json" 2>/dev/null
rc=$?
[ "$rc" -eq 0 ] || fail "env --json on garbled fixture: exit $rc"
python3 -c '
import json, sys
env = json.load(open(sys.argv[1]))
assert env["config"]["source"] is None, env["config"]
assert env["sysctl"]["kernel.stack_erasing"] is None
assert any("not a valid gzip stream" in p for p in env["problems"]), env["problems"]
' "$tmp/garbled.json" || fail "env --json on garbled fixture: unexpected content"

# 3. Readable summary on a fixture.
KSTACKLAB_SYSROOT="$data/sysinfo/x86_vm_gz" "$bin" env >"$tmp/vm.txt" 2>&1
rc=$?
[ "$rc" -eq 0 ] || fail "env on fixture: exit $rc"
grep -q '^config (/proc/config.gz):$' "$tmp/vm.txt" || fail "env summary lacks the config header"
grep -q '^  \[vm\] running in a virtual machine (QEMU)$' "$tmp/vm.txt" || fail "env summary lacks the vm warning"
grep -q 'remedy: cpupower frequency-set -g performance' "$tmp/vm.txt" || fail "env summary lacks the governor remedy"

# 4. The real machine: exit 0, summary and valid JSON naming the running kernel.
"$bin" env >"$tmp/real.txt" 2>"$tmp/real.err"
rc=$?
[ "$rc" -eq 0 ] || fail "env on this machine: exit $rc (stderr: $(cat "$tmp/real.err"))"
grep -q '^kernel:$' "$tmp/real.txt" || fail "env on this machine: no kernel group"
grep -Eq '^  step: [0-9.]+ ns' "$tmp/real.txt" || fail "env on this machine: no timer step"
grep -q '^timer' "$tmp/vm.txt" && fail "env on a fixture shows this machine's timer"
"$bin" env --json >"$tmp/real.json" 2>/dev/null
rc=$?
[ "$rc" -eq 0 ] || fail "env --json on this machine: exit $rc"
python3 -c '
import json, sys, os
env = json.load(open(sys.argv[1]))
assert env["kernel"]["release"] == os.uname().release, env["kernel"]["release"]
assert env["tool"]["version"], env["tool"]
' "$tmp/real.json" || fail "env --json on this machine: release differs from uname -r"

# 5. Unknown flag: usage error, exit 2.
# --format json is --json (the word every command's --format uses); text is the plain form.
KSTACKLAB_SYSROOT="$data/sysinfo/x86_vm_gz" "$bin" env --format json >"$tmp/vm2.json" 2>/dev/null
cmp -s "$tmp/vm.json" "$tmp/vm2.json" && pass "env --format json prints what --json does" \
  || fail "env --format json differs from --json"
KSTACKLAB_SYSROOT="$data/sysinfo/x86_vm_gz" "$bin" env --format text >"$tmp/vm.txt" 2>/dev/null
KSTACKLAB_SYSROOT="$data/sysinfo/x86_vm_gz" "$bin" env >"$tmp/vm0.txt" 2>/dev/null
cmp -s "$tmp/vm.txt" "$tmp/vm0.txt" && pass "env --format text is the default" || fail "env --format text differs from env"
expect_exit 2 "env --format csv" -- "$bin" env --format csv
expect_stderr "text" "env --format csv: names the formats"
expect_exit 2 "env --format json --json" -- "$bin" env --format json --json
"$bin" list --format json >"$tmp/list1.json" 2>/dev/null && "$bin" list --json >"$tmp/list2.json" 2>/dev/null
cmp -s "$tmp/list1.json" "$tmp/list2.json" && python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))) > 10' "$tmp/list1.json" \
  && pass "list --format json prints what --json does" || fail "list --format json differs from --json"
"$bin" env --bogus >/dev/null 2>"$tmp/bogus.err"
rc=$?
[ "$rc" -eq 2 ] || fail "env --bogus: exit $rc, want 2"

finish
