# kstacklab campaign with the real binary and stand-ins for ssh and lavacli on PATH (no machine,
# no lab, no guest): a machine that refuses SSH before the first boot fails in seconds naming
# host, port and ssh's error; SIGTERM while lavacli hangs ends the campaign at once (exit 143),
# the attempt recorded "interrupted" (not a try) and the campaign resumable; an image cut after
# its setup header and a guest larger than the host are refused before boot 1 (exit 2, nothing
# written).
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
BIN=$TMP/bin
mkdir -p "$BIN"
python3 - "$TMP/bzImage" "$TMP/cut" "$TMP/busybox" <<'PY'
import sys
img = bytearray(4096)
img[0x1FE:0x200] = b"\x55\xAA"
img[0x202:0x206] = b"HdrS"
img[0x206:0x208] = b"\x0F\x02"   # protocol 2.15
open(sys.argv[1], "wb").write(img)
img[0x1F1] = 4                  # (4 + 1) * 512 bytes of setup, then 1 MiB of kernel declared
img[0x1F4:0x1F8] = (0x10000).to_bytes(4, "little")
open(sys.argv[2], "wb").write(img)
elf = bytearray(120)            # a static ELF64 (one PT_LOAD, no interpreter): "busybox"
elf[0:6] = b"\x7fELF\x02\x01"    # little endian, for this machine (the engine checks its arch)
import platform
elf[18:20] = (183 if platform.machine() == "aarch64" else 62).to_bytes(2, "little")
elf[0x20] = 64; elf[0x36] = 56; elf[0x38] = 1; elf[64] = 1
open(sys.argv[3], "wb").write(elf)
PY
chmod +x "$TMP/busybox"

# 1. A machine that refuses the connection before boot 1: no wait for boot_timeout.
cat >"$BIN/ssh" <<'SH'
#!/bin/sh
echo "ssh: connect to host 127.0.0.1 port 2222: Connection refused" >&2
exit 255
SH
chmod +x "$BIN/ssh"
cat >"$TMP/ssh.yaml" <<YAML
profiles: [{name: off, kernel: $TMP/bzImage}]
boots: 1
engine: {name: ssh, host: sut.example, port: 2222, boot_timeout: 60s, connect_timeout: 2s}
YAML
start=$SECONDS
PATH=$BIN:$PATH expect_exit 1 "a machine that refuses SSH before boot 1" -- "$K" campaign "$TMP/ssh.yaml" --no-store --dir "$TMP/c1"
took=$((SECONDS - start))
[ "$took" -lt 30 ] && pass "it failed in $took s, not after boot_timeout (60 s)" || fail "it took $took s"
expect_stderr "sut.example:2222" "the error names host and port"
expect_stderr "Connection refused" "the error quotes ssh"

# 2. SIGTERM while lavacli hangs in a submit.
cat >"$BIN/lavacli" <<SH
#!/bin/sh
case "\$1 \$2" in
  "jobs submit") touch "$TMP/hanging"; exec sleep 600 ;;
esac
exit 0
SH
chmod +x "$BIN/lavacli"
cat >"$TMP/lava.yaml" <<YAML
profiles: [{name: off, kernel: "https://lab.example/bzImage"}]
boots: 1
engine: {name: lava, lavacli: $BIN/lavacli}
YAML
"$K" campaign "$TMP/lava.yaml" --no-store --dir "$TMP/c2" >"$TMP/out" 2>"$TMP/err" &
cpid=$!
for ((i = 0; i < 300; i++)); do [ -e "$TMP/hanging" ] && break; sleep 0.1; done
[ -e "$TMP/hanging" ] || fail "lavacli was never called: $(cat "$TMP/err")"
kill -TERM "$cpid"
start=$SECONDS
for ((i = 0; i < 200; i++)); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$cpid" 2>/dev/null; then
  fail "the campaign still ran 20 s after SIGTERM"
  kill -9 "$cpid"
fi
wait "$cpid"
rc=$?
[ "$rc" = 143 ] && pass "SIGTERM during a hanging submit: exit 143 after $((SECONDS - start)) s" || fail "exit $rc: $(cat "$TMP/err")"
python3 - "$TMP/c2" <<'PY' && pass "the attempt is interrupted, not a try, and the campaign resumable" || fail "state after SIGTERM"
import json, os, sys
s = json.load(open(os.path.join(sys.argv[1], "campaign.json")))
assert s["status"] == "interrupted", s["status"]
b = s["boots"][0]
assert b["status"] == "pending", b
assert [a["outcome"] for a in b["attempts"]] == ["interrupted"], b["attempts"]
PY

# 3. Refused before boot 1, nothing written: an image cut after its header, and memory the host
# does not have.
sed -e "s|$TMP/bzImage|$TMP/cut|" "$TMP/ssh.yaml" >"$TMP/cut.yaml"
PATH=$BIN:$PATH expect_exit 2 "an image cut after its setup header" -- "$K" campaign "$TMP/cut.yaml" --no-store --dir "$TMP/c3"
expect_stderr "is cut short: its setup header declares 1051136 bytes" "it names both sizes"
[ ! -e "$TMP/c3" ] && pass "nothing written" || fail "$TMP/c3 was created"
cat >"$TMP/mem.yaml" <<YAML
profiles: [{name: off, kernel: $TMP/bzImage}]
boots: 1
engine: {name: qemu, qemu: /bin/true, busybox: $TMP/busybox, accel: tcg, memory: 999999G}
YAML
expect_exit 2 "memory: 999999G" -- "$K" campaign "$TMP/mem.yaml" --no-store --dir "$TMP/c4"
expect_stderr "engine memory 999999G is more than this host has" "it names the value and MemTotal"
[ ! -e "$TMP/c4" ] && pass "nothing written" || fail "$TMP/c4 was created"
finish
