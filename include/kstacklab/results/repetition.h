// One repetition — a timed batch of calls, the unit of a statistical sample — and the names of
// its metrics. What the sampler produces (kstacklab/sampler/sampler.h) and the result schema stores
// (kstacklab/results/results.h); plain data, no JSON.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kstacklab {

// Metric names in the order they are written and shown. Units: the benchmark's `unit` (ns).
// All are overhead-corrected (timer.overhead_ns subtracted) except stddev, which a constant
// shift does not change. Loop-mode repetitions carry "mean" only.
inline const std::vector<std::string>& MetricNames() {
  static const std::vector<std::string> k = {"mean", "stddev", "min",    "p50", "p90",
                                             "p99",  "p99.9",  "p99.99", "max"};
  return k;
}

// One repetition: a timed batch of `iterations` calls — the unit of a statistical sample.
struct Repetition {
  uint64_t iterations = 0;
  int session = 0;                        // which process (run --sessions) measured it, from 0
  std::map<std::string, double> metrics;  // keys from MetricNames()
  // Host stalls (per-call mode only): calls whose raw timed region exceeded the run's stall
  // threshold (run.stall_threshold_ns), and their summed raw duration in ns. nullopt = not
  // counted (loop mode, or files written before stalls were counted).
  std::optional<uint64_t> stalls;
  std::optional<double> stall_ns;
};

}  // namespace kstacklab
