#include "kstacklab/timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace kstacklab::timing {

const char* CycleClock::Source() {
#if defined(__x86_64__)
  return "tsc";
#elif defined(__aarch64__)
  return "cntvct_el0";
#else
  return "clock_gettime(CLOCK_MONOTONIC_RAW)";
#endif
}

uint64_t MonotonicRawNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool CounterIsInvariant() {
#if defined(__x86_64__)
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      std::istringstream ss(line.substr(line.find(':') + 1));
      std::string flag;
      bool constant = false, nonstop = false;
      while (ss >> flag) {
        constant |= flag == "constant_tsc";
        nonstop |= flag == "nonstop_tsc";
      }
      return constant && nonstop;
    }
  }
  return false;
#else
  return true;
#endif
}

Expected<Calibration> Calibrate(int window_ms, int overhead_samples) {
  Calibration cal;
  cal.source = CycleClock::Source();
  // Frequency: ticks over a CLOCK_MONOTONIC_RAW window; keep the estimate from the window with
  // the tightest bracketing (least disturbed by preemption).
  double best_freq = 0, best_slack = 1e300;
  for (int attempt = 0; attempt < 3; ++attempt) {
    uint64_t n0a = MonotonicRawNs();
    uint64_t t0 = CycleClock::Now();
    uint64_t n0b = MonotonicRawNs();
    uint64_t target = n0b + static_cast<uint64_t>(window_ms) * 1000000ull;
    while (MonotonicRawNs() < target) {
    }
    uint64_t n1a = MonotonicRawNs();
    uint64_t t1 = CycleClock::Now();
    uint64_t n1b = MonotonicRawNs();
    double slack = static_cast<double>((n0b - n0a) + (n1b - n1a));
    double ns = (static_cast<double>(n1a + n1b) - static_cast<double>(n0a + n0b)) / 2.0;
    if (t1 <= t0 || ns <= 0) continue;
    if (slack < best_slack) {
      best_slack = slack;
      best_freq = static_cast<double>(t1 - t0) / ns * 1e9;
    }
  }
  if (best_freq <= 0) {
    return RuntimeError(
        fmt::format("the {} counter does not advance; cannot time anything", cal.source));
  }
  cal.freq_hz = best_freq;
#if defined(__aarch64__)
  uint64_t cntfrq;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(cntfrq));
  if (cntfrq && std::abs(static_cast<double>(cntfrq) - best_freq) / best_freq < 0.01) {
    cal.freq_hz = static_cast<double>(cntfrq);
  }
#endif
  // Overhead: an empty timed region, exactly as the sampler brackets a call.
  std::vector<uint64_t> d(static_cast<size_t>(std::max(overhead_samples, 1)));
  for (auto& x : d) {
    uint64_t a = CycleClock::Now();
    uint64_t b = CycleClock::Now();
    x = b - a;
  }
  std::sort(d.begin(), d.end());
  cal.overhead_ticks = static_cast<double>(d[d.size() / 2]);
  cal.overhead_ns = cal.overhead_ticks / cal.freq_hz * 1e9;
  cal.overhead_min_ns = static_cast<double>(d.front()) / cal.freq_hz * 1e9;
  cal.invariant = CounterIsInvariant();
  if (!cal.invariant) {
    cal.warnings.push_back(
        "the TSC is not invariant (no constant_tsc/nonstop_tsc): its rate may follow CPU "
        "frequency; pin the frequency (cpupower frequency-set -g performance) or distrust ns");
  }
  return cal;
}

}  // namespace kstacklab::timing
