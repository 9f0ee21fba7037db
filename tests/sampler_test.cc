// Sampler logic with a fake clock: durations are known exactly, so metrics are checked exactly.
#include "kstacklab/sampler.h"

#include <gtest/gtest.h>

#include <atomic>

#include "kstacklab/runner.h"

namespace kstacklab {
namespace {

// A clock that only advances when the fake call says so: a call "costs" the next value from a
// script, and every clock read costs kReadTicks (the timer overhead).
struct FakeClock {
  static inline uint64_t now = 0;
  static constexpr uint64_t kReadTicks = 3;
  static uint64_t Now() {
    uint64_t t = now;
    now += kReadTicks;
    return t;
  }
};

struct Script {
  std::vector<uint64_t> costs;
  size_t next = 0;
  uint64_t calls = 0;
};

void FakeCall(void* s) {
  auto* script = static_cast<Script*>(s);
  FakeClock::now += script->costs[script->next++ % script->costs.size()];
  ++script->calls;
}

TimedBody Body(Script* s) {
  return TimedBody{&TimePerCall<FakeClock, FakeCall>, &TimeLoop<FakeClock, FakeCall>, s};
}

TEST(Sampler, PerCallRecordsEveryCallAndSubtractsOverhead) {
  Script s{{100, 200, 300, 400}};
  SamplerConfig cfg;
  cfg.iterations = 1000;
  cfg.warmup = 10;
  cfg.chunk = 64;  // several chunks
  // 1 tick = 1 ns; overhead = one clock read (the empty region costs kReadTicks).
  ClockParams clock{1e9, FakeClock::kReadTicks};
  SamplerScratch scratch(cfg.chunk);
  Histogram merged;
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
  Histogram merged;
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
  Histogram merged;
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
  Histogram merged;
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
  Histogram merged;
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
  Histogram merged;
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
  Histogram merged;
  auto rep = RunRepetition(Body(&s), cfg, ClockParams{1e9, 0}, scratch, merged, &stop);
  EXPECT_FALSE(rep.ok());
  EXPECT_EQ(merged.count(), 0u);  // an interrupted repetition contributes nothing
}

WorkloadDef FakeRow(const std::string& variant, Script* s) {
  WorkloadDef w;
  w.name = "fake/call";
  w.variant = variant;
  w.setup = [s]() -> Expected<std::shared_ptr<void>> {
    return std::shared_ptr<void>(s, [](void*) {});
  };
  w.percall = &TimePerCall<FakeClock, FakeCall>;
  w.loop = &TimeLoop<FakeClock, FakeCall>;
  return w;
}

TEST(RoundOrder, AlternatesDirection) {
  EXPECT_EQ(RoundOrder(2, 0), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(RoundOrder(2, 1), (std::vector<size_t>{1, 0}));
  EXPECT_EQ(RoundOrder(3, 2), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(RoundOrder(3, 3), (std::vector<size_t>{2, 1, 0}));
  EXPECT_TRUE(RoundOrder(0, 1).empty());
}

TEST(Runner, InterleavedRepetitionsAndSession) {
  Script a{{10}}, b{{20}};
  RunOptions opt;
  opt.repetitions = 3;
  opt.session = 2;
  opt.sampler.iterations = 50;
  opt.sampler.warmup = 0;
  opt.sampler.chunk = 16;
  std::vector<std::string> order;
  std::vector<WorkloadDef> rows = {FakeRow("a", &a), FakeRow("b", &b)};
  rows[0].baseline = true;
  auto r = RunWorkloads(rows, opt, ClockParams{1e9, 3}, nullptr,
                        [&](double, double, const std::string& row) { order.push_back(row); });
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->benchmarks.size(), 2u);
  EXPECT_EQ(r->benchmarks[1].variant, "b");
  EXPECT_TRUE(r->benchmarks[0].baseline);  // copied from the row
  EXPECT_FALSE(r->benchmarks[1].baseline);
  EXPECT_EQ(r->benchmarks[0].repetitions.size(), 3u);
  EXPECT_EQ(r->benchmarks[1].repetitions[2].session, 2);
  EXPECT_DOUBLE_EQ(r->benchmarks[1].repetitions[0].metrics.at("mean"), 20.0);
  // Repetition r of every row before r+1 of any, the direction alternating (RoundOrder).
  std::vector<std::string> expect = {
      "fake/call:a", "fake/call:b", "fake/call:b", "fake/call:a", "fake/call:a", "fake/call:b", ""};
  EXPECT_EQ(order, expect);
  EXPECT_FALSE(r->partial);
}

// A machine that slows down steadily (every call costs 1 ns more than the one before, whoever
// makes it): two identical rows must come out alike. In a fixed order the second row would pay
// for the first's calls in every round (here 400 ns more per call); in RoundOrder each row's
// calls sit at the same mean time over every two repetitions, so the means are equal.
uint64_t g_drift_calls = 0;
void DriftingCall(void*) { FakeClock::now += 1000 + g_drift_calls++; }

TEST(Runner, LinearDriftHitsIdenticalRowsAlike) {
  g_drift_calls = 0;
  std::vector<WorkloadDef> rows(2);
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].name = "fake/drift";
    rows[i].variant = i == 0 ? "a" : "b";
    rows[i].setup = []() -> Expected<std::shared_ptr<void>> { return std::shared_ptr<void>(); };
    rows[i].percall = &TimePerCall<FakeClock, DriftingCall>;
    rows[i].loop = &TimeLoop<FakeClock, DriftingCall>;
  }
  RunOptions opt;
  opt.repetitions = 4;
  opt.sampler.iterations = 400;
  opt.sampler.warmup = 0;
  opt.sampler.chunk = 64;
  auto r = RunWorkloads(rows, opt, ClockParams{1e9, FakeClock::kReadTicks}, nullptr, nullptr);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(g_drift_calls, 4u * 2u * 400u);
  auto mean_of = [](const BenchmarkResult& b) {
    double sum = 0;
    for (const Repetition& rep : b.repetitions) sum += rep.metrics.at("mean");
    return sum / static_cast<double>(b.repetitions.size());
  };
  // Calls 0..3199 cost 1000..4199 ns: the mean over all is 2599.5 ns, and each row gets it.
  EXPECT_DOUBLE_EQ(mean_of(r->benchmarks[0]), 2599.5);
  EXPECT_DOUBLE_EQ(mean_of(r->benchmarks[1]), 2599.5);
}

TEST(Runner, SetupFailureNamesTheRowBeforeMeasuring) {
  WorkloadDef w;
  w.name = "fake/broken";
  w.setup = []() -> Expected<std::shared_ptr<void>> { return RuntimeError("returned -ENOSYS"); };
  RunOptions opt;
  auto r = RunWorkloads({w}, opt, ClockParams{1e9, 0}, nullptr, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "fake/broken: returned -ENOSYS");
}

TEST(Runner, StopGivesPartialResultWithCompletedRepetitions) {
  Script a{{10}};
  RunOptions opt;
  opt.repetitions = 5;
  opt.sampler.iterations = 10;
  opt.sampler.warmup = 0;
  opt.sampler.chunk = 16;
  std::atomic<bool> stop{false};
  int seen = 0;
  auto r = RunWorkloads({FakeRow("", &a)}, opt, ClockParams{1e9, 0}, &stop,
                        [&](double, double, const std::string&) {
                          if (++seen == 3) stop = true;  // during the third repetition
                        });
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->partial);
  EXPECT_EQ(r->benchmarks[0].repetitions.size(), 2u);
}

TEST(CpuPin, RejectsCpuOutsideTheAllowedSet) {
  ScopedCpuPin pin;
  Status st = pin.Pin(100000);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().exit_code, kExitUsage);
  EXPECT_NE(st.error().message.find("allowed"), std::string::npos);
  // A library message names the value, never a command-line flag.
  EXPECT_NE(st.error().message.find("CPU 100000"), std::string::npos) << st.error().message;
  EXPECT_EQ(st.error().message.find("--"), std::string::npos) << st.error().message;
}

TEST(CpuPin, RestoresAffinityOnDestruction) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  {
    ScopedCpuPin pin;
    ASSERT_TRUE(pin.Pin(sched_getcpu()).ok());
    cpu_set_t during;
    sched_getaffinity(0, sizeof during, &during);
    EXPECT_EQ(CPU_COUNT(&during), 1);
  }
  cpu_set_t after;
  sched_getaffinity(0, sizeof after, &after);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
}

}  // namespace
}  // namespace kstacklab
