# kstacklab campaign: kernel images by architecture, through the shorthand a user types. Each
# image that is not a bootable kernel of a known format (a truncated arm64 Image, a RISC-V Image,
# a PE file that is neither, an ELF vmlinux, random bytes, an empty file), an arm64 image beside
# x86 ones, and a kstacklab binary of the wrong architecture are refused before any boot: exit 2,
# one line naming the file and what it is, nothing booted (a stand-in qemu-system-x86_64 records
# any start), no campaign directory. The ssh engine refuses a machine whose `uname -m` is not the
# images' (a stand-in ssh). Debian's own arm64 kernel (scripts/debian-kernel.sh --arch arm64) is
# read as an aarch64 Image with its release. The qemu engine refuses an arm64 plan with a busybox of
# another architecture, and KVM for arm64 kernels on an x86-64 host.
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$TMP/c
BIN=$TMP/bin
mkdir -p "$BIN"
# Nothing may boot: a QEMU that records that it was started.
cat >"$BIN/qemu-system-x86_64" <<SH
#!/bin/sh
echo "\$*" >>"$TMP/qemu-started"
exit 1
SH
chmod +x "$BIN/qemu-system-x86_64"
cp "$BIN/qemu-system-x86_64" "$BIN/qemu-system-aarch64"
export PATH=$BIN:$PATH

python3 - "$TMP" <<'PY'
import gzip, os, random, struct, sys
d = sys.argv[1]
def w(name, data):
    open(os.path.join(d, name), "wb").write(data)
bz = bytearray(4096)
bz[0x1FE:0x200] = b"\x55\xAA"; bz[0x202:0x206] = b"HdrS"; bz[0x206:0x208] = b"\x00\x02"
bz[0x20E:0x210] = struct.pack("<H", 0x400); v = b"6.1.0-57-amd64 (debian) #1"; bz[0x600:0x600 + len(v)] = v
w("bzImage", bz)
def image(size, magic=0x644d5241, declared=None):
    img = bytearray(size)
    img[0:2] = b"MZ"; img[24:32] = struct.pack("<Q", 0xA); img[0x38:0x3C] = struct.pack("<I", magic)
    img[0x3C:0x40] = struct.pack("<I", 0x40); img[0x40:0x44] = b"PE\0\0"
    img[0x44:0x48] = struct.pack("<HH", 0xAA64, 1); img[0x54:0x56] = struct.pack("<H", 0xA0)
    s = 0x40 + 24 + 0xA0; declared = declared or size
    img[s:s + 8] = b".text\0\0\0"; img[s + 16:s + 24] = struct.pack("<II", declared - 0x1000, 0x1000)
    b = b"Linux version 6.1.0-57-arm64 (debian-kernel@lists.debian.org) #1"; img[300000:300000 + len(b)] = b
    return bytes(img)
w("Image", image(1 << 20))
w("Image.gz", gzip.compress(image(1 << 20)))
w("Image.cut", image(1 << 20)[:8192])
w("riscv-Image", image(1 << 20, magic=0x05435352))
pe = bytearray(4096); pe[0:2] = b"MZ"; pe[0x3C:0x40] = struct.pack("<I", 0x80); pe[0x80:0x84] = b"PE\0\0"
w("efi.exe", pe)
def elf(cls, data, machine):
    h = bytearray(64); h[0:4] = b"\x7fELF"; h[4] = cls; h[5] = data; h[6] = 1
    h[16:18] = struct.pack("<H", 2); h[18:20] = struct.pack("<H" if data == 1 else ">H", machine)
    return bytes(h)
w("vmlinux", elf(2, 1, 62) + bytes(8192))
w("random", bytes([0x51]) + random.Random(7).randbytes(65535))
w("empty", b"")
w("kstacklab-aarch64", elf(2, 1, 183))
w("kstacklab-x86_64", elf(2, 1, 62))
w("kstacklab-arm32", elf(1, 1, 40))
PY
chmod +x "$TMP"/kstacklab-*

refused() {  # DESCRIPTION STDERR-PATTERN -- command...
  local what=$1 pattern=$2; shift 2
  expect_exit 2 "$what" "$@" && expect_stderr "$pattern" "$what: says what it found"
  if [ -e "$D" ]; then fail "$what: $D was created"; rm -rf "$D"; fi
  if [ "$(grep -c . "$TMP/err")" -ne 1 ]; then fail "$what: not one line on stderr: $(cat "$TMP/err")"; fi
  if [ -e "$TMP/qemu-started" ]; then fail "$what: QEMU was started"; rm -f "$TMP/qemu-started"; fi
}
shorthand() {  # IMAGE [FLAGS...]: the shorthand a user types, two profiles, one boot each
  local image=$1; shift
  "$K" campaign --kernel "$image" "$@" --profile off=randomize_kstack_offset=off \
    --profile on=randomize_kstack_offset=on --boots 1 --no-store --dir "$D" -- --bench syscall/getpid
}

# 1. Images that are no bootable kernel of a known format.
refused "a truncated arm64 Image" "kernel image '$TMP/Image.cut' is an arm64 Image cut short: 8192 bytes of the 1048576" -- shorthand "$TMP/Image.cut" --kstacklab "$TMP/kstacklab-aarch64"
refused "a RISC-V Image" "'$TMP/riscv-Image' is a RISC-V kernel Image" -- shorthand "$TMP/riscv-Image"
refused "a PE file that is neither" "'$TMP/efi.exe' is a PE/EFI file but neither an x86 bzImage" -- shorthand "$TMP/efi.exe"
refused "an ELF vmlinux" "'$TMP/vmlinux' is an ELF file (a vmlinux?), not a bootable image; give the bootable one" -- shorthand "$TMP/vmlinux"
refused "random bytes" "'$TMP/random' is not a kernel image kstacklab knows (it starts 51" -- shorthand "$TMP/random"
refused "an empty file" "'$TMP/empty' is empty" -- shorthand "$TMP/empty"
refused "a directory" "'$TMP' is not a regular file" -- shorthand "$TMP"

# 2. Architectures: one per campaign, and the kstacklab of it.
cat >"$TMP/mixed.yaml" <<YAML
profiles:
  - {name: off, kernel: $TMP/bzImage, cmdline: randomize_kstack_offset=off}
  - {name: on, kernel: $TMP/Image, cmdline: randomize_kstack_offset=on}
boots: 1
run: [--bench, syscall/getpid]
YAML
refused "an arm64 Image beside an x86 bzImage" "profile 'off' kernel '$TMP/bzImage' is x86_64 but profile 'on' kernel '$TMP/Image' is aarch64" -- "$K" campaign "$TMP/mixed.yaml" --no-store --dir "$D"
refused "an x86 image with an arm64 kstacklab" "kstacklab '$TMP/kstacklab-aarch64' is built for aarch64 but profile 'off' kernel '$TMP/bzImage' is x86_64" -- shorthand "$TMP/bzImage" --kstacklab "$TMP/kstacklab-aarch64"
refused "a 32-bit kstacklab" "kstacklab '$TMP/kstacklab-arm32' is a 32-bit ELF file" -- shorthand "$TMP/bzImage" --kstacklab "$TMP/kstacklab-arm32"
refused "a kstacklab that is not there" "kstacklab '$TMP/no-kstacklab': No such file" -- shorthand "$TMP/bzImage" --kstacklab "$TMP/no-kstacklab"
refused "a kstacklab that is a script" "is not an ELF executable" -- shorthand "$TMP/bzImage" --kstacklab "$ROOT/scripts/golden.sh"
if [ "$(uname -m)" = x86_64 ]; then
  refused "an arm64 Image with this (x86) kstacklab" "kernel '$TMP/Image' is aarch64 but this kstacklab is built for x86_64: name a kstacklab built for aarch64" -- shorthand "$TMP/Image"
fi
# The qemu engine boots arm64 images on QEMU's virt with a busybox of that architecture.
cat >"$TMP/bb.yaml" <<YAML
profiles:
  - {name: off, kernel: $TMP/Image.gz, cmdline: randomize_kstack_offset=off}
  - {name: on, kernel: $TMP/Image.gz, cmdline: randomize_kstack_offset=on}
boots: 1
kstacklab: $TMP/kstacklab-aarch64
run: [--bench, syscall/getpid]
engine: {name: qemu, busybox: /bin/busybox}
YAML
if [ "$(uname -m)" = x86_64 ] && [ -x /bin/busybox ]; then
  refused "an arm64 Image.gz with an x86-64 busybox" "engine busybox '/bin/busybox' is built for x86_64 but the kernels are aarch64: give a static busybox for aarch64 (Debian's busybox-static:arm64)" -- "$K" campaign "$TMP/bb.yaml" --no-store --dir "$D"
fi
sed -i 's|busybox: /bin/busybox|accel: kvm|' "$TMP/bb.yaml"
if [ "$(uname -m)" = x86_64 ]; then
  KSTACKLAB_KVM_DEVICE=/dev/null refused "arm64 kernels with accel kvm on an x86-64 host" "engine accel kvm: the kernels are aarch64 and this host is x86_64: KVM runs a guest of the host's architecture only" -- "$K" campaign "$TMP/bb.yaml" --no-store --dir "$D"
fi

# 3. Engine ssh: the machine's `uname -m` before boot 1 (a stand-in ssh that says x86_64).
cat >"$BIN/ssh" <<SH
#!/bin/sh
echo "\$*" >>"$TMP/ssh-calls"
case "\$*" in *uname*) echo x86_64 ;; *) echo "unexpected: \$*" >&2; exit 1 ;; esac
SH
chmod +x "$BIN/ssh"
cat >"$TMP/ssh.yaml" <<YAML
profiles:
  - {name: off, kernel: $TMP/Image, cmdline: randomize_kstack_offset=off}
  - {name: on, kernel: $TMP/Image, cmdline: randomize_kstack_offset=on}
boots: 1
kstacklab: kstacklab-aarch64
run: [--bench, syscall/getpid]
engine: {name: ssh, host: graviton.example}
YAML
refused "arm64 images for an x86 machine over ssh" "the machine graviton.example is x86_64 (uname -m) but profile 'off' kernel '$TMP/Image' is aarch64" -- "$K" campaign "$TMP/ssh.yaml" --no-store --dir "$D"
[ "$(grep -vc uname "$TMP/ssh-calls")" = 0 ] && pass "ssh ran nothing but uname -m" || fail "ssh calls: $(cat "$TMP/ssh-calls")"

# 4. Debian's own arm64 kernel: an uncompressed Image, its release read from its banner.
if KARM=$("$ROOT/scripts/debian-kernel.sh" --arch arm64 2>"$TMP/fetch.err"); then
  RELEASE=${KARM##*/vmlinuz-}
  printf 'profiles:\n  - {name: a, kernel: %s, release: 0.0.0-wrong}\nboots: 1\nkstacklab: %s\nengine: {name: ssh, host: h}\n' \
    "$KARM" "$TMP/kstacklab-aarch64" >"$TMP/debian.yaml"
  refused "Debian's arm64 kernel: its release is read from the image" "release '0.0.0-wrong' is not the image's own ($RELEASE)" -- "$K" campaign "$TMP/debian.yaml" --no-store --dir "$D"
  # Taken as aarch64 (the plan passes), then the guest binary, here an ELF header alone, is
  # read for its libraries before boot 1.
  refused "Debian's arm64 kernel with a kstacklab that is a bare ELF header" "'$TMP/kstacklab-aarch64' is not a readable ELF64 file (program headers outside the file)" -- shorthand "$KARM" --kstacklab "$TMP/kstacklab-aarch64"
else
  [ "$failures" -eq 0 ] || finish  # a skip must not hide a failure above
  skip_missing "Debian's arm64 kernel cannot be fetched: $(cat "$TMP/fetch.err")"
fi
finish
