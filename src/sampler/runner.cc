#include "kstacklab/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace kstacklab {
namespace {

// The run's sampler settings within the row's caps (slow calls).
SamplerConfig RowConfig(const WorkloadDef& w, SamplerConfig config) {
  if (w.max_iterations > 0) config.iterations = std::min(config.iterations, w.max_iterations);
  if (w.max_warmup) config.warmup = std::min(config.warmup, *w.max_warmup);
  return config;
}

// The sampler's metrics are in ns; the row's unit may be coarser ("us" for a fork of 1 GiB).
// Then the row's extra metrics (already in its unit) join them.
void ToRowUnit(const WorkloadDef& w, void* state, std::map<std::string, double>* metrics) {
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

Expected<RunResult> RunWorkloads(const std::vector<WorkloadDef>& rows, const RunOptions& options,
                                 const ClockParams& clock, const std::atomic<bool>* stop,
                                 const ProgressFn& progress) {
  KSTACKLAB_CHECK(options.repetitions > 0);
  std::vector<std::shared_ptr<void>> states;
  for (const WorkloadDef& w : rows) {
    auto st = w.setup();
    if (!st.ok()) {
      return RuntimeError(fmt::format("{}: {}", WorkloadId(w), st.error().message));
    }
    states.push_back(*st);
  }
  RunResult result;
  result.benchmarks.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    BenchmarkResult& b = result.benchmarks[i];
    b.name = rows[i].name;
    b.variant = rows[i].variant;
    b.params = rows[i].params;
    b.unit = rows[i].unit;
    b.lower_is_better = rows[i].lower_is_better;
    b.baseline = rows[i].baseline;
    b.timing = options.sampler.mode == TimingMode::kLoop ? "loop" : "percall";
  }
  SamplerScratch scratch(options.sampler.chunk);
  const auto t0 = std::chrono::steady_clock::now();
  const double total = static_cast<double>(rows.size()) * options.repetitions;
  for (int r = 0; r < options.repetitions; ++r) {
    const std::vector<size_t> order = RoundOrder(rows.size(), options.first_repetition + r);
    for (size_t k = 0; k < order.size(); ++k) {
      const size_t i = order[k];
      if (progress) {
        double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        progress((r * rows.size() + k) / total, elapsed, WorkloadId(rows[i]));
      }
      const WorkloadDef& w = rows[i];
      if (w.max_repetitions > 0 && options.first_repetition + r >= w.max_repetitions) continue;
      TimedBody body{w.percall, w.loop, states[i].get()};
      auto rep = RunRepetition(body, RowConfig(w, options.sampler), clock, scratch,
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

ScopedCpuPin::~ScopedCpuPin() {
  if (active_) sched_setaffinity(0, sizeof(saved_), &saved_);
}

std::string ScopedCpuPin::AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "unknown";
  std::string out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) ++e;
    if (!out.empty()) out += ",";
    out += e == c ? fmt::format("{}", c) : fmt::format("{}-{}", c, e);
    c = e;
  }
  return out;
}

Status ScopedCpuPin::Pin(int cpu) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    return RuntimeError(fmt::format("cannot read CPU affinity: {}", std::strerror(errno)));
  }
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) {
    return UsageError(
        fmt::format("CPU {} is not available to this process (allowed: {})", cpu, AllowedCpus()));
  }
  cpu_set_t want;
  CPU_ZERO(&want);
  CPU_SET(cpu, &want);
  if (!active_) saved_ = allowed;
  if (sched_setaffinity(0, sizeof(want), &want) != 0) {
    return RuntimeError(fmt::format("cannot pin to CPU {}: {}", cpu, std::strerror(errno)));
  }
  active_ = true;
  return OkStatus();
}

ScopedFifo::~ScopedFifo() {
  if (active_) sched_setscheduler(0, saved_policy_, &saved_param_);
}

Status ScopedFifo::Enable() {
  int policy = sched_getscheduler(0);
  sched_param old{};
  sched_getparam(0, &old);
  sched_param p{};
  p.sched_priority = 1;
  if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) {
    return RuntimeError(fmt::format("cannot switch to SCHED_FIFO: {}", std::strerror(errno)));
  }
  if (!active_) {
    saved_policy_ = policy;
    saved_param_ = old;
  }
  active_ = true;
  return OkStatus();
}

}  // namespace kstacklab
