// Collect: attach the probe and issue one syscall N times from the calling thread.
#include <fmt/format.h>
#include <sched.h>
#include <sys/syscall.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>

#include "kstacklab/common/raw_syscall.h"
#include "kstacklab/live/probe.h"
#include "kstacklab/live/records.h"

namespace kstacklab::live {

namespace {

struct SyscallRow {
  CollectableSyscall def;
  long arg0;
};

// Argument-free or harmless calls (close(-1) fails with EBADF).
constexpr std::array<SyscallRow, 6> kSyscalls = {{
    {{"getpid", SYS_getpid}, 0},
    {{"getppid", SYS_getppid}, 0},
    {{"gettid", SYS_gettid}, 0},
    {{"getuid", SYS_getuid}, 0},
    {{"sched_yield", SYS_sched_yield}, 0},
    {{"close", SYS_close}, -1},
}};

const SyscallRow* FindRow(int32_t nr) {
  for (const SyscallRow& r : kSyscalls) {
    if (r.def.nr == nr) return &r;
  }
  return nullptr;
}

// Pins the calling thread to one CPU and restores its previous mask on destruction.
class CpuPin {
 public:
  Status Pin(int cpu) {
    if (sched_getaffinity(0, sizeof(saved_), &saved_) != 0) {
      return RuntimeError(fmt::format("sched_getaffinity: {}", std::strerror(errno)));
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) {
      return RuntimeError(fmt::format("cannot run on CPU {}: {}", cpu, std::strerror(errno)));
    }
    pinned_ = true;
    return OkStatus();
  }
  ~CpuPin() {
    if (pinned_) sched_setaffinity(0, sizeof(saved_), &saved_);
  }

 private:
  cpu_set_t saved_{};
  bool pinned_ = false;
};

}  // namespace

std::span<const CollectableSyscall> CollectableSyscalls() {
  static const std::array<CollectableSyscall, kSyscalls.size()> k = [] {
    std::array<CollectableSyscall, kSyscalls.size()> a{};
    for (size_t i = 0; i < kSyscalls.size(); ++i) a[i] = kSyscalls[i].def;
    return a;
  }();
  return k;
}

Expected<std::vector<LiveRecord>> Collect(const CollectOptions& options,
                                          std::string* prng_unreadable) {
  const SyscallRow* row = FindRow(options.syscall_nr);
  if (row == nullptr) {
    return RuntimeError(fmt::format("syscall {} cannot be collected", options.syscall_nr));
  }
  CpuPin pin;
  if (options.cpu >= 0) {
    if (Status s = pin.Pin(options.cpu); !s.ok()) return s.error();
  }
  auto probe = Probe::Attach(ProbeOptions{options.syscall_nr});
  if (!probe.ok()) return probe.error();
  if (prng_unreadable != nullptr) *prng_unreadable = (*probe)->PrngStateUnreadable();
  std::vector<LiveRecord> records;
  records.reserve(options.samples);
  for (uint64_t i = 0; i < options.samples; ++i) {
    RawSyscall3(row->def.nr, row->arg0, 0, 0);
    if ((i + 1) % Probe::kDrainEvery == 0) {
      if (Status s = (*probe)->Drain(&records); !s.ok()) return s.error();
    }
  }
  if (Status s = (*probe)->Drain(&records); !s.ok()) return s.error();
  const uint64_t dropped = (*probe)->Dropped();
  if (dropped != 0 || records.size() != options.samples) {
    return RuntimeError(
        fmt::format("the probe recorded {} of {} syscalls ({} dropped for a full ring buffer)",
                    records.size(), options.samples, dropped));
  }
  return records;
}

}  // namespace kstacklab::live
