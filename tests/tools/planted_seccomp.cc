// planted_seccomp INSTRUCTIONS PROGRAM [ARGS...]: runs PROGRAM under an allow-everything seccomp
// filter of INSTRUCTIONS (2..4096) classic-BPF instructions — a real, known slowdown of every
// syscall entry, used to plant a change in real runs (tests/e2e/realrun_aa.sh, bench/aa-runs.sh).
//
// Why this filter costs something: since Linux 5.11 the kernel precomputes, per syscall number,
// whether a filter allows it whatever the arguments (kernel/seccomp.c, seccomp_is_const_allow());
// such syscalls skip the filter. That emulation gives up at any load other than seccomp_data.nr
// or .arch, so this filter loads args[0] first: it then runs on every syscall, INSTRUCTIONS - 2
// never-taken compares and a RET ALLOW (JIT-compiled where net.core.bpf_jit_enable allows), and
// the syscall takes the entry slow path (syscall_trace_enter). The cost grows with INSTRUCTIONS.
//
// Exit codes: 2 usage, 1 the filter could not be installed or PROGRAM could not be started (the
// message says which); otherwise PROGRAM's own (it replaces this process).
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

constexpr unsigned kMinInstructions = 2;
constexpr unsigned kMaxInstructions = BPF_MAXINSNS;  // 4096, the kernel's limit per filter

int Usage(const char* why) {
  std::fprintf(stderr,
               "planted_seccomp: %s\nusage: planted_seccomp INSTRUCTIONS PROGRAM [ARGS...] "
               "(INSTRUCTIONS %u..%u)\n",
               why, kMinInstructions, kMaxInstructions);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage("needs INSTRUCTIONS and PROGRAM");
  const std::string_view text = argv[1];
  unsigned n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size() || n < kMinInstructions ||
      n > kMaxInstructions) {
    return Usage("INSTRUCTIONS is not a whole number in range");
  }
  std::vector<sock_filter> prog;
  prog.reserve(n);
  prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args)));
  while (prog.size() < n - 1) {
    // Compares args[0] with a constant; both branches go to the next instruction.
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffU, 0, 0));
  }
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  sock_fprog fprog{};
  fprog.len = static_cast<unsigned short>(prog.size());
  fprog.filter = prog.data();
  // no_new_privs lets an unprivileged user install a filter; it also keeps set-uid programs
  // from gaining privileges under it, which this tool never needs.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
    std::fprintf(stderr,
                 "planted_seccomp: cannot install a seccomp filter: %s (a kernel without "
                 "CONFIG_SECCOMP_FILTER, or a container that forbids seccomp())\n",
                 std::strerror(errno));
    return 1;
  }
  execvp(argv[2], argv + 2);
  std::fprintf(stderr, "planted_seccomp: cannot run %s: %s\n", argv[2], std::strerror(errno));
  return 1;
}
