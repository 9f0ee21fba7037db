// The interleaved runner of one process (src/run/interleave.h).
#include "interleave.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

namespace kstacklab::run {
namespace {

// The run's sampler settings within the row's caps (slow calls).
sampler::SamplerConfig RowConfig(const workloads::WorkloadDef& w, sampler::SamplerConfig config) {
  if (w.max_iterations > 0) config.iterations = std::min(config.iterations, w.max_iterations);
  if (w.max_warmup) config.warmup = std::min(config.warmup, *w.max_warmup);
  return config;
}

// The sampler's metrics are in ns; the row's unit may be coarser ("us" for a fork of 1 GiB).
// Then the row's extra metrics (already in its unit) join them.
void ToRowUnit(const workloads::WorkloadDef& w, void* state,
               std::map<std::string, double>* metrics) {
  const double scale = NsPerUnit(w.unit);
  if (scale != 1) {
    for (auto& [name, value] : *metrics) value /= scale;
  }
  if (w.extra_metrics) {
    for (const auto& [name, value] : w.extra_metrics(state)) (*metrics)[name] = value;
  }
}

}  // namespace

std::vector<size_t> RoundOrder(size_t n, int repetition) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  if (repetition % 2 != 0) std::reverse(order.begin(), order.end());
  return order;
}

Expected<RunResult> RunWorkloads(const std::vector<workloads::WorkloadDef>& rows,
                                 const RunOptions& options, const sampler::ClockParams& clock,
                                 const std::atomic<bool>* stop, const ProgressFn& progress) {
  KSTACKLAB_CHECK(options.repetitions > 0);
  std::vector<std::shared_ptr<void>> states;
  for (const workloads::WorkloadDef& w : rows) {
    auto st = w.setup();
    if (!st.ok()) {
      return RuntimeError(fmt::format("{}: {}", workloads::WorkloadId(w), st.error().message));
    }
    states.push_back(*st);
  }
  RunResult result;
  result.benchmarks.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    BenchmarkResult& b = result.benchmarks[i];
    b.name = rows[i].name;
    b.variant = rows[i].variant;
    b.knob = rows[i].knob;
    b.params = rows[i].params;
    b.unit = rows[i].unit;
    b.lower_is_better = rows[i].lower_is_better;
    b.baseline = rows[i].baseline;
    b.timing = options.sampler.mode == sampler::TimingMode::kLoop ? "loop" : "percall";
  }
  sampler::SamplerScratch scratch(options.sampler.chunk);
  const auto t0 = std::chrono::steady_clock::now();
  const double total = static_cast<double>(rows.size()) * options.repetitions;
  for (int r = 0; r < options.repetitions; ++r) {
    const std::vector<size_t> order = RoundOrder(rows.size(), options.first_repetition + r);
    for (size_t k = 0; k < order.size(); ++k) {
      const size_t i = order[k];
      if (progress) {
        double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        progress((r * rows.size() + k) / total, elapsed, workloads::WorkloadId(rows[i]));
      }
      const workloads::WorkloadDef& w = rows[i];
      if (w.max_repetitions > 0 && options.first_repetition + r >= w.max_repetitions) continue;
      sampler::TimedBody body{w.percall, w.loop, states[i].get()};
      auto rep = sampler::RunRepetition(body, RowConfig(w, options.sampler), clock, scratch,
                                        result.benchmarks[i].histogram, stop);
      if (!rep.ok()) {
        result.partial = true;
        return result;
      }
      ToRowUnit(w, states[i].get(), &rep->metrics);
      rep->session = options.session;
      result.benchmarks[i].repetitions.push_back(std::move(*rep));
    }
  }
  if (progress) {
    progress(1.0, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), "");
  }
  return result;
}

}  // namespace kstacklab::run
