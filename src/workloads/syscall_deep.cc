// Stack-deep syscalls: calls whose kernel path keeps much more on the kernel stack than
// getpid, so that stack erasing (which poisons every byte the syscall used) costs more on them.
// They join the `syscall` suite (registry.cc lists SyscallSuiteRows: SyscallRows, then these). Why
// each is deep, from the kernel source (fs/select.c, include/linux/poll.h, kernel/sys.c,
// fs/namei.c):
//
//  * poll: do_sys_poll() keeps `long stack_pps[POLL_STACK_ALLOC / sizeof(long)]` (256 bytes:
//    the first ~30 pollfds) and a `struct poll_wqueues` with N_INLINE_POLL_ENTRIES inline
//    wait entries (WQUEUES_STACK_ALLOC = 832 - 256 bytes) on its stack: ~832 bytes of arrays.
//  * select: core_sys_select() keeps `long stack_fds[SELECT_STACK_ALLOC / sizeof(long)]`
//    (256 bytes, the six fd bitmaps up to 320 descriptors) and do_select() its own
//    `struct poll_wqueues` (noinline_for_stack): the same ~832 bytes, in two frames.
//  * uname: newuname() copies `struct new_utsname tmp` (6 x 65 = 390 bytes) on its stack.
//  * stat of a nested path: newfstatat() -> vfs_statx() -> filename_lookup() keeps a
//    `struct nameidata` (with its inline symlink stack) on the stack and walks one component
//    after another (link_path_walk -> walk_component -> lookup_fast ...): a long call chain per
//    call, repeated for each of the 16 components.
// Every call has a zero timeout or no side effect; each is checked once before timing.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kstacklab/common/raw_syscall.h"
#include "kstacklab/timing/timing.h"
#include "suites.h"

namespace kstacklab::workloads {
namespace {

using Clock = timing::CycleClock;

constexpr int kPollFds = 30;    // the most pollfds do_sys_poll() keeps in its on-stack array
constexpr int kSelectFds = 64;  // one word per bitmap, all six bitmaps on the stack
constexpr int kPathDepth = 16;  // directories in the stat path

// Descriptors to poll/select on: eventfds, each readable (counter 1), closed by the destructor.
struct FdSet {
  std::vector<int> fds;
  std::vector<struct pollfd> pollfds;
  fd_set read_set{};  // the request, copied before each call (select overwrites it)
  fd_set scratch{};   // what select works on
  struct timeval zero {};
  struct timespec zero_ts {};
  int nfds = 0;
  ~FdSet() {
    for (int fd : fds) ::close(fd);
  }
};

Expected<std::shared_ptr<FdSet>> OpenEventfds(int n) {
  auto s = std::make_shared<FdSet>();
  FD_ZERO(&s->read_set);
  for (int i = 0; i < n; ++i) {
    const int fd = ::eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) return RuntimeError(fmt::format("eventfd: {}", std::strerror(errno)));
    s->fds.push_back(fd);
    if (fd >= FD_SETSIZE) return RuntimeError(fmt::format("eventfd {} is >= FD_SETSIZE", fd));
    s->pollfds.push_back(pollfd{fd, POLLIN, 0});
    FD_SET(fd, &s->read_set);
    s->nfds = std::max(s->nfds, fd + 1);
  }
  return s;
}

inline void CallPoll(void* p) {
  auto* s = static_cast<FdSet*>(p);
  // ppoll(fds, n, &zero, NULL, 0): poll(2) with a zero timeout (x86-64 and arm64 both have
  // ppoll; arm64 has no poll).
  RawSyscall5(SYS_ppoll, reinterpret_cast<long>(s->pollfds.data()),
              static_cast<long>(s->pollfds.size()), reinterpret_cast<long>(&s->zero_ts), 0, 0);
}

inline void CallSelect(void* p) {
  auto* s = static_cast<FdSet*>(p);
  s->scratch = s->read_set;
#if defined(SYS_select)
  RawSyscall5(SYS_select, s->nfds, reinterpret_cast<long>(&s->scratch), 0, 0,
              reinterpret_cast<long>(&s->zero));
#else
  RawSyscall5(SYS_pselect6, s->nfds, reinterpret_cast<long>(&s->scratch), 0, 0,
              reinterpret_cast<long>(&s->zero_ts));
#endif
}

Expected<std::shared_ptr<void>> SetupPoll() {
  auto s = OpenEventfds(kPollFds);
  if (!s.ok()) return s.error();
  const long r = RawSyscall5(SYS_ppoll, reinterpret_cast<long>((*s)->pollfds.data()), kPollFds,
                             reinterpret_cast<long>(&(*s)->zero_ts), 0, 0);
  if (r != kPollFds) {
    return RuntimeError(fmt::format("ppoll on {} readable eventfds returned {}", kPollFds, r));
  }
  return std::shared_ptr<void>(*s);
}

Expected<std::shared_ptr<void>> SetupSelect() {
  auto s = OpenEventfds(kSelectFds);
  if (!s.ok()) return s.error();
  CallSelect(s->get());
  if ((*s)->nfds > kSelectFds + 64) {
    return RuntimeError(
        fmt::format("select: highest descriptor {} leaves the bitmaps too large "
                    "for the kernel's stack array",
                    (*s)->nfds - 1));
  }
  int ready = 0;
  for (int fd : (*s)->fds) ready += FD_ISSET(fd, &(*s)->scratch) ? 1 : 0;
  if (ready != kSelectFds) {
    return RuntimeError(fmt::format("select on {} readable eventfds saw {}", kSelectFds, ready));
  }
  return std::shared_ptr<void>(*s);
}

struct UtsState {
  struct utsname buf {};
};

inline void CallUname(void* p) {
  RawSyscall3(SYS_uname, reinterpret_cast<long>(&static_cast<UtsState*>(p)->buf), 0, 0);
}

Expected<std::shared_ptr<void>> SetupUname() {
  auto s = std::make_shared<UtsState>();
  const long r = RawSyscall3(SYS_uname, reinterpret_cast<long>(&s->buf), 0, 0);
  if (r != 0 || std::strcmp(s->buf.sysname, "Linux") != 0) {
    return RuntimeError(fmt::format("raw uname returned {} (sysname '{}')", r, s->buf.sysname));
  }
  return std::shared_ptr<void>(s);
}

// A temporary tree of kPathDepth nested directories, removed by the destructor.
struct DeepPath {
  std::string root;  // the mkdtemp directory
  std::string path;  // root/d/d/.../d (kPathDepth components below root)
  struct stat st {};
  ~DeepPath() {
    if (root.empty()) return;
    std::string p = path;
    while (p.size() > root.size()) {
      ::rmdir(p.c_str());
      p.resize(p.rfind('/'));
    }
    ::rmdir(root.c_str());
  }
};

inline void CallStatDeep(void* p) {
  auto* s = static_cast<DeepPath*>(p);
  RawSyscall4(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(s->path.c_str()),
              reinterpret_cast<long>(&s->st), 0);
}

Expected<std::shared_ptr<void>> SetupStatDeep() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/kstacklab-stat-XXXXXX";
  auto s = std::make_shared<DeepPath>();
  if (::mkdtemp(templ.data()) == nullptr) {
    return RuntimeError(fmt::format("mkdtemp {}: {}", templ, std::strerror(errno)));
  }
  s->root = templ;
  s->path = templ;
  for (int i = 0; i < kPathDepth; ++i) {
    s->path += "/d";
    if (::mkdir(s->path.c_str(), 0700) != 0) {
      return RuntimeError(fmt::format("mkdir {}: {}", s->path, std::strerror(errno)));
    }
  }
  const long r = RawSyscall4(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(s->path.c_str()),
                             reinterpret_cast<long>(&s->st), 0);
  if (r != 0 || !S_ISDIR(s->st.st_mode)) {
    return RuntimeError(fmt::format("raw newfstatat of the nested path returned {}", r));
  }
  return std::shared_ptr<void>(s);
}

template <auto Call>
WorkloadDef DeepRow(const char* name, const char* summary,
                    Expected<std::shared_ptr<void>> (*setup)()) {
  WorkloadDef w;
  w.name = name;
  // Issued by the inline instruction, like the other rows' `raw` path: the same variant (and
  // baseline), so that these rows share the baseline column of a comparison with them.
  w.variant = "raw";
  w.baseline = true;
  w.summary = summary;
  w.setup = setup;
  w.percall = &sampler::TimePerCall<Clock, Call>;
  w.loop = &sampler::TimeLoop<Clock, Call>;
  return w;
}

}  // namespace

std::vector<WorkloadDef> DeepSyscallRows() {
  return {
      DeepRow<CallPoll>("syscall/poll-30",
                        "ppoll of 30 ready eventfds, zero timeout: deep, ~832 bytes of pollfd and "
                        "wait-queue arrays on the kernel stack (fs/select.c)",
                        SetupPoll),
      DeepRow<CallSelect>("syscall/select-64",
                          "select (pselect6 on arm64, which has no select) of 64 ready eventfds, "
                          "zero timeout: deep, the six fd bitmaps and a poll_wqueues (~832 bytes) "
                          "on the kernel stack (fs/select.c)",
                          SetupSelect),
      DeepRow<CallUname>("syscall/uname",
                         "uname(2): deep-ish, newuname() copies a 390-byte new_utsname on the "
                         "kernel stack",
                         SetupUname),
      DeepRow<CallStatDeep>("syscall/stat-deep",
                            "newfstatat of a 16-directory path: a nameidata on the stack and the "
                            "path walk's call chain per component (fs/namei.c)",
                            SetupStatDeep),
  };
}

std::vector<WorkloadDef> SyscallSuiteRows() {
  std::vector<WorkloadDef> rows = SyscallRows();
  for (WorkloadDef& w : DeepSyscallRows()) rows.push_back(std::move(w));
  return rows;
}

}  // namespace kstacklab::workloads
