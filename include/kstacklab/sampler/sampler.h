// The sampler: timed loops and repetitions (DESIGN.md "sampler").
//
// Per-call mode: for each call, exactly `t0 = Clock::Now(); Call(state); t1 = Clock::Now();
// out[i] = t1 - t0;` — timer read, the call, timer read, a store into preallocated memory.
// Ticks are converted and binned only between chunks, outside the timed region.
// Loop mode: one region around `n` calls; the repetition carries the mean only.
//
// A repetition (one batch of `iterations` timed calls after `warmup` untimed ones) is the unit
// of a statistical sample. Stored metrics are overhead-corrected: the calibrated cost of an
// empty timed region is subtracted from every location metric (mean, min, percentiles, max);
// stddev is unchanged by the shift.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/histogram/histogram.h"
#include "kstacklab/results/repetition.h"

namespace kstacklab::sampler {

enum class TimingMode { kPerCall, kLoop };

// Times n calls, storing raw tick durations in out[0..n).
using PerCallFn = void (*)(void* state, uint64_t n, uint64_t* out_ticks);
// Times n calls in one region; returns the total ticks.
using LoopFn = uint64_t (*)(void* state, uint64_t n);

// A loop function for slow calls whose setup must stay outside the timed region (a fork, a
// munmap of a fresh mapping, a build): the sum of `n` per-call timed regions, in ticks.
template <PerCallFn kPerCall>
uint64_t SumOfPerCallTicks(void* state, uint64_t n) {
  uint64_t total = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t ticks = 0;
    kPerCall(state, 1, &ticks);
    total += ticks;
  }
  return total;
}

template <class Clock, auto Call>
void TimePerCall(void* state, uint64_t n, uint64_t* out_ticks) {
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t t0 = Clock::Now();
    Call(state);
    uint64_t t1 = Clock::Now();
    out_ticks[i] = t1 - t0;
  }
}

template <class Clock, auto Call>
uint64_t TimeLoop(void* state, uint64_t n) {
  uint64_t t0 = Clock::Now();
  for (uint64_t i = 0; i < n; ++i) Call(state);
  return Clock::Now() - t0;
}

// A timed body: the loops instantiated for one call, plus the state they are given.
struct TimedBody {
  PerCallFn percall = nullptr;
  LoopFn loop = nullptr;
  void* state = nullptr;
};

// Calls per timed chunk: the tick buffer's size (512 KiB), between which the sampler bins.
inline constexpr uint64_t kDefaultChunk = 65536;

// Default host-stall threshold: a syscall path that takes 10 us was interrupted (a host
// preemption, VM exit or interrupt), not slow.
inline constexpr double kDefaultStallThresholdNs = 10000;

struct SamplerConfig {
  uint64_t iterations = 100000;  // timed calls per repetition
  uint64_t warmup = 1000;        // untimed calls before each repetition
  TimingMode mode = TimingMode::kPerCall;
  uint64_t chunk = kDefaultChunk;  // calls per timed chunk (the tick buffer's size)
  // Per-call mode: a call whose raw timed region exceeds this (ns) counts as a host stall
  // (Repetition::stalls, stall_ns). > 0.
  double stall_threshold_ns = kDefaultStallThresholdNs;
};

struct ClockParams {
  double freq_hz = 1e9;
  double overhead_ticks = 0;
};

// Reusable buffers for RunRepetition (allocated once per run, never in a timed region).
class SamplerScratch {
 public:
  explicit SamplerScratch(uint64_t chunk) : ticks_(chunk), rep_histogram_() {}
  std::vector<uint64_t>& ticks() { return ticks_; }
  histogram::Histogram& rep_histogram() { return rep_histogram_; }

 private:
  std::vector<uint64_t> ticks_;
  histogram::Histogram rep_histogram_;
};

// Runs one repetition. In per-call mode it also counts the host stalls (calls above
// config.stall_threshold_ns, raw duration) and their time. The repetition's raw durations are
// merged into `merged` (picoseconds, not overhead-corrected). Returns a RuntimeError "interrupted"
// (and merges nothing) if `stop` becomes true before the repetition completes; `stop` is polled
// between chunks only.
Expected<Repetition> RunRepetition(const TimedBody& body, const SamplerConfig& config,
                                   const ClockParams& clock, SamplerScratch& scratch,
                                   histogram::Histogram& merged, const std::atomic<bool>* stop);

// Overhead-corrected metrics of one repetition from its histogram and exact moments.
// Exposed for tests. `sum_ns`/`sum_sq_ns` are over raw durations.
std::map<std::string, double> RepetitionMetrics(const histogram::Histogram& rep_ps, double sum_ns,
                                                double sum_sq_ns, double overhead_ns);

}  // namespace kstacklab::sampler
