// The architectures a campaign measures: one row each (its `uname -m` name, the e_machine of its
// executables, its serial console, LAVA's name for it). A campaign has one architecture, read from
// its profiles' images (kernel_image.h); the controlling machine may be another.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "kstacklab/common/error.h"

namespace kstacklab::campaign {

struct Architecture {
  const char* name;      // the word `uname -m` prints: "x86_64", "aarch64"
  const char* summary;   // the name people use: "x86-64", "arm64"
  uint16_t elf_machine;  // e_machine of its ELF executables (include/uapi/linux/elf-em.h)
  // The first serial port of its usual virtual machine (QEMU's pc: 8250 ttyS0; virt: PL011
  // ttyAMA0), as a console= value.
  const char* serial_console;
  const char* lava_arch;  // the LAVA qemu device type's `context: {arch: ...}` (amd64, arm64)
  // Further `context:` keys that device type needs for it ("" = none): QEMU's machine and CPU.
  const char* lava_machine;
  const char* lava_cpu;
  // A bootloader device type's deploy `kernel: {type: ...}` ("" = none given: x86's ipxe/grub).
  const char* lava_kernel_type;
  // Debian's architecture name (dpkg --print-architecture) and multiarch library directory name.
  const char* debian_arch;
  const char* multiarch;
  // Engine qemu: the emulator, the Debian package that has it, its machine type ("" = the
  // emulator's default, pc on x86), the guest's console device and the device of the results
  // channel. x86's pc has two 8250 UARTs (ttyS0, ttyS1); arm64's virt has one PL011 (ttyAMA0), so
  // the channel there is QEMU's PCI 16550 (pci-serial, 8250_pci: ttyS0), a driver Debian's arm64
  // kernel has built in, where virtio-console is a module.
  const char* qemu_system;
  const char* qemu_package;
  const char* qemu_machine;
  const char* qemu_console_tty;
  const char* qemu_channel_tty;
  bool qemu_channel_on_pci;  // the channel is -device pci-serial, not the second -serial
};

// The table: x86_64, aarch64.
std::span<const Architecture> Architectures();

// The row named `name` (a `uname -m` word), or nullptr.
const Architecture* FindArchitecture(std::string_view name);

// "x86_64 or aarch64": the table's names, for messages.
std::string ArchitectureNames();

// The architecture this program was built for.
const Architecture& HostArchitecture();

// The architecture of the ELF executable at `path`, read from its header (ELFCLASS64, little
// endian, e_machine of a row). Opens without following a FIFO's writer (O_NONBLOCK) and reads 64
// bytes. UsageError naming `what`, the file and what it is instead: missing, not a regular file,
// not ELF, 32-bit, big endian, or an e_machine no row has.
Expected<const Architecture*> ElfArchitecture(const std::string& path, const std::string& what);

}  // namespace kstacklab::campaign
