// Sampler logic with a fake clock: durations are known exactly, so metrics are checked exactly.
#include "kstacklab/sampler/sampler.h"

#include <gtest/gtest.h>

#include <atomic>

#include "fakes.h"

namespace kstacklab::sampler {
namespace {

using fakes::Body;
using fakes::FakeClock;
using fakes::Script;

TEST(Sampler, PerCallRecordsEveryCallAndSubtractsOverhead) {
  Script s{{100, 200, 300, 400}};
  SamplerConfig cfg;
  cfg.iterations = 1000;
  cfg.warmup = 10;
  cfg.chunk = 64;  // several chunks
  // 1 tick = 1 ns; overhead = one clock read (the empty region costs kReadTicks).
  ClockParams clock{1e9, FakeClock::kReadTicks};
  SamplerScratch scratch(cfg.chunk);
  histogram::Histogram merged;
  // Warm-up consumes 10 scripted calls: (10 % 4) = 2 -> timed calls start at cost 300.
  auto rep = RunRepetition(Body(&s), cfg, clock, scratch, merged, nullptr);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(s.calls, 1010u);
  EXPECT_EQ(rep->iterations, 1000u);
  // Each timed region = cost + one clock read (3); corrected by 3 -> exactly the cost.
  EXPECT_DOUBLE_EQ(rep->metrics.at("mean"), 250.0);
  EXPECT_DOUBLE_EQ(rep->metrics.at("min"), 100.0);
  EXPECT_DOUBLE_EQ(rep->metrics.at("max"), 400.0);
  // Percentiles come from the histogram: within its 0.05 % binning error of the exact value.
  EXPECT_NEAR(rep->metrics.at("p50"), 200.0, 203 * 0.0005);
  EXPECT_NEAR(rep->metrics.at("p99"), 400.0, 403 * 0.0005);
  // stddev of {100,200,300,400} repeated 250 times, sample (n-1) form.
  double var = (4 * 250 * 12500.0) / 999.0;
  EXPECT_NEAR(rep->metrics.at("stddev"), std::sqrt(var), 1e-9);
  EXPECT_EQ(merged.count(), 1000u);
  EXPECT_EQ(merged.min(), 103000u);  // raw (uncorrected) picoseconds
}

TEST(Sampler, LoopModeReportsMeanOnly) {
  Script s{{50}};
  SamplerConfig cfg;
  cfg.iterations = 100;
  cfg.warmup = 0;
  cfg.mode = TimingMode::kLoop;
  ClockParams clock{1e9, FakeClock::kReadTicks};
  SamplerScratch scratch(16);
  histogram::Histogram merged;
  auto rep = RunRepetition(Body(&s), cfg, clock, scratch, merged, nullptr);
  ASSERT_TRUE(rep.ok());
  // region = 100*50 + 3 ticks; minus the 3-tick overhead, over 100 calls.
  EXPECT_DOUBLE_EQ(rep->metrics.at("mean"), 50.0);
  EXPECT_EQ(rep->metrics.size(), 1u);
  EXPECT_EQ(merged.count(), 0u);
}

TEST(Sampler, FrequencyConversion) {
  Script s{{2000}};
  SamplerConfig cfg;
  cfg.iterations = 10;
  cfg.warmup = 0;
  ClockParams clock{2e9, 0};  // 2 GHz: 2000 ticks = 1000 ns (+3 ticks read = 1.5 ns)
  SamplerScratch scratch(16);
  histogram::Histogram merged;
  auto rep = RunRepetition(Body(&s), cfg, clock, scratch, merged, nullptr);
  ASSERT_TRUE(rep.ok());
  EXPECT_DOUBLE_EQ(rep->metrics.at("mean"), 1001.5);
}

TEST(Sampler, CountsHostStallsAboveTheThreshold) {
  // One call in four takes 20 us; the region adds one clock read (3 ticks = 3 ns at 1 GHz).
  Script s{{100, 100, 20000, 9997}};
  SamplerConfig cfg;
  cfg.iterations = 1000;
  cfg.warmup = 0;
  cfg.chunk = 64;
  cfg.stall_threshold_ns = 10000;  // 9997 + 3 = 10000 is not above it: not a stall
  SamplerScratch scratch(cfg.chunk);
  histogram::Histogram merged;
  auto rep = RunRepetition(Body(&s), cfg, ClockParams{1e9, FakeClock::kReadTicks}, scratch, merged,
                           nullptr);
  ASSERT_TRUE(rep.ok());
  ASSERT_TRUE(rep->stalls.has_value() && rep->stall_ns.has_value());
  EXPECT_EQ(*rep->stalls, 250u);
  EXPECT_DOUBLE_EQ(*rep->stall_ns, 250 * 20003.0);  // raw durations, overhead not subtracted
  // A 2 GHz clock: the threshold is in ns, so the 20000-tick call (10 us + 1.5 ns) stalls and
  // the 9997-tick one (5 us) does not.
  cfg.iterations = 4;
  auto fast = RunRepetition(Body(&s), cfg, ClockParams{2e9, 0}, scratch, merged, nullptr);
  ASSERT_TRUE(fast.ok());
  EXPECT_EQ(*fast->stalls, 1u);
}

TEST(Sampler, CallsLongerThanTheThresholdCountNoStalls) {
  // Every call takes 20 us (a slow row, like a 1 GiB fork): with a 10 us threshold each call
  // would be a "stall". The typical (median) call is not below the threshold, so nothing is
  // counted — unknown, not "every call stalled".
  Script s{{20000}};
  SamplerConfig cfg;
  cfg.iterations = 10;
  cfg.warmup = 0;
  cfg.stall_threshold_ns = 10000;
  SamplerScratch scratch(16);
  histogram::Histogram merged;
  auto rep = RunRepetition(Body(&s), cfg, ClockParams{1e9, 0}, scratch, merged, nullptr);
  ASSERT_TRUE(rep.ok());
  EXPECT_FALSE(rep->stalls.has_value());
  EXPECT_FALSE(rep->stall_ns.has_value());
  // The same calls under a 50 us threshold are ordinary: counted, zero.
  cfg.stall_threshold_ns = 50000;
  auto counted = RunRepetition(Body(&s), cfg, ClockParams{1e9, 0}, scratch, merged, nullptr);
  ASSERT_TRUE(counted.ok() && counted->stalls.has_value());
  EXPECT_EQ(*counted->stalls, 0u);
}

TEST(Sampler, LoopModeCountsNoStalls) {
  Script s{{20000}};
  SamplerConfig cfg;
  cfg.iterations = 10;
  cfg.warmup = 0;
  cfg.mode = TimingMode::kLoop;
  SamplerScratch scratch(16);
  histogram::Histogram merged;
  auto rep = RunRepetition(Body(&s), cfg, ClockParams{1e9, 0}, scratch, merged, nullptr);
  ASSERT_TRUE(rep.ok());
  EXPECT_FALSE(rep->stalls.has_value());  // unknown, not zero: no per-call durations
}

TEST(Sampler, StopFlagInterruptsBetweenChunks) {
  Script s{{10}};
  SamplerConfig cfg;
  cfg.iterations = 1000;
  cfg.warmup = 0;
  cfg.chunk = 100;
  std::atomic<bool> stop{true};
  SamplerScratch scratch(cfg.chunk);
  histogram::Histogram merged;
  auto rep = RunRepetition(Body(&s), cfg, ClockParams{1e9, 0}, scratch, merged, &stop);
  EXPECT_FALSE(rep.ok());
  EXPECT_EQ(merged.count(), 0u);  // an interrupted repetition contributes nothing
}

}  // namespace
}  // namespace kstacklab::sampler
