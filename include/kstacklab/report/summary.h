// The run summary table (what `run` and `show` print on stdout).
#pragma once

#include <string>

#include "kstacklab/results/results.h"

namespace kstacklab::report {

struct BenchmarkSummary {
  double mean = 0;    // mean of the repetitions' means (equal iterations: the overall mean)
  double cv_pct = 0;  // coefficient of variation of the repetition means, %
  double p50 = 0, p99 = 0, p999 = 0, max = 0;  // pooled over repetitions, overhead-corrected
  size_t repetitions = 0;
  uint64_t calls = 0;
  bool has_percentiles = false;  // false in loop mode
  // Host stalls over the repetitions that counted them (NaN when none did, e.g. loop mode):
  // calls above the run's stall threshold per million calls, and their share of the measured
  // (raw) time in %.
  double stalls_per_million = 0;
  double stall_time_pct = 0;
};

// NaN fields when there is no data.
BenchmarkSummary Summarize(const BenchmarkResult& bench, double overhead_ns);

// Plain-text table: a header naming the timer, its step and its overhead, one row per benchmark
// (name, params, variant), mean p50 p99 p99.9 max (ns), CV across repetitions, host stalls per
// million calls, repetitions x calls; then notes: negative corrected values, benchmarks whose p50
// is within kTimerStepNoteSteps timer steps (their percentiles show the step), host stalls.
std::string RenderSummary(const RunResult& run);

// A per-call p50 below this many timer steps is dominated by the step (RenderSummary's note).
inline constexpr double kTimerStepNoteSteps = 10;

}  // namespace kstacklab::report
