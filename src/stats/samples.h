// Samples of a comparison cell (private to src/stats), by level (DESIGN.md "Statistics"): per-run
// means with several runs, else per-session means with several sessions, else repetitions.
#pragma once

#include <string>
#include <vector>

#include "kstacklab/results/results.h"
#include "kstacklab/stats/compare.h"
#include "kstacklab/stats/stats.h"

namespace kstacklab::stats {

struct CellSamples {
  std::vector<double> samples;
  int repetitions = 0;
  int sessions = 0;  // distinct (run, session) pairs holding the metric
  int runs = 0;      // runs holding the metric
  SampleUnit unit = SampleUnit::kRepetition;
  stats::VarianceComponents components;
};

// `runs[i]` holds the entries of run i (one input). Repetitions without `metric` are skipped, and
// a run without any is not counted. A session's value is the mean of its repetitions, a run's
// value the mean of its session means; sessions and runs in ascending order.
CellSamples SamplesOf(const std::vector<std::vector<const BenchmarkResult*>>& runs,
                      const std::string& metric);

}  // namespace kstacklab::stats
