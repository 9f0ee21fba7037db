# kstacklab campaign: every hostile plan or flag is refused with exit 2 before the first boot, and
# nothing is written (the campaign directory is not created). No guest is booted here.
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
D=$TMP/c   # the campaign directory: must not exist after any refusal

# A file with an x86 boot header (boot_flag 0xAA55, "HdrS", protocol 2.00, no version string):
# CheckPlan reads only the header, and nothing here boots it.
fake_bzimage "$TMP/bzImage"
python3 -c 'import sys; open(sys.argv[1], "wb").write(b"not a kernel\n" * 100)' "$TMP/notkernel"
BZ=$TMP/bzImage

refused() {  # DESCRIPTION STDERR-PATTERN -- command...
  local what=$1 pattern=$2; shift 2
  expect_exit 2 "$what" "$@" && expect_stderr "$pattern" "$what: says why"
  if [ -e "$D" ]; then fail "$what: $D was created"; rm -rf "$D"; fi
  if [ "$(grep -c . "$TMP/err")" -ne 1 ]; then fail "$what: more than one line on stderr"; fi
}
plan() { printf '%s\n' "$@" >"$TMP/plan.yaml"; }

refused "no mode" "give one of --dir" -- "$K" campaign
refused "missing kernel" "kernel '/nonexistent'" -- "$K" campaign --kernel /nonexistent --profile a=x --boots 1 --dir "$D"
refused "not a kernel image" "is not a kernel image kstacklab knows" -- "$K" campaign --kernel "$TMP/notkernel" --profile a=x --boots 1 --dir "$D"
refused "duplicate profile names" "given twice" -- "$K" campaign --kernel "$BZ" --profile a=x --profile a=y --boots 1 --dir "$D"
refused "profile without =" "NAME=CMDLINE" -- "$K" campaign --kernel "$BZ" --profile justaname --boots 1 --dir "$D"
refused "profile name with a slash" "profile name" -- "$K" campaign --kernel "$BZ" --profile 'a/b=x' --boots 1 --dir "$D"
refused "profile name with a colon (compare's separator)" "profile name" -- "$K" campaign --kernel "$BZ" --profile 'a:b=x' --boots 1 --dir "$D"
refused "negative boots" "--boots" -- "$K" campaign --kernel "$BZ" --profile a=x --boots -1 --dir "$D"
refused "zero boots" "--boots" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 0 --dir "$D"
refused "no boots and no target" "--boots N" -- "$K" campaign --kernel "$BZ" --profile a=x --dir "$D"
refused "bad run arguments" "do not parse as .kstacklab run" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --dir "$D" -- --repetitions abc
refused "unknown run flag" "do not parse as .kstacklab run" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --dir "$D" -- --frobnicate
refused "a run flag the campaign sets" "the campaign sets -o" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --dir "$D" -- -o /tmp/x.json
refused "--label in the run" "the campaign sets --label" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --dir "$D" -- --label=z
refused "cmdline with a newline" "printable ASCII" -- "$K" campaign --kernel "$BZ" --profile "$(printf 'a=x\ny')" --boots 1 --dir "$D"
refused "unknown accel" "accel" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --accel fast --dir "$D"
# The shorthand's engine flags are read by the engine's own reader (its ranges, qemu.h), and
# each message names the flag.
refused "--cpus above the engine's 64" "--cpus" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --cpus 65 --dir "$D"
refused "--cpus 0" "--cpus" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --cpus 0 --dir "$D"
refused "--boot-timeout below 10 s" "--boot-timeout" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --boot-timeout 9s --dir "$D"
refused "--init-timeout above 1 h" "--init-timeout" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --init-timeout 2h --dir "$D"
refused "--init-timeout not below --boot-timeout" "init_timeout must be shorter" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --boot-timeout 1min --init-timeout 1min --dir "$D"
refused "--memory longer than 16 bytes" "--memory is longer than 16 bytes" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --memory 12345678901234567G --dir "$D"
refused "--accel with a control character" "--accel" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --accel "$(printf 'k\tvm')" --dir "$D"
refused "--target-mdc above 1000" 'is out of range; give a number in \[0.01, 1000\]' -- "$K" campaign --kernel "$BZ" --profile a=x --profile b=y --target-mdc 1001 --dir "$D"
refused "target with one profile" "two profiles" -- "$K" campaign --kernel "$BZ" --profile a=x --target-mdc 2 --dir "$D"
# The store each boot is recorded in is checked before boot 1 too (SQLite file or PostgreSQL URL).
refused "a store URL with a password" "~/.pgpass" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --dir "$D" --store 'postgresql://u:secret@127.0.0.1:1/x'
expect_exit 1 "a store server that does not answer" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --dir "$D" --store 'postgresql://u@127.0.0.1:1/x'
expect_stderr "is the server running" "a store server that does not answer: says so"
if [ -e "$D" ]; then fail "a store server that does not answer: $D was created"; rm -rf "$D"; fi
mkdir -p "$TMP/used" && touch "$TMP/used/x"
expect_exit 2 "a non-empty directory" -- "$K" campaign --kernel "$BZ" --profile a=x --boots 1 --dir "$TMP/used"
expect_stderr "--resume" "a non-empty directory: points to --resume"
[ "$(ls "$TMP/used")" = x ] && pass "a non-empty directory: left as it was" || fail "a non-empty directory was changed"

# Plan files.
plan "profiles:" "  - {name: off, kernel: $BZ, cmdline: randomize_kstack_offset=off}" "boots: 2" "colour: blue"
refused "unknown top-level key" "unknown key 'colour'" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles:" "  - {name: off, kernel: $BZ, kernal: x}" "boots: 2"
refused "unknown profile key" "unknown key 'kernal'" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles:" "  - {name: off, kernel: $BZ}" "  - {name: off, kernel: $BZ}" "boots: 2"
refused "duplicate names in a plan" "given twice" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles:" "  - {name: off, kernel: /no/such/vmlinuz}" "boots: 2"
refused "missing kernel in a plan" "/no/such/vmlinuz" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles:" "  - {name: off, kernel: $BZ}" "boots: -3"
refused "negative boots in a plan" "boots" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles:" "  - {name: off, kernel: $BZ}" "boots: 2" "target: {mdc_pct: 2}"
refused "boots and target" "not both" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles:" "  - {name: off, kernel: $BZ}" "boots: 2" "run: [--suite, syscall, --sessions, zero]"
refused "bad run arguments in a plan" "do not parse" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles:" "  - {name: off, kernel: $BZ}" "boots: 2" "run: --suite syscall"
refused "run not a list" "must be a list" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles: [" "boots: 2"
refused "not YAML" "not valid YAML" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles:" "  - {name: off, kernel: $BZ, sysctl: {'kernel/../../etc/passwd': 1}}" "boots: 2"
refused "a sysctl name that walks out of /proc/sys" "sysctl" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles:" "  - {name: off, kernel: $BZ}" "boots: 2" "engine: {name: telnet}"
refused "an engine that does not exist" "engine name 'telnet' is unknown" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
# Engine ssh: every key checked before boot 1 (no machine is contacted by a refused plan).
P="profiles: [{name: off, kernel: $BZ}]"
plan "$P" "boots: 1" "engine: {name: ssh}"
refused "ssh without a host" "needs a host" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "$P" "boots: 1" "engine: {name: ssh, host: -oProxyCommand=touch /tmp/pwned}"
refused "an ssh host that is an option" "not a host name" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "$P" "boots: 1" "engine: {name: ssh, host: 'sut;touch /tmp/pwned'}"
refused "an ssh host with a ;" "not a host name" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "$P" "boots: 1" "engine: {name: ssh, host: sut, user: '-oX'}"
refused "an ssh user that is an option" "not a user name" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "$P" "boots: 1" "engine: {name: ssh, host: sut, port: 0}"
refused "port 0" "port" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "$P" "boots: 1" "engine: {name: ssh, host: sut, switch: warp}"
refused "an unknown switch" "kexec, reboot or alternate" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "$P" "boots: 1" "engine: {name: ssh, host: sut, switch: alternate}"
refused "reboot without a boot entry" "needs a boot_entry" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "$P" "boots: 1" "engine: {name: ssh, host: sut, remote_dir: relative/dir}"
refused "a relative remote_dir" "absolute path" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "$P" "boots: 1" "engine: {name: ssh, host: sut, boot_timeout: forever}"
refused "a boot_timeout that is not a duration" "boot_timeout" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "$P" "boots: 1" "engine: {name: ssh, host: sut, recover: [/no/such/pdu-tool, cycle]}"
refused "a recover command that does not exist" "recover" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "$P" "boots: 1" "engine: {name: ssh, host: sut, cpus: 4}"
refused "a qemu key under engine ssh" "unknown key 'cpus'" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "$P" "boots: 1" "engine: {name: ssh, host: sut, ssh_config: /no/such/config}"
refused "a missing ssh_config" "ssh_config" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
# Engine lava.
plan "$P" "boots: 1" "engine: {name: lava}"
refused "lava with a local kernel path" "not a URL" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles: [{name: off, kernel: 'https://x/bz', cmdline: 'a=\"b\"'}]" "boots: 1" "engine: {name: lava}"
refused "lava qemu with a quote in the command line" "cannot hold quotes" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles: [{name: off, kernel: 'https://x/bz'}]" "boots: 1" "engine: {name: lava, rootfs: 'file:///a b'}"
refused "lava rootfs with a space" "not a URL" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
plan "profiles: [{name: off, kernel: 'https://x/bz'}]" "boots: 1" "engine: {name: lava, lavacli: /no/such/lavacli}"
refused "lava without lavacli" "lavacli" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
[ ! -e /tmp/pwned ] && pass "no refused plan ran anything" || fail "/tmp/pwned exists"
: >"$TMP/plan.yaml"
refused "an empty plan" "empty" -- "$K" campaign "$TMP/plan.yaml" --dir "$D"
# YAML bombs: deep nesting, and nested aliases (a billion laughs), both small as text.
python3 -c 'print("profiles: " + "[" * 100000 + "]" * 100000)' >"$TMP/deep.yaml"
refused "deep nesting" "larger than" -- "$K" campaign "$TMP/deep.yaml" --dir "$D"
python3 -c 'print("profiles: " + "[" * 20000 + "]" * 20000)' >"$TMP/deep2.yaml"
refused "deep nesting within the size limit" "deeper than" -- "$K" campaign "$TMP/deep2.yaml" --dir "$D"
python3 - "$TMP/laughs.yaml" <<'PY'
import sys
lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
for i in range(1, 12):
    lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i-1}"] * 10) + "]")
lines.append("profiles: *a11")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
refused "a billion laughs" "aliases" -- timeout 20 "$K" campaign "$TMP/laughs.yaml" --dir "$D"
head -c 70000 /dev/zero | tr '\0' '#' >"$TMP/big.yaml"
refused "a plan over 64 KiB" "larger than" -- "$K" campaign "$TMP/big.yaml" --dir "$D"
printf 'profiles:\n  - {name: "\xff", kernel: x}\nboots: 1\n' >"$TMP/utf.yaml"
refused "a plan that is not UTF-8" "UTF-8" -- "$K" campaign "$TMP/utf.yaml" --dir "$D"

# --resume / --report of something that is not a campaign.
mkdir -p "$TMP/empty"
expect_exit 2 "--report of a directory without campaign.json" -- "$K" campaign --report "$TMP/empty"
echo '{"schema": "kstacklab-campaign/1", "plan": 5}' >"$TMP/empty/campaign.json"
expect_exit 2 "--resume of a damaged campaign.json" -- "$K" campaign --resume "$TMP/empty"
expect_stderr "damaged" "--resume of a damaged campaign.json: says so"
expect_exit 2 "--resume with a plan file as well" -- "$K" campaign --resume "$TMP/empty" "$TMP/plan.yaml"
finish
