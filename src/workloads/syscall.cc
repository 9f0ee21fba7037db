// The syscall suite: the calls the kstack-offset and stack-erasing discussions time.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "kstacklab/raw_syscall.h"
#include "kstacklab/timing.h"
#include "workloads/suites.h"

namespace kstacklab::workloads {
using ::kstacklab::RawSyscall0;
using ::kstacklab::RawSyscall3;
namespace {

using Clock = timing::CycleClock;

// A syscall number no kernel implements: the entry path runs, the table lookup fails, -ENOSYS.
constexpr long kInvalidSyscall = 1000;

struct FdState {
  int fd = -1;
  struct stat st {};
  ~FdState() {
    if (fd >= 0) ::close(fd);
  }
};

inline void CallGetpid(void*) { RawSyscall0(SYS_getpid); }
inline void CallGetppid(void*) { RawSyscall0(SYS_getppid); }
inline void CallInvalid(void*) { RawSyscall0(kInvalidSyscall); }
inline void CallFstat(void* s) {
  auto* f = static_cast<FdState*>(s);
  RawSyscall3(SYS_fstat, f->fd, reinterpret_cast<long>(&f->st), 0);
}
inline void CallLseek(void* s) {
  RawSyscall3(SYS_lseek, static_cast<FdState*>(s)->fd, 0, SEEK_CUR);
}

Expected<std::shared_ptr<void>> NoState() { return std::shared_ptr<void>(); }

Expected<std::shared_ptr<void>> SetupGetpid() {
  long r = RawSyscall0(SYS_getpid);
  if (r != ::getpid())
    return RuntimeError(fmt::format("raw getpid returned {}, expected {}", r, ::getpid()));
  return NoState();
}

Expected<std::shared_ptr<void>> SetupGetppid() {
  long r = RawSyscall0(SYS_getppid);
  if (r != ::getppid())
    return RuntimeError(fmt::format("raw getppid returned {}, expected {}", r, ::getppid()));
  return NoState();
}

Expected<std::shared_ptr<void>> SetupInvalid() {
  long r = RawSyscall0(kInvalidSyscall);
  if (r != -ENOSYS) {
    return RuntimeError(fmt::format(
        "syscall {} returned {}, not -ENOSYS; this kernel implements it", kInvalidSyscall, r));
  }
  return NoState();
}

// An open regular file (an anonymous memfd: no disk I/O, nothing left behind).
Expected<std::shared_ptr<FdState>> OpenFile() {
  auto s = std::make_shared<FdState>();
  s->fd = ::memfd_create("kstacklab-fstat", MFD_CLOEXEC);
  if (s->fd < 0) return RuntimeError(fmt::format("memfd_create: {}", std::strerror(errno)));
  if (::write(s->fd, "kstacklab\n", 10) != 10 || ::lseek(s->fd, 0, SEEK_SET) != 0) {
    return RuntimeError(fmt::format("preparing the file: {}", std::strerror(errno)));
  }
  return s;
}

Expected<std::shared_ptr<void>> SetupFstat() {
  auto s = OpenFile();
  if (!s.ok()) return s.error();
  long r = RawSyscall3(SYS_fstat, (*s)->fd, reinterpret_cast<long>(&(*s)->st), 0);
  if (r != 0 || (*s)->st.st_size != 10) {
    return RuntimeError(fmt::format("raw fstat returned {} (size {}), expected 0 (size 10)", r,
                                    static_cast<long>((*s)->st.st_size)));
  }
  return std::shared_ptr<void>(*s);
}

Expected<std::shared_ptr<void>> SetupLseek() {
  auto s = OpenFile();
  if (!s.ok()) return s.error();
  long r = RawSyscall3(SYS_lseek, (*s)->fd, 0, SEEK_CUR);
  if (r != 0) return RuntimeError(fmt::format("raw lseek(SEEK_CUR) returned {}, expected 0", r));
  return std::shared_ptr<void>(*s);
}

template <auto Call>
WorkloadDef Row(const char* name, const char* summary, Expected<std::shared_ptr<void>> (*setup)()) {
  WorkloadDef w;
  w.name = name;
  w.summary = summary;
  w.setup = setup;
  w.percall = &TimePerCall<Clock, Call>;
  w.loop = &TimeLoop<Clock, Call>;
  return w;
}

}  // namespace

std::vector<WorkloadDef> SyscallRows() {
  return {
      Row<CallGetpid>("syscall/getpid", "getpid(2): the shortest real syscall (entry/exit cost)",
                      SetupGetpid),
      Row<CallGetppid>("syscall/getppid", "getppid(2): as `perf bench syscall basic` times it",
                       SetupGetppid),
      Row<CallInvalid>("syscall/invalid",
                       "an unimplemented syscall number (-ENOSYS): entry/exit with no handler",
                       SetupInvalid),
      Row<CallFstat>("syscall/fstat", "fstat(2) on an open memfd", SetupFstat),
      Row<CallLseek>("syscall/lseek",
                     "lseek(fd, 0, SEEK_CUR) on an open memfd (the Java workload of the thread)",
                     SetupLseek),
  };
}

}  // namespace kstacklab::workloads
