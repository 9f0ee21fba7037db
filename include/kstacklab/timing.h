// The cycle counter that brackets every timed call (DESIGN.md "timing").
//
//  * x86-64: RDTSC with LFENCE on both sides. The leading LFENCE waits until every earlier
//    instruction has completed locally, so the start read cannot happen before the previous
//    call retired; the trailing LFENCE keeps later instructions (the call being timed) from
//    starting before the read. The same pair ends the region, so the call is inside it.
//  * aarch64: ISB; MRS CNTVCT_EL0; ISB. Frequency from CNTFRQ_EL0 (checked by calibration).
//  * anything else: clock_gettime(CLOCK_MONOTONIC_RAW) in nanoseconds.
//
// Calibration measures the counter's rate against CLOCK_MONOTONIC_RAW and the cost of an empty
// timed region (the "timer overhead"), which the sampler subtracts and records.
#pragma once

#include <time.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kstacklab/error.h"

namespace kstacklab::timing {

// The hardware clock. Static functions so a sampler template can take a fake clock in tests.
struct CycleClock {
  static inline uint64_t Now() {
#if defined(__x86_64__)
    uint32_t lo, hi;
    asm volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
    return (static_cast<uint64_t>(hi) << 32) | lo;
#elif defined(__aarch64__)
    uint64_t v;
    asm volatile("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v)::"memory");
    return v;
#else
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
#endif
  }
  static const char* Source();
};

// Nanoseconds of CLOCK_MONOTONIC_RAW (the calibration reference).
uint64_t MonotonicRawNs();

struct Calibration {
  std::string source;
  double freq_hz = 0;         // counter ticks per second
  double overhead_ticks = 0;  // median ticks of an empty timed region
  double overhead_ns = 0;
  double overhead_min_ns = 0;  // fastest empty region seen (resolution floor)
  bool invariant = true;       // from CPU flags (constant_tsc+nonstop_tsc) on x86; true elsewhere
  std::vector<std::string> warnings;  // each with a remedy
};

// Calibrates the frequency (over ~`window_ms` of CLOCK_MONOTONIC_RAW, best of 3) and the empty
// region overhead (median of `overhead_samples` back-to-back reads). Fails only if the counter
// does not advance.
Expected<Calibration> Calibrate(int window_ms = 100, int overhead_samples = 200000);

// Reads /proc/cpuinfo flags: true when both constant_tsc and nonstop_tsc are present (x86),
// true on other architectures (their generic counters are fixed-frequency).
bool CounterIsInvariant();

}  // namespace kstacklab::timing
