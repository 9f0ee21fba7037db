// Cost of the primitives inside and around the timed region: one timer read, an empty timed
// region (what the sampler subtracts), and one histogram record (done between chunks).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kstacklab/histogram/histogram.h"
#include "kstacklab/timing/timing.h"

namespace kstacklab {
namespace {

void BM_TimerRead(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(timing::CycleClock::Now());
}
BENCHMARK(BM_TimerRead);

void BM_EmptyTimedRegion(benchmark::State& state) {
  uint64_t sink = 0;
  for (auto _ : state) {
    uint64_t a = timing::CycleClock::Now();
    uint64_t b = timing::CycleClock::Now();
    sink += b - a;
  }
  benchmark::DoNotOptimize(sink);
}
BENCHMARK(BM_EmptyTimedRegion);

void BM_ClockGettimeMonotonicRaw(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(timing::MonotonicRawNs());
}
BENCHMARK(BM_ClockGettimeMonotonicRaw);

// Values as the sampler records them: picoseconds of syscall-like durations (100 ns - 10 us).
void BM_HistogramRecord(benchmark::State& state) {
  std::mt19937_64 rng(1);
  std::lognormal_distribution<double> dist(12.2, 0.6);
  std::vector<uint64_t> values(4096);
  for (auto& v : values) v = static_cast<uint64_t>(dist(rng));
  histogram::Histogram h;
  size_t i = 0;
  for (auto _ : state) {
    h.Record(values[i++ & 4095]);
  }
  benchmark::DoNotOptimize(h.count());
}
BENCHMARK(BM_HistogramRecord);

void BM_HistogramPercentile(benchmark::State& state) {
  histogram::Histogram h;
  std::mt19937_64 rng(1);
  std::lognormal_distribution<double> dist(12.2, 0.6);
  for (int i = 0; i < 1000000; ++i) h.Record(static_cast<uint64_t>(dist(rng)));
  for (auto _ : state) benchmark::DoNotOptimize(h.ValueAtPercentile(99.9));
}
BENCHMARK(BM_HistogramPercentile);

}  // namespace
}  // namespace kstacklab
