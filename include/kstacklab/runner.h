// Runs selected workloads through the sampler and assembles a RunResult (no I/O, no printing).
#pragma once

#include <sched.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "kstacklab/results.h"
#include "kstacklab/sampler.h"
#include "kstacklab/workload.h"

namespace kstacklab {

struct RunOptions {
  SamplerConfig sampler;
  int repetitions = 10;
  int session = 0;  // recorded in every repetition (run --sessions)
  // The index of the first repetition in the order of RoundOrder (RunAb measures one repetition
  // per call and passes its own count, so its rows alternate direction too).
  int first_repetition = 0;
};

// The order of n rows (or knob values) in repetition r: as given for even r, reversed for odd r
// (A B C, C B A, A B C, ...). Each row's mean position in time is then the same over every two
// repetitions, so a linear drift of the machine hits every row alike; a fixed order would give
// the row measured last in each round its own systematic share of the drift.
std::vector<size_t> RoundOrder(size_t n, int repetition);

// fraction in [0,1], seconds elapsed, the row being measured.
using ProgressFn = std::function<void(double fraction, double elapsed_s, const std::string& row)>;

// Sets every row up (each checks its call once), then measures repetition r of every row before
// repetition r+1 of any, in RoundOrder, so slow drift of the machine hits all rows alike.
// Setup failure -> RuntimeError naming the row, before anything is measured. When `stop` turns
// true the run ends early: the result holds only completed repetitions and partial = true.
Expected<RunResult> RunWorkloads(const std::vector<WorkloadDef>& rows, const RunOptions& options,
                                 const ClockParams& clock, const std::atomic<bool>* stop,
                                 const ProgressFn& progress);

// Pins the calling thread to one CPU for its lifetime and restores the previous affinity mask
// on destruction.
class ScopedCpuPin {
 public:
  ScopedCpuPin() = default;
  ScopedCpuPin(const ScopedCpuPin&) = delete;
  ScopedCpuPin& operator=(const ScopedCpuPin&) = delete;
  ~ScopedCpuPin();
  // cpu must be in the allowed set; otherwise UsageError naming the value and the allowed CPUs
  // ("CPU 7 is not available to this process (allowed: 0-1)"; the CLI names its flag).
  Status Pin(int cpu);
  static std::string AllowedCpus();  // e.g. "0-1"

 private:
  bool active_ = false;
  cpu_set_t saved_{};
};

// Switches the calling thread to SCHED_FIFO (priority 1) and restores the previous policy on
// destruction. Enable() fails (RuntimeError with the reason) when not permitted.
class ScopedFifo {
 public:
  ScopedFifo() = default;
  ScopedFifo(const ScopedFifo&) = delete;
  ScopedFifo& operator=(const ScopedFifo&) = delete;
  ~ScopedFifo();
  Status Enable();

 private:
  bool active_ = false;
  int saved_policy_ = 0;
  sched_param saved_param_{};
};

}  // namespace kstacklab
