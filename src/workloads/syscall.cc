// The syscall suite: the calls the kstack-offset and stack-erasing discussions time.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "kstacklab/common/raw_syscall.h"
#include "kstacklab/timing/timing.h"
#include "suites.h"

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

// Each syscall is issued two ways ("call paths", the row's variant):
//  * raw  — the `syscall` instruction inline (raw_syscall.h): the kernel entry/exit path alone;
//           the baseline.
//  * libc — the C library's wrapper, as applications and `perf bench syscall basic` call it: a
//           call into libc and a return from it around the same instruction. On hosts with
//           return-misprediction mitigations (AMD SRSO "Safe RET", RSB filling) the return that
//           crosses the syscall costs tens of ns more than the inline instruction
//           (docs/methodology.md "Call path").
// Raw calls return the kernel's result (negative errno); libc calls return -1 and set errno.
inline long RawGetpid(void*) { return RawSyscall0(SYS_getpid); }
inline long RawGetppid(void*) { return RawSyscall0(SYS_getppid); }
inline long RawInvalid(void*) { return RawSyscall0(kInvalidSyscall); }
inline long RawFstat(void* s) {
  auto* f = static_cast<FdState*>(s);
  return RawSyscall3(SYS_fstat, f->fd, reinterpret_cast<long>(&f->st), 0);
}
inline long RawLseek(void* s) {
  return RawSyscall3(SYS_lseek, static_cast<FdState*>(s)->fd, 0, SEEK_CUR);
}
inline long LibcGetpid(void*) { return ::getpid(); }
inline long LibcGetppid(void*) { return ::getppid(); }
inline long LibcInvalid(void*) { return ::syscall(kInvalidSyscall); }
// glibc >= 2.33 implements fstat() as newfstatat(fd, "", buf, AT_EMPTY_PATH).
inline long LibcFstat(void* s) {
  auto* f = static_cast<FdState*>(s);
  return ::fstat(f->fd, &f->st);
}
inline long LibcLseek(void* s) { return ::lseek(static_cast<FdState*>(s)->fd, 0, SEEK_CUR); }

// The timed call: the result is discarded (the asm is volatile; libc calls are external).
template <long (*Fn)(void*)>
inline void Timed(void* state) {
  Fn(state);
}

using CallFn = long (*)(void*);

// One call through `fn` as the kernel's convention: negative errno on failure.
long KernelResult(CallFn fn, void* state, bool libc) {
  errno = 0;
  const long r = fn(state);
  return libc && r == -1 ? -errno : r;
}

// The state a syscall needs (nullptr for none), created before its check.
using MakeState = Expected<std::shared_ptr<void>> (*)();

Expected<std::shared_ptr<void>> NoState() { return std::shared_ptr<void>(); }

// An open regular file (an anonymous memfd: no disk I/O, nothing left behind).
Expected<std::shared_ptr<void>> OpenFile() {
  auto s = std::make_shared<FdState>();
  s->fd = ::memfd_create("kstacklab-fstat", MFD_CLOEXEC);
  if (s->fd < 0) return RuntimeError(fmt::format("memfd_create: {}", std::strerror(errno)));
  if (::write(s->fd, "kstacklab\n", 10) != 10 || ::lseek(s->fd, 0, SEEK_SET) != 0) {
    return RuntimeError(fmt::format("preparing the file: {}", std::strerror(errno)));
  }
  return std::shared_ptr<void>(s);
}

// The check of one call's result (kernel convention), run once before timing; "" = as expected,
// else what is wrong.
using Check = std::string (*)(long result, void* state);

std::string CheckGetpid(long r, void*) {
  return r == ::getpid() ? "" : fmt::format("getpid returned {}, expected {}", r, ::getpid());
}
std::string CheckGetppid(long r, void*) {
  return r == ::getppid() ? "" : fmt::format("getppid returned {}, expected {}", r, ::getppid());
}
std::string CheckInvalid(long r, void*) {
  return r == -ENOSYS
             ? ""
             : fmt::format("syscall {} returned {}, not -ENOSYS; this kernel implements it",
                           kInvalidSyscall, r);
}
std::string CheckFstat(long r, void* s) {
  const auto size = static_cast<long>(static_cast<FdState*>(s)->st.st_size);
  return r == 0 && size == 10
             ? ""
             : fmt::format("fstat returned {} (size {}), expected 0 (size 10)", r, size);
}
std::string CheckLseek(long r, void*) {
  return r == 0 ? "" : fmt::format("lseek(SEEK_CUR) returned {}, expected 0", r);
}

template <CallFn Fn>
WorkloadDef Row(const char* name, const char* summary, MakeState make, Check check, bool libc) {
  WorkloadDef w;
  w.name = name;
  w.variant = libc ? "libc" : "raw";
  w.baseline = !libc;
  w.summary = fmt::format("{} ({})", summary,
                          libc ? "through the C library's wrapper" : "inline syscall instruction");
  w.setup = [make, check, libc]() -> Expected<std::shared_ptr<void>> {
    auto state = make();
    if (!state.ok()) return state.error();
    const long r = KernelResult(Fn, state->get(), libc);
    if (std::string wrong = check(r, state->get()); !wrong.empty()) {
      return RuntimeError(fmt::format("{} {}", libc ? "libc" : "raw", wrong));
    }
    return state;
  };
  w.percall = &sampler::TimePerCall<Clock, Timed<Fn>>;
  w.loop = &sampler::TimeLoop<Clock, Timed<Fn>>;
  return w;
}

// Both call paths of one syscall: raw first (the baseline), then libc.
template <CallFn Raw, CallFn Libc>
void Both(std::vector<WorkloadDef>& rows, const char* name, const char* summary, MakeState make,
          Check check) {
  rows.push_back(Row<Raw>(name, summary, make, check, false));
  rows.push_back(Row<Libc>(name, summary, make, check, true));
}

}  // namespace

std::vector<WorkloadDef> SyscallRows() {
  std::vector<WorkloadDef> rows;
  Both<RawGetpid, LibcGetpid>(rows, "syscall/getpid",
                              "getpid(2): the shortest real syscall (entry/exit cost)", NoState,
                              CheckGetpid);
  Both<RawGetppid, LibcGetppid>(rows, "syscall/getppid",
                                "getppid(2): as `perf bench syscall basic` times it", NoState,
                                CheckGetppid);
  Both<RawInvalid, LibcInvalid>(
      rows, "syscall/invalid",
      "an unimplemented syscall number (-ENOSYS): entry/exit with no handler", NoState,
      CheckInvalid);
  Both<RawFstat, LibcFstat>(rows, "syscall/fstat", "fstat(2) on an open memfd", OpenFile,
                            CheckFstat);
  Both<RawLseek, LibcLseek>(
      rows, "syscall/lseek",
      "lseek(fd, 0, SEEK_CUR) on an open memfd (the Java workload of the thread)", OpenFile,
      CheckLseek);
  return rows;
}

}  // namespace kstacklab::workloads
