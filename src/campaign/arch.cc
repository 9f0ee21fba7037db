// The architecture table and the ELF header reader (arch.h).
#include "kstacklab/campaign/arch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "kstacklab/common/text.h"

namespace kstacklab::campaign {
namespace {

// e_machine values of other architectures, to say what a foreign binary is
// (include/uapi/linux/elf-em.h).
const char* OtherMachineName(uint16_t machine) {
  switch (machine) {
    case 3:
      return "i386";
    case 8:
      return "mips";
    case 20:
      return "ppc";
    case 21:
      return "ppc64";
    case 22:
      return "s390";
    case 40:
      return "arm (32-bit)";
    case 243:
      return "riscv";
    case 258:
      return "loongarch";
    default:
      return nullptr;
  }
}

// Closes a descriptor on every path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::span<const Architecture> Architectures() {
  static constexpr std::array<Architecture, 2> kArchitectures = {{
      {.name = "x86_64",
       .summary = "x86-64",
       .elf_machine = 62,  // EM_X86_64
       .serial_console = "ttyS0,115200",
       .lava_arch = "amd64",
       .lava_machine = "",
       .lava_cpu = "",
       .lava_kernel_type = "",
       .debian_arch = "amd64",
       .multiarch = "x86_64-linux-gnu",
       .qemu_system = "qemu-system-x86_64",
       .qemu_package = "qemu-system-x86",
       .qemu_machine = "",
       .qemu_console_tty = "ttyS0",
       .qemu_channel_tty = "ttyS1",
       .qemu_channel_on_pci = false},
      {.name = "aarch64",
       .summary = "arm64",
       .elf_machine = 183,  // EM_AARCH64
       .serial_console = "ttyAMA0,115200",
       .lava_arch = "arm64",
       // The device type's default CPU is cortex-a57 (Armv8.0); max has every feature QEMU
       // emulates (PAC, BTI, the Armv8.6 counter).
       .lava_machine = "virt",
       .lava_cpu = "max",
       .lava_kernel_type = "image",
       .debian_arch = "arm64",
       .multiarch = "aarch64-linux-gnu",
       .qemu_system = "qemu-system-aarch64",
       .qemu_package = "qemu-system-arm",
       .qemu_machine = "virt",
       .qemu_console_tty = "ttyAMA0",
       .qemu_channel_tty = "ttyS0",
       .qemu_channel_on_pci = true},
  }};
  return kArchitectures;
}

const Architecture* FindArchitecture(std::string_view name) {
  for (const Architecture& a : Architectures()) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

std::string ArchitectureNames() {
  std::string out;
  const auto rows = Architectures();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) out += i + 1 == rows.size() ? " or " : ", ";
    out += rows[i].name;
  }
  return out;
}

const Architecture& HostArchitecture() {
#if defined(__x86_64__)
  static const Architecture* host = FindArchitecture("x86_64");
#elif defined(__aarch64__)
  static const Architecture* host = FindArchitecture("aarch64");
#else
#error "kstacklab builds for x86_64 and aarch64 only"
#endif
  return *host;
}

Expected<const Architecture*> ElfArchitecture(const std::string& path, const std::string& what) {
  const std::string who = fmt::format("{} '{}'", what, EscapeControl(path));
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    return UsageError(
        fmt::format("{}: {}; give the path of a kstacklab binary", who, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return UsageError(fmt::format("{} is not a regular file; give the kstacklab binary", who));
  }
  unsigned char h[64] = {};
  const ssize_t n = ::pread(fd.get(), h, sizeof h, 0);
  if (n < 20 || std::memcmp(h,
                            "\x7f"
                            "ELF",
                            4) != 0) {
    return UsageError(fmt::format(
        "{} is not an ELF executable ({}); give the kstacklab binary itself, not a script", who,
        n <= 0 ? "empty" : "no ELF header"));
  }
  if (h[4] != 2) {
    return UsageError(fmt::format(
        "{} is a 32-bit ELF file; kstacklab runs as a 64-bit program ({}): give one built for "
        "the campaign's architecture",
        who, ArchitectureNames()));
  }
  if (h[5] != 1) {
    return UsageError(fmt::format("{} is a big-endian ELF file; give a kstacklab built for {}", who,
                                  ArchitectureNames()));
  }
  const auto machine = static_cast<uint16_t>(h[18] | (h[19] << 8));
  for (const Architecture& a : Architectures()) {
    if (a.elf_machine == machine) return &a;
  }
  const char* other = OtherMachineName(machine);
  return UsageError(
      fmt::format("{} is an ELF file for {} (e_machine {}); give a kstacklab built "
                  "for {}",
                  who, other != nullptr ? other : "another machine", machine, ArchitectureNames()));
}

}  // namespace kstacklab::campaign
