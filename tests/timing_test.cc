#include "kstacklab/timing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace kstacklab::timing {
namespace {

TEST(Timing, CounterAdvancesMonotonically) {
  uint64_t a = CycleClock::Now();
  uint64_t b = CycleClock::Now();
  EXPECT_GE(b, a);
}

// Calibration must agree with CLOCK_MONOTONIC_RAW: ticks measured over a known interval,
// converted with the calibrated frequency, give that interval back (to 5 %: a loose bound
// because a VM can deschedule us mid-interval; the check is of the arithmetic, not of speed).
TEST(Timing, CalibratedFrequencyConvertsTicksToNanoseconds) {
  auto cal = Calibrate(20, 1000);
  ASSERT_TRUE(cal.ok());
  EXPECT_GT(cal->freq_hz, 1e6);
  EXPECT_GE(cal->overhead_ticks, 0);
  EXPECT_LE(cal->overhead_min_ns, cal->overhead_ns);
  // Best of 5 intervals: one undisturbed interval suffices to show the conversion is right.
  double best = 1e9;
  for (int i = 0; i < 5; ++i) {
    uint64_t n0 = MonotonicRawNs(), t0 = CycleClock::Now();
    while (MonotonicRawNs() - n0 < 20000000) {
    }
    uint64_t t1 = CycleClock::Now(), n1 = MonotonicRawNs();
    double ns = static_cast<double>(t1 - t0) / cal->freq_hz * 1e9;
    best = std::min(best, std::fabs(ns / static_cast<double>(n1 - n0) - 1.0));
  }
  EXPECT_LT(best, 0.05);
  EXPECT_FALSE(cal->source.empty());
}

}  // namespace
}  // namespace kstacklab::timing
