#include "kstacklab/sampler/sampler.h"

#include <algorithm>
#include <cmath>

#include "kstacklab/common/moments.h"

namespace kstacklab::sampler {

std::map<std::string, double> RepetitionMetrics(const histogram::Histogram& rep_ps, double sum_ns,
                                                double sum_sq_ns, double overhead_ns) {
  std::map<std::string, double> m;
  const double n = static_cast<double>(rep_ps.count());
  if (n == 0) return m;
  const double mean = sum_ns / n;
  const double var = n > 1 ? SampleVarianceFromSums(n, sum_ns, sum_sq_ns) : 0.0;
  auto pct = [&](double p) { return histogram::PsToNs(rep_ps.ValueAtPercentile(p)) - overhead_ns; };
  m["mean"] = mean - overhead_ns;
  m["stddev"] = std::sqrt(var);
  m["min"] = histogram::PsToNs(static_cast<double>(rep_ps.min())) - overhead_ns;
  m["p50"] = pct(50);
  m["p90"] = pct(90);
  m["p99"] = pct(99);
  m["p99.9"] = pct(99.9);
  m["p99.99"] = pct(99.99);
  m["max"] = histogram::PsToNs(static_cast<double>(rep_ps.max())) - overhead_ns;
  return m;
}

Expected<Repetition> RunRepetition(const TimedBody& body, const SamplerConfig& config,
                                   const ClockParams& clock, SamplerScratch& scratch,
                                   histogram::Histogram& merged, const std::atomic<bool>* stop) {
  KSTACKLAB_CHECK(config.iterations > 0 && clock.freq_hz > 0);
  auto stopped = [&] { return stop && stop->load(std::memory_order_relaxed); };
  const double ns_per_tick = 1e9 / clock.freq_hz;
  const double overhead_ns = clock.overhead_ticks * ns_per_tick;
  Repetition rep;
  rep.iterations = config.iterations;

  if (config.mode == TimingMode::kLoop) {
    KSTACKLAB_CHECK(body.loop != nullptr);
    // Warm-up in chunks so that a stop request is seen within one chunk, not after all of it.
    for (uint64_t done = 0; done < config.warmup;) {
      if (stopped()) return RuntimeError("interrupted");
      uint64_t n = std::min<uint64_t>(std::max<uint64_t>(config.chunk, 1), config.warmup - done);
      body.loop(body.state, n);
      done += n;
    }
    if (stopped()) return RuntimeError("interrupted");
    uint64_t ticks = body.loop(body.state, config.iterations);
    if (stopped()) return RuntimeError("interrupted");
    double per_call = static_cast<double>(ticks) * ns_per_tick;
    rep.metrics["mean"] = (per_call - overhead_ns) / static_cast<double>(config.iterations);
    return rep;
  }

  KSTACKLAB_CHECK(body.percall != nullptr);
  std::vector<uint64_t>& buf = scratch.ticks();
  KSTACKLAB_CHECK(!buf.empty());
  for (uint64_t done = 0; done < config.warmup;) {
    if (stopped()) return RuntimeError("interrupted");
    uint64_t n = std::min<uint64_t>(buf.size(), config.warmup - done);
    body.percall(body.state, n, buf.data());
    done += n;
  }
  histogram::Histogram& h = scratch.rep_histogram();
  h.Reset();
  KSTACKLAB_CHECK(config.stall_threshold_ns > 0);
  const double stall_ticks = config.stall_threshold_ns / ns_per_tick;
  uint64_t stalls = 0;
  double stall_ns = 0;
  RunningMoments moments;  // of the raw per-call durations, ns
  for (uint64_t done = 0; done < config.iterations;) {
    if (stopped()) return RuntimeError("interrupted");
    uint64_t n = std::min<uint64_t>(buf.size(), config.iterations - done);
    body.percall(body.state, n, buf.data());
    for (uint64_t i = 0; i < n; ++i) {
      double ns = static_cast<double>(buf[i]) * ns_per_tick;
      if (static_cast<double>(buf[i]) > stall_ticks) {
        ++stalls;
        stall_ns += ns;
      }
      moments.Add(ns);
      h.Record(static_cast<uint64_t>(std::llround(histogram::NsToPs(ns))));
    }
    done += n;
  }
  rep.metrics = RepetitionMetrics(h, moments.sum, moments.sum_sq, overhead_ns);
  // A row whose typical call is as long as the threshold (a 1 GiB fork) has no stalls to tell
  // apart from its calls: nothing is counted (the fields stay absent, as in loop mode).
  if (histogram::PsToNs(h.ValueAtPercentile(50)) < config.stall_threshold_ns) {
    rep.stalls = stalls;
    rep.stall_ns = stall_ns;
  }
  Status st = merged.Merge(h);
  KSTACKLAB_CHECK(st.ok());
  return rep;
}

}  // namespace kstacklab::sampler
