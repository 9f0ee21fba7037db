#include "kstacklab/timing/timing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace kstacklab::timing {
namespace {

// The timed-region clock and the unfenced read are one counter: an unfenced read taken between
// two fenced ones lies between them (fails if they read different clocks or units).
TEST(Timing, CycleClockAndReadCounterReadOneCounter) {
  for (int i = 0; i < 1000; ++i) {
    const uint64_t a = CycleClock::Now();
    const uint64_t b = ReadCounter();
    const uint64_t c = CycleClock::Now();
    ASSERT_LE(a, b);
    ASSERT_LE(b, c);
  }
}

// Calibration must agree with CLOCK_MONOTONIC_RAW: ticks measured over a known interval,
// converted with the calibrated frequency, give that interval back (to 5 %: a loose bound
// because a VM can deschedule us mid-interval; the check is of the arithmetic, not of speed).
TEST(Timing, CalibratedFrequencyConvertsTicksToNanoseconds) {
  auto cal = Calibrate(20, 1000);
  ASSERT_TRUE(cal.ok());
  EXPECT_GT(cal->freq_hz, 1e6);
  // The step in ns is the step in ticks at the calibrated rate.
  EXPECT_NEAR(cal->resolution_ns, cal->step_ticks / cal->freq_hz * 1e9, 1e-9);
  EXPECT_GE(cal->step_ticks, 1.0);
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
  EXPECT_STREQ(cal->source.c_str(), kCounterName);
}

// Result files name the architecture's counter (timer.source), never x86's on arm64; on aarch64
// the calibrated rate is the architected one, CNTFRQ_EL0 (also under qemu-user, whose counter
// follows the host's clock at the emulated CPU's CNTFRQ_EL0).
TEST(Timing, TheCounterIsTheArchitecturesOwn) {
#if defined(__x86_64__)
  EXPECT_STREQ(kCounterName, "tsc");
#elif defined(__aarch64__)
  EXPECT_STREQ(kCounterName, "cntvct_el0");
  uint64_t cntfrq = 0;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(cntfrq));
  ASSERT_GT(cntfrq, 0u);
  auto cal = Calibrate(50, 2000);
  ASSERT_TRUE(cal.ok()) << cal.error().message;
  EXPECT_NEAR(cal->freq_hz, static_cast<double>(cntfrq), 0.01 * static_cast<double>(cntfrq));
#else
  EXPECT_STREQ(kCounterName, "clock_gettime(CLOCK_MONOTONIC_RAW)");
#endif
}

// An injected counter: `ticks_per_ns` ticks per ns whose value only moves in steps of
// `step_ticks` (floor of a multiple, as hardware updating a fine counter coarsely); read every
// read_ns + U[0, jitter_ns); with `fixup`, a read within the same step returns the previous
// value + 1 (the monotonic fix-up seen on AMD EPYC guests: differences 25, 26 or 1). Every
// 997th read is delayed 50 us (a preemption) to show outliers are ignored.
std::vector<uint64_t> FakeReads(double ticks_per_ns, double step_ticks, double read_ns,
                                double jitter_ns, bool fixup, size_t n = 20000) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> jitter(0.0, jitter_ns);
  std::vector<uint64_t> reads;
  double t_ns = 1e6;
  uint64_t last = 0;
  for (size_t i = 0; i < n; ++i) {
    t_ns += read_ns + jitter(rng) + (i % 997 == 996 ? 50000.0 : 0.0);
    const double steps = std::floor(t_ns * ticks_per_ns / step_ticks);
    uint64_t v = static_cast<uint64_t>(std::floor(steps * step_ticks));
    if (fixup && i > 0 && v <= last) v = last + 1;
    reads.push_back(v);
    last = v;
  }
  return reads;
}

TEST(CounterStep, FinelyTickingCounterHasStepOne) {
  // 1 tick = 1 ns, reads cost 30-45 ns: differences spread over every value.
  CounterStep s = EstimateCounterStep(FakeReads(1.0, 1.0, 30, 15, false));
  EXPECT_FALSE(s.quantised);
  EXPECT_EQ(s.ticks, 1.0);
}

TEST(CounterStep, AmdGuestTscSteps26TicksWithFixups) {
  // 2596 MHz TSC moving 25.96 ticks (10 ns) at a time, read every 6-12 ns: differences 1, 25, 26.
  auto reads = FakeReads(2.596, 25.96, 6, 6, true);
  CounterStep s = EstimateCounterStep(reads);
  EXPECT_TRUE(s.quantised);
  EXPECT_NEAR(s.ticks, 25.96, 0.3);
  EXPECT_NEAR(s.ticks / 2.596, 10.0, 0.15);  // ns
}

TEST(CounterStep, StepFortyWithFixupsAtOneGigahertz) {
  CounterStep s = EstimateCounterStep(FakeReads(1.0, 40, 25, 10, true));
  EXPECT_TRUE(s.quantised);
  EXPECT_NEAR(s.ticks, 40.0, 0.5);
}

TEST(CounterStep, SlowGenericTimerIsOneTickOfFortyNs) {
  // arm64 cntvct_el0 at 25 MHz: one tick = 40 ns, reads 30-40 ns apart give 0 or 1, no fix-up.
  CounterStep s = EstimateCounterStep(FakeReads(0.025, 1, 30, 10, false));
  EXPECT_EQ(s.ticks, 1.0);  // the step is the tick: 1 / 25 MHz = 40 ns
}

TEST(CounterStep, StepSmallerThanTheReadCostIsFoundFromMultiples) {
  // The same 26-tick step read every 12-32 ns: no same-step reads, differences at 1-4 steps.
  CounterStep s = EstimateCounterStep(FakeReads(2.596, 25.96, 12, 20, false));
  EXPECT_TRUE(s.quantised);
  EXPECT_NEAR(s.ticks, 25.96, 0.3);
}

TEST(CounterStep, ReadCostOfSeveralStepsFindsTheStepNotTheCluster) {
  // A 2096 MHz EPYC guest measured here: differences 42, 63 and 84 ticks only — 2, 3 and 4 steps
  // of 20.96 ticks (10 ns); the lowest cluster (42) is two steps.
  CounterStep s = EstimateCounterStep(FakeReads(2.096, 20.96, 20.5, 14, false));
  EXPECT_TRUE(s.quantised);
  EXPECT_NEAR(s.ticks, 20.96, 0.3);
}

TEST(CounterStep, ConstantReadCostIsNotMistakenForAStep) {
  // Every read exactly 60 ticks apart on a 1-tick counter: one cluster, no same-step reads —
  // indistinguishable from a 60-tick step, so no step is claimed.
  CounterStep s = EstimateCounterStep(FakeReads(1.0, 1.0, 60, 0, false));
  EXPECT_FALSE(s.quantised);
  EXPECT_EQ(s.ticks, 1.0);
}

TEST(CounterStep, TooFewReadsGiveStepOne) {
  EXPECT_EQ(EstimateCounterStep({}).ticks, 1.0);
  EXPECT_EQ(EstimateCounterStep({5, 31}).ticks, 1.0);
}

// ReadBackToBack drives any clock: a fake whose every read advances 26 ticks.
struct SteppingClock {
  static inline uint64_t now = 0;
  static uint64_t Now() { return now += 26; }
};

TEST(CounterStep, ReadBackToBackTakesConsecutiveReads) {
  SteppingClock::now = 0;
  std::vector<uint64_t> r = ReadBackToBack<SteppingClock>(4);
  EXPECT_EQ(r, (std::vector<uint64_t>{26, 52, 78, 104}));
}

}  // namespace
}  // namespace kstacklab::timing
