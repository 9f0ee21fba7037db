#include "kstacklab/timing/timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace kstacklab::timing {

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

namespace {

// The differences of back-to-back reads: difference -> how often (non-monotonic pairs skipped).
struct Differences {
  std::map<uint64_t, uint64_t> counts;
  uint64_t n = 0;
  uint64_t Count(uint64_t v) const {
    auto it = counts.find(v);
    return it == counts.end() ? uint64_t{0} : it->second;
  }
  // The smallest difference >= `from` seen at least `frequent` times; 0 if none.
  uint64_t LowestFrequent(uint64_t from, uint64_t frequent) const {
    for (const auto& [v, c] : counts) {
      if (v >= from && c >= frequent) return v;
    }
    return 0;
  }
};

Differences CountDifferences(const std::vector<uint64_t>& reads) {
  Differences d;
  for (size_t i = 1; i < reads.size(); ++i) {
    if (reads[i] < reads[i - 1]) continue;  // not monotonic here (migration): skip
    ++d.counts[reads[i] - reads[i - 1]];
    ++d.n;
  }
  return d;
}

// Ticks per step over the ordinary differences (those up to `cutoff`), each rounded to whole
// steps of `guess`; fix-up 1s are counted as ticks (the next difference repays them) but cross no
// step.
double RefineStep(const Differences& d, bool fixup, double cutoff, double guess) {
  double ticks = 0, crossed = 0;
  for (const auto& [v, k] : d.counts) {
    const double dv = static_cast<double>(v);
    if (v == 0 || dv > cutoff) continue;
    ticks += dv * static_cast<double>(k);
    if (fixup && v == 1) continue;
    crossed += std::max(1.0, std::round(dv / guess)) * static_cast<double>(k);
  }
  return crossed > 0 ? ticks / crossed : 0.0;
}

// No same-step reads: a read costs one step or more, so the lowest cluster `c` may be several
// steps (this project's 2.1 GHz EPYC guest: differences 42, 63, 84 = 2, 3, 4 steps of 21).
// Tries c, c/2, c/3 ... down to 5 ticks (below that +-1 tick covers most integers): the step is
// the largest for which the differences sit within +-1 tick of whole multiples, at least two
// different multiples being frequent. A finely ticking counter spreads over every value: 0.
double GridStep(const Differences& d, double c, double cutoff, uint64_t frequent) {
  for (int k = 1; c / k >= 5; ++k) {
    const double guess = c / k;
    double on_grid = 0, total = 0;
    std::map<long, uint64_t> multiples;
    for (const auto& [v, n_v] : d.counts) {
      const double dv = static_cast<double>(v);
      if (v == 0 || dv > cutoff) continue;
      const double m = std::round(dv / guess);
      total += static_cast<double>(n_v);
      if (m >= 1 && std::fabs(dv - m * guess) <= 1.0) {
        on_grid += static_cast<double>(n_v);
        multiples[static_cast<long>(m)] += n_v;
      }
    }
    int frequent_multiples = 0;
    for (const auto& [m, n_m] : multiples) frequent_multiples += n_m >= frequent ? 1 : 0;
    if (total > 0 && on_grid >= 0.95 * total && frequent_multiples >= 2) return guess;
  }
  return 0;
}

}  // namespace

CounterStep EstimateCounterStep(const std::vector<uint64_t>& reads) {
  if (reads.size() < 3) return {};
  const Differences d = CountDifferences(reads);
  const uint64_t frequent = std::max<uint64_t>(3, d.n / 200);  // 0.5 %: ignores rare disturbances
  const uint64_t lo2 = d.LowestFrequent(2, frequent);
  // The +1 monotonic fix-up: frequent 1s, no 0s, ordinary differences of 3 or more.
  const bool fixup = d.Count(1) >= frequent && d.Count(0) < frequent && lo2 >= 3;
  const uint64_t same = d.Count(0) + (fixup ? d.Count(1) : 0);      // reads within one step
  const uint64_t lo = fixup ? lo2 : d.LowestFrequent(1, frequent);  // lowest ordinary cluster
  if (lo == 0) return {};
  double cluster_ticks = 0, cluster_n = 0;
  for (uint64_t v = lo; v <= lo + 2; ++v) {
    cluster_ticks += static_cast<double>(v * d.Count(v));
    cluster_n += static_cast<double>(d.Count(v));
  }
  const double c = cluster_ticks / cluster_n;
  const double cutoff = 8 * c;  // longer differences are preemption: ignored
  // Reads faster than a step: the lowest cluster is one step. Otherwise search the grid.
  const double guess = same >= frequent ? c : GridStep(d, c, cutoff, frequent);
  if (guess == 0) return {};
  const double s = RefineStep(d, fixup, cutoff, guess);
  return s >= 1.5 ? CounterStep{s, true} : CounterStep{};
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
  const CounterStep step = EstimateCounterStep(ReadBackToBack<CycleClock>(20000));
  cal.step_ticks = step.ticks;
  cal.resolution_ns = step.ticks / cal.freq_hz * 1e9;
  cal.invariant = CounterIsInvariant();
  return cal;
}

}  // namespace kstacklab::timing
