// Per-CPU state as the kstack offset designs use it in the kernel (DEFINE_PER_CPU +
// raw_cpu_ptr / get_cpu_var), modelled in user space.
//
// A PerCpu<T> is one slot per possible CPU, each padded to its own cache line. Which slot a
// step uses is chosen by a *cpu source*: SchedCpu (sched_getcpu(), which glibc >= 2.35 answers
// from the rseq area without a syscall) in production, InjectedCpu in tests and attack models.
//
// The contract every policy in policies.h follows: a step (entry or exit) reads the cpu ONCE,
// like raw_cpu_ptr(), and then reads or read-modify-writes that slot with no lock. So a thread
// migrated after the read updates the slot of the CPU it left — the kernel's race on arm64
// (where the kstack macros ran with preemption enabled) that Ryan Roberts' 2026 series fixed.
// In the kernel, a step that runs with preemption disabled (x86 legacy, get_cpu_var() in the
// final design) cannot interleave with another task's step on the same CPU; here a thread can
// always be preempted or migrated mid-step, and two threads that use one slot at the same time
// race on it (a data race; tests use one thread per slot). The benchmarks run one thread.
//
// Thread safety: slots are plain data; see above.
#pragma once

#include <sched.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kstacklab/common/error.h"

namespace kstacklab::kstack {

inline constexpr size_t kCacheLine = 64;

// Number of possible CPUs (1 + the highest id in /sys/devices/system/cpu/possible; falls back to
// sysconf(_SC_NPROCESSORS_CONF)); always >= 1 and > the cpu sched_getcpu() returns here.
int PossibleCpus();

// The production cpu source: the CPU the calling thread runs on now.
struct SchedCpu {
  [[gnu::always_inline]] int Cpu() const { return sched_getcpu(); }
};

// A cpu source driven by a test or an attack model: `script->cpu` is "where the thread runs";
// every read is counted, so a test can check that a step reads the cpu exactly once.
struct CpuScript {
  int cpu = 0;
  uint64_t reads = 0;
};
struct InjectedCpu {
  CpuScript* script = nullptr;
  int Cpu() const {
    ++script->reads;
    return script->cpu;
  }
};

// One T per possible CPU, each on its own cache line(s). T must be default-constructible.
template <class T>
class PerCpu {
 public:
  explicit PerCpu(int num_cpus) : num_cpus_(num_cpus) {
    KSTACKLAB_CHECK(num_cpus >= 1);
    slots_ = std::make_unique<Slot[]>(static_cast<size_t>(num_cpus));
  }

  // A deep copy (attack models copy a design's state to predict it; not a hot path).
  PerCpu(const PerCpu& other) : PerCpu(other.num_cpus_) {
    for (int c = 0; c < num_cpus_; ++c) slots_[c].value = other.slots_[c].value;
  }
  PerCpu& operator=(const PerCpu&) = delete;
  PerCpu(PerCpu&&) noexcept = default;
  PerCpu& operator=(PerCpu&&) noexcept = default;

  int num_cpus() const { return num_cpus_; }

  // The slot of `cpu` (0 <= cpu < num_cpus, else a CHECK failure: a cpu source out of range).
  [[gnu::always_inline]] T& operator[](int cpu) {
    KSTACKLAB_CHECK(static_cast<unsigned>(cpu) < static_cast<unsigned>(num_cpus_));
    return slots_[cpu].value;
  }
  const T& operator[](int cpu) const {
    KSTACKLAB_CHECK(static_cast<unsigned>(cpu) < static_cast<unsigned>(num_cpus_));
    return slots_[cpu].value;
  }

 private:
  struct alignas(kCacheLine) Slot {
    T value{};
  };
  int num_cpus_;
  std::unique_ptr<Slot[]> slots_;
};

// --- the preempt count (get_cpu_var() / put_cpu_var() of the v7.1 kstack entry) -------------

// The current task's preempt count as x86 keeps it (arch/x86/include/asm/preempt.h): one u32,
// with PREEMPT_NEED_RESCHED (bit 31) folded in inverted — set while no reschedule is needed — so
// preempt_enable() is one decrement and a branch on zero (preempt_count_dec_and_test()), and
// only a count that reaches 0 with the bit clear calls preempt_schedule(). The kernel keeps it
// per CPU (a %gs-relative `incl`/`decl`); here it is per thread, volatile so every raise and
// lower is a real load and store (three instructions where the kernel has one). Nothing in user
// space sets a reschedule: the model suite pays the count and the branch, not a schedule;
// PreemptModel::SetNeedResched() takes the other path (tests).
struct PreemptModel {
  static constexpr uint32_t kNeedReschedInverted = 0x80000000u;  // PREEMPT_NEED_RESCHED
  static inline thread_local volatile uint32_t count = kNeedReschedInverted;
  static inline thread_local uint64_t schedules = 0;  // preempt_schedule() calls (inspection)

  // set_preempt_need_resched(): what the scheduler does when another task should run.
  static void SetNeedResched() { count = count & ~kNeedReschedInverted; }
  // __preempt_schedule(): the reschedule put_cpu_var() may enter; here sched_yield().
  [[gnu::noinline]] static void Schedule();
};

// preempt_disable(): raise the count, then a compiler barrier (barrier() in the kernel).
[[gnu::always_inline]] inline void PreemptDisable() {
  PreemptModel::count = PreemptModel::count + 1;
  asm volatile("" ::: "memory");
}
// preempt_enable(): a compiler barrier, lower the count, and reschedule if it reached zero with
// a reschedule pending.
[[gnu::always_inline]] inline void PreemptEnable() {
  asm volatile("" ::: "memory");
  const uint32_t left = PreemptModel::count - 1;
  PreemptModel::count = left;
  if (left == 0) [[unlikely]] {
    PreemptModel::Schedule();
  }
}

}  // namespace kstacklab::kstack
