// The cycle counter that brackets every timed call (DESIGN.md "timing").
//
//  * x86-64: RDTSC with LFENCE on both sides. The leading LFENCE waits until every earlier
//    instruction has completed locally, so the start read cannot happen before the previous
//    call retired; the trailing LFENCE keeps later instructions (the call being timed) from
//    starting before the read. The same pair ends the region, so the call is inside it.
//  * aarch64: ISB; MRS CNTVCT_EL0; ISB. The leading ISB is the kernel's own order
//    (arch/arm64/include/asm/arch_timer.h, __arch_counter_get_cntvct: "isb; mrs cntvct_el0"):
//    without it the read may be taken before earlier instructions (the previous call) have
//    completed. The trailing ISB keeps the timed call from starting before the read, the role of
//    the trailing LFENCE on x86 (the kernel orders only later loads after its read,
//    arch_counter_enforce_ordering). Cost: each ISB empties the pipeline; the empty region (two
//    reads, four ISBs) is measured by Calibrate(), recorded as timer.overhead_ns and subtracted,
//    and on a generic timer of at most 1 GHz it is often under one counter step. Frequency from
//    CNTFRQ_EL0 when calibration agrees with it within 1 %; the step (EstimateCounterStep) is
//    what the timed durations are multiples of. Under qemu-user none of these is a cost.
//  * anything else: clock_gettime(CLOCK_MONOTONIC_RAW) in nanoseconds.
//
// Calibration measures the counter's rate against CLOCK_MONOTONIC_RAW and the cost of an empty
// timed region (the "timer overhead"), which the sampler subtracts and records.
#pragma once

#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <cstdint>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"

namespace kstacklab::timing {

// The one read of the hardware counter, unfenced (like the kernel's rdtsc()): RDTSC on x86-64,
// MRS CNTVCT_EL0 on aarch64, CLOCK_MONOTONIC_RAW nanoseconds elsewhere. Hot path: inline, one
// instruction. The model's counter random source (rng/counter.h) uses it as is; timed regions
// use CycleClock::Now(), which serialises around it.
[[gnu::always_inline]] inline uint64_t ReadCounter() {
#if defined(__x86_64__)
  return __rdtsc();
#elif defined(__aarch64__)
  uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
#endif
}

// The name of the counter ReadCounter() reads, as recorded in result files (`timer.source`).
#if defined(__x86_64__)
inline constexpr const char* kCounterName = "tsc";
#elif defined(__aarch64__)
inline constexpr const char* kCounterName = "cntvct_el0";
#else
inline constexpr const char* kCounterName = "clock_gettime(CLOCK_MONOTONIC_RAW)";
#endif

// The clock of timed regions: ReadCounter() serialised on both sides (see the file comment).
// Static functions so a sampler template can take a fake clock in tests.
struct CycleClock {
  [[gnu::always_inline]] static inline uint64_t Now() {
#if defined(__x86_64__)
    asm volatile("lfence" ::: "memory");
    const uint64_t v = ReadCounter();
    asm volatile("lfence" ::: "memory");
    return v;
#elif defined(__aarch64__)
    asm volatile("isb" ::: "memory");
    const uint64_t v = ReadCounter();
    asm volatile("isb" ::: "memory");
    return v;
#else
    return ReadCounter();
#endif
  }
  static constexpr const char* Source() { return kCounterName; }
};

// Nanoseconds of CLOCK_MONOTONIC_RAW (the calibration reference).
uint64_t MonotonicRawNs();

// The effective step of a counter: the smallest amount by which its value moves. A counter may
// tick faster than it is updated — this project's AMD EPYC guests advance the TSC ~26 ticks
// (10 ns) at a time, arm64 generic timers before v8.6 tick at 24-25 MHz (~40 ns) — so every
// per-call duration is a multiple of the step, whatever the nominal frequency.
struct CounterStep {
  double ticks = 1;        // >= 1; 1 when no quantisation is seen
  bool quantised = false;  // a step above 1 tick was found
};

// Estimates the step from consecutive reads of a counter taken back to back (nothing between
// them). Reads that stay within one step show a difference of 0, or of 1 on a counter that
// forces monotonic increase (the "+1 fix-up": a frequent 1 with no frequent 0 and no frequent
// 2); the lowest cluster of other differences is then one step. Without same-step reads (a read
// costs a step or more) the step is the largest of c, c/2, c/3 ... (c = lowest cluster, down to
// 5 ticks) with the differences within +-1 tick of at least two different whole multiples of it.
// The estimate is total ticks / steps crossed over the differences up to 8 clusters (longer ones
// are preemption). Fewer than 3 reads, or a counter seen advancing by single ticks, gives
// {1, false}. Pure function.
CounterStep EstimateCounterStep(const std::vector<uint64_t>& reads);

// `n` consecutive reads of Clock::Now() into a vector (allocated before the first read).
template <class Clock>
std::vector<uint64_t> ReadBackToBack(size_t n) {
  std::vector<uint64_t> reads(n);
  for (uint64_t& r : reads) r = Clock::Now();
  return reads;
}

struct Calibration {
  std::string source;
  double freq_hz = 0;         // counter ticks per second
  double step_ticks = 1;      // effective step (EstimateCounterStep)
  double resolution_ns = 0;   // step_ticks in ns: every timed duration is a multiple of it
  double overhead_ticks = 0;  // median ticks of an empty timed region
  double overhead_ns = 0;
  double overhead_min_ns = 0;  // fastest empty region seen (resolution floor)
  bool invariant = true;       // from CPU flags (constant_tsc+nonstop_tsc) on x86; true elsewhere
                               // (a non-invariant TSC is warned about once, by the environment
                               // warnings, src/sysinfo/warnings.cc)
};

// Calibrates the frequency (over ~`window_ms` of CLOCK_MONOTONIC_RAW, best of 3), the empty
// region overhead (median of `overhead_samples` back-to-back reads) and the counter's step (from
// 20000 consecutive reads). Fails only if the counter does not advance.
Expected<Calibration> Calibrate(int window_ms = 100, int overhead_samples = 200000);

// Reads /proc/cpuinfo flags: true when both constant_tsc and nonstop_tsc are present (x86),
// true on other architectures (their generic counters are fixed-frequency).
bool CounterIsInvariant();

}  // namespace kstacklab::timing
