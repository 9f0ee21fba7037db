// Running sums of a stream of values and the sample variance from them: the one place for the
// one-pass (sum, sum of squares) variance used where the values are not kept (the sampler's
// per-call durations, the summary's repetition means). Header-only, in the common layer, so that
// sampler/ and report/ share it without depending on stats/ (whose Variance() is two-pass over a
// stored vector).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace kstacklab {

struct RunningMoments {
  uint64_t n = 0;
  double sum = 0;
  double sum_sq = 0;

  void Add(double x) {
    ++n;
    sum += x;
    sum_sq += x * x;
  }
};

// Sample variance (n - 1 denominator) of `n` values with sum `sum` and sum of squares `sum_sq`:
// (sum_sq - n * mean^2) / (n - 1), mean = sum / n; a negative result (cancellation when the
// spread is tiny against the mean) is clamped to 0. NaN when n < 2.
inline double SampleVarianceFromSums(double n, double sum, double sum_sq) {
  if (!(n >= 2)) return std::numeric_limits<double>::quiet_NaN();
  const double mean = sum / n;
  return std::max(0.0, (sum_sq - n * mean * mean) / (n - 1));
}

inline double SampleVariance(const RunningMoments& m) {
  return SampleVarianceFromSums(static_cast<double>(m.n), m.sum, m.sum_sq);
}

}  // namespace kstacklab
