// The forced-migration experiment on the running kernel (include/kstacklab/live/attacks.h).
#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "kstacklab/analysis/entropy.h"
#include "kstacklab/common/raw_syscall.h"
#include "kstacklab/live/attacks.h"
#include "kstacklab/live/infer.h"
#include "kstacklab/live/probe.h"
#include "kstacklab/live/records.h"

namespace kstacklab::live {

namespace {

bool PinThread(pid_t tid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(tid, sizeof(set), &set) == 0;
}

// Whether thread `tid` of this process is asleep (state S in /proc/self/task/TID/stat).
bool IsSleeping(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  const char* close = std::strrchr(buf, ')');
  return n > 0 && close != nullptr && close[1] == ' ' && close[2] == 'S';
}

// Rounds from the records: A's reads in order, then the first getpid of C after each; a round
// counts when that getpid ran on the CPU A's read left (round r's old CPU is r % 2).
std::vector<MigrationRound> PairRounds(const std::vector<LiveRecord>& records, pid_t a_tid,
                                       pid_t c_tid, uint64_t rounds) {
  std::vector<MigrationRound> out;
  uint64_t round = 0;
  for (size_t i = 0; i < records.size() && round < rounds; ++i) {
    const LiveRecord& rec = records[i];
    if (static_cast<pid_t>(rec.tid) != a_tid || rec.nr != SYS_read) continue;
    MigrationRound m;
    m.old_cpu = static_cast<uint32_t>(round % 2);
    m.read_exit_cpu = rec.cpu;
    m.read_index = i;
    bool found = false;
    for (size_t j = i + 1; j < records.size(); ++j) {
      const LiveRecord& n = records[j];
      if (static_cast<pid_t>(n.tid) == c_tid && n.nr == SYS_getpid) {
        m.next_index = j;
        found = n.cpu == m.old_cpu;
        break;
      }
    }
    ++round;
    if (found) out.push_back(m);
  }
  return out;
}

}  // namespace

Expected<MigrationData> CollectMigration(uint64_t rounds) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
    return RuntimeError("the migration experiment needs at least 2 online CPUs");
  }
  int fds[2];
  if (pipe(fds) != 0) return RuntimeError(fmt::format("pipe: {}", std::strerror(errno)));
  auto probe = Probe::Attach(ProbeOptions{-1});
  if (!probe.ok()) {
    close(fds[0]);
    close(fds[1]);
    return probe.error();
  }
  std::atomic<pid_t> a_tid{0};
  std::atomic<pid_t> c_tid{0};
  std::atomic<uint64_t> a_done{0};  // rounds whose read returned
  std::atomic<uint64_t> c_done{0};  // rounds whose getpid on X is done
  std::atomic<bool> failed{false};
  auto old_cpu = [](uint64_t r) { return static_cast<int>(r % 2); };
  std::thread a([&] {
    a_tid = static_cast<pid_t>(syscall(SYS_gettid));
    char byte = 0;
    for (uint64_t r = 0; r < rounds && !failed; ++r) {
      if (!PinThread(0, old_cpu(r))) failed = true;
      while (c_done.load() < r) {
      }
      if (read(fds[0], &byte, 1) != 1) failed = true;  // migrated to the other CPU meanwhile
      a_done = r + 1;
    }
  });
  std::thread c([&] {
    c_tid = static_cast<pid_t>(syscall(SYS_gettid));
    for (uint64_t r = 0; r < rounds && !failed; ++r) {
      // C sits on X only for its syscall: pinned there before A's read is woken.
      while (a_done.load() < r + 1 && !failed) {
      }
      RawSyscall0(SYS_getpid);  // the next syscall on X (C was moved to X beforehand)
      c_done = r + 1;
    }
  });
  while (a_tid.load() == 0 || c_tid.load() == 0) {
  }
  MigrationData data;
  std::vector<LiveRecord> drained;
  for (uint64_t r = 0; r < rounds && !failed; ++r) {
    const int x = old_cpu(r);
    // This thread stays off X, so between A's read and C's getpid no syscall of the process
    // runs on X.
    if (!PinThread(0, 1 - x) || !PinThread(c_tid, x)) failed = true;
    while (!IsSleeping(a_tid) || a_done.load() != r) {  // A blocked in read on X
      std::this_thread::yield();
    }
    if (!PinThread(a_tid, 1 - x)) failed = true;  // move it while it sleeps
    const char byte = 1;
    if (write(fds[1], &byte, 1) != 1) failed = true;
    while (c_done.load() < r + 1 && !failed) std::this_thread::yield();
    if ((r + 1) % 1024 == 0) (void)(*probe)->Drain(&data.records);
  }
  if (failed) {
    const char byte = 1;
    (void)!write(fds[1], &byte, 1);
  }
  a.join();
  c.join();
  close(fds[0]);
  close(fds[1]);
  if (Status s = (*probe)->Drain(&data.records); !s.ok()) return s.error();
  if (failed) return RuntimeError("the migration experiment could not set CPU affinity");
  // Only read and getpid are scored: thread creation (clone's return in the child) exits through
  // another call path, which DeriveOffsets would refuse.
  std::erase_if(data.records,
                [](const LiveRecord& r) { return r.nr != SYS_read && r.nr != SYS_getpid; });
  data.rounds = PairRounds(data.records, a_tid, c_tid, rounds);
  return data;
}

MigrationScore ScoreMigration(const MigrationData& data, std::span<const uint32_t> offsets,
                              const kstack::OffsetGeometry& geometry) {
  MigrationScore s;
  s.rounds = data.rounds.size();
  std::vector<uint8_t> x;
  std::vector<uint8_t> y;
  for (const MigrationRound& m : data.rounds) {
    if (m.read_exit_cpu == m.old_cpu) continue;
    ++s.migrated;
    const uint32_t a = offsets[m.read_index];
    const uint32_t c = offsets[m.next_index];
    s.stale += a == c ? 1 : 0;
    x.push_back(static_cast<uint8_t>(a / geometry.align));
    y.push_back(static_cast<uint8_t>(c / geometry.align));
  }
  s.stale_fraction =
      s.migrated > 0 ? static_cast<double>(s.stale) / static_cast<double>(s.migrated) : 0;
  auto mi = analysis::MutualInformationBits(x, y, geometry.count());
  if (mi.ok()) s.conditional_entropy_bits = mi->conditional_bits;
  return s;
}

}  // namespace kstacklab::live
