// What one timer step means for a comparison (stats/compare.cc): per-call metrics move in whole
// steps of the counter (TimerInfo::resolution_ns, ~10 ns on the AMD guests), so a change smaller
// than a step, or a baseline below one, is the counter's quantisation and not the call's. The
// step itself is measured by timing::EstimateCounterStep (include/kstacklab/timing/timing.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>

namespace kstacklab::stats {

// True when `metric` is read off the per-call distribution (min, p50 ... p99.99, max), whose
// values move in whole timer steps; false for mean and stddev, which average the step out.
inline bool PerCallMetric(std::string_view metric) {
  return metric == "min" || metric == "max" ||
         (metric.size() > 1 && metric[0] == 'p' && metric[1] >= '0' && metric[1] <= '9');
}

// Per-call values are histogram bucket midpoints less the timer overhead, up to 0.049 % off
// (Histogram::kDefaultSubBucketBits): a value within this fraction below one step is one step.
inline constexpr double kTimerStepTolerance = 0.001;

// True when `metric` is a PerCallMetric and its change |variant_ns - base_ns| is
// smaller than one timer step — the larger of the two runs' TimerInfo::resolution_ns — so the
// change is the counter's quantisation, not the call's. False when neither step is known, a value
// is NaN, or the metric is mean/stddev. Pure.
inline bool ChangeBelowTimerStep(std::string_view metric, double base_ns, double variant_ns,
                                 std::optional<double> base_step_ns,
                                 std::optional<double> variant_step_ns) {
  if (!PerCallMetric(metric)) return false;
  const double step = std::max(base_step_ns.value_or(0), variant_step_ns.value_or(0));
  if (!(step > 0) || std::isnan(base_ns) || std::isnan(variant_ns)) return false;
  return std::fabs(variant_ns - base_ns) < step * (1 - kTimerStepTolerance);
}

// True when `metric` is a PerCallMetric and the baseline's value lies in
// (0, step) — above zero but below one timer step (less the tolerance above) (the larger of the two
// runs' steps): the counter cannot resolve it, so a % change against it means nothing (a p50 of
// 0.0004 ns, the mean of per-repetition p50s that are almost all 0, made a change of +1 230 000 %).
// False when neither step is known or the value is NaN or <= 0 (that case has its own mark). Pure.
inline bool BaselineBelowTimerStep(std::string_view metric, double base_ns,
                                   std::optional<double> base_step_ns,
                                   std::optional<double> variant_step_ns) {
  if (!PerCallMetric(metric)) return false;
  const double step = std::max(base_step_ns.value_or(0), variant_step_ns.value_or(0));
  return step > 0 && base_ns > 0 && base_ns < step * (1 - kTimerStepTolerance);
}

// The footnote for the cells ChangeBelowTimerStep() marks.
inline constexpr const char* kTimerStepFootnote =
    "(s) the change is smaller than one timer step (timer.resolution_ns): per-call percentiles "
    "move in whole steps, so this difference is the counter's, not the call's";

}  // namespace kstacklab::stats
