// Sample-size planning (`kstacklab plan`): from pilot runs, grouped into configurations as
// `compare` groups them (kstacklab/stats/compare.h), how many runs x sessions x repetitions detect
// a given change at the least cost. Library kstacklab_stats (src/stats/sample_size.cc); rendered by
// kstacklab/report/sample_size_report.h.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/stats/compare.h"
#include "kstacklab/stats/stats.h"

namespace kstacklab::stats {

// `kstacklab plan`: variance components per level from pilot runs, and the runs x sessions x
// repetitions per configuration that detect a relative change of target_pct at the least cost
// (stats::PlanLevels). Inputs are grouped into configurations as by BuildCompareTable.
struct SampleSizeOptions {
  std::vector<std::string> metrics = DefaultCompareMetrics();
  double target_pct = 0;
  double alpha = 0.05;
  double power = 0.8;
  double cost_run_s = 120;       // a reboot
  double cost_session_s = 1;     // a process start, calibration and environment capture
  double cost_repetition_s = 0;  // 0 = from the pilot: iterations x mean of the row
};
struct SampleSizeRow {
  RowKey key;                 // the benchmark's name and params (report/ labels it)
  std::string configuration;  // column name as in compare
  std::string metric;
  std::string unit;
  int n = 0;  // pilot samples at `sample_unit`
  SampleUnit sample_unit = SampleUnit::kRepetition;
  int runs = 0, sessions = 0, repetitions = 0;  // pilot: inputs, sessions, repetitions
  double mean = 0;
  double cv_pct = 0;   // 100 * SD / mean of the samples; NaN with n < 2
  double mdc_pct = 0;  // detectable change with the pilot's n on both sides; NaN with n < 2
  size_t needed = 0;   // samples (of sample_unit) per side for target_pct; 0 if not computable
  stats::VarianceComponents components;
  double cost_repetition_s = 0;  // used for the plan
  stats::LevelPlan plan;         // runs x sessions x repetitions per configuration
  bool not_positive = false;     // mean <= 0: the row cannot be planned (plan left empty)
};
// UsageErrors: no inputs, unknown metric (naming the stored ones), target/alpha/power/costs out
// of range.
Expected<std::vector<SampleSizeRow>> PlanSampleSizes(const std::vector<CompareInput>& inputs,
                                                     const SampleSizeOptions& options);

}  // namespace kstacklab::stats
