#include "kstacklab/report/summary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "kstacklab/common/moments.h"
#include "kstacklab/report/grid_table.h"
#include "kstacklab/results/naming.h"

namespace kstacklab::report {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

BenchmarkSummary Summarize(const BenchmarkResult& bench, double overhead_ns) {
  BenchmarkSummary s;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  s.mean = s.cv_pct = s.p50 = s.p99 = s.p999 = s.max = nan;
  s.stalls_per_million = s.stall_time_pct = nan;
  RunningMoments rep_means;
  double stalls = 0, stall_ns = 0, stall_calls = 0, stall_raw_ns = 0;
  bool counted = false;
  for (const Repetition& r : bench.repetitions) {
    auto it = r.metrics.find("mean");
    if (it == r.metrics.end()) continue;
    rep_means.Add(it->second);
    s.calls += r.iterations;
    if (r.stalls && r.stall_ns) {
      counted = true;
      stalls += static_cast<double>(*r.stalls);
      stall_ns += *r.stall_ns;
      stall_calls += static_cast<double>(r.iterations);
      // The mean is in the row's unit; stall_ns and the overhead are ns.
      stall_raw_ns +=
          (it->second * NsPerUnit(bench.unit) + overhead_ns) * static_cast<double>(r.iterations);
    }
  }
  if (counted && stall_calls > 0) {
    s.stalls_per_million = stalls / stall_calls * 1e6;
    s.stall_time_pct = stall_raw_ns > 0 ? stall_ns / stall_raw_ns * 100.0 : nan;
  }
  s.repetitions = rep_means.n;
  if (rep_means.n == 0) return s;
  s.mean = rep_means.sum / static_cast<double>(rep_means.n);
  if (rep_means.n > 1) {
    const double var = SampleVariance(rep_means);
    s.cv_pct = s.mean != 0 ? std::sqrt(var) / std::fabs(s.mean) * 100.0 : nan;
  }
  const histogram::Histogram& h = bench.histogram;
  if (h.count() > 0) {
    s.has_percentiles = true;
    // The histogram is in ps; the row's metrics in its unit (ns unless it says otherwise).
    const double per_unit = NsPerUnit(bench.unit);
    auto at = [&](double p) {
      return (histogram::PsToNs(h.ValueAtPercentile(p)) - overhead_ns) / per_unit;
    };
    s.p50 = at(50);
    s.p99 = at(99);
    s.p999 = at(99.9);
    s.max = (histogram::PsToNs(static_cast<double>(h.max())) - overhead_ns) / per_unit;
  }
  return s;
}

namespace {
// The sampler's own metrics; any other repetition metric is a row's extra (e.g. "user", "sys").
const std::set<std::string> kTimingMetrics = {"mean", "stddev", "min",    "p50", "p90",
                                              "p99",  "p99.9",  "p99.99", "max"};

// Rows of at most this many one-call repetitions list each call's values in the summary.
constexpr size_t kMaxCallsListed = 10;

std::string CellText(double v) {
  if (std::isnan(v)) return "-";
  if (std::fabs(v) >= 1e5) return fmt::format("{:.0f}", v);
  return fmt::format("{:.1f}", v);
}

std::string RowName(const BenchmarkResult& b) {
  std::string name = BenchmarkLabel(b.Key());
  if (b.unit != "ns") name += " (" + b.unit + ")";
  return name;
}

std::string Duration(double ns) {
  if (ns >= 1e6) return fmt::format("{:g} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:g} us", ns / 1e3);
  return fmt::format("{:g} ns", ns);
}

// The notes under the table: timer step and host stalls (empty when nothing to say).
std::string StepAndStallNotes(const RunResult& run) {
  std::string out;
  std::vector<std::string> coarse, stalled, beyond;
  const double step = run.timer.resolution_ns.value_or(0);
  for (const BenchmarkResult& b : run.benchmarks) {
    BenchmarkSummary s = Summarize(b, run.timer.overhead_ns);
    if (step > 0 && s.has_percentiles && s.p50 * NsPerUnit(b.unit) < kTimerStepNoteSteps * step) {
      coarse.push_back(RowName(b));
    }
    if (b.histogram.overflow() > 0) {
      beyond.push_back(fmt::format("{} ({} of {} calls)", RowName(b), b.histogram.overflow(),
                                   b.histogram.count()));
    }
    if (s.stall_time_pct >= 1.0) {
      stalled.push_back(fmt::format("{} {:.1f} %", RowName(b), s.stall_time_pct));
    }
  }
  if (!coarse.empty()) {
    out += fmt::format(
        "# timer step {:.1f} ns: p50 below {:g} steps in {}: their per-call percentiles move in "
        "steps of {:.1f} ns and show the timer, not the call; compare their means, or measure "
        "them with --timing loop (a mean over a batch)\n",
        step, kTimerStepNoteSteps, fmt::join(coarse, ", "), step);
  }
  if (!beyond.empty()) {
    out += fmt::format(
        "# calls longer than the histogram's range (2^{} ps) in {}: percentiles that fall among "
        "them are shown as max; the mean is exact\n",
        run.benchmarks.front().histogram.max_value_bits(), fmt::join(beyond, ", "));
  }
  if (!stalled.empty()) {
    const double threshold = run.run.stall_threshold_ns.value_or(kNaN);
    out += fmt::format(
        "# host stalls (calls above {}) took >= 1 % of the time in {}: their means are carried "
        "by a few host interruptions; compare p50/p99 or rerun with fewer other loads\n",
        std::isnan(threshold) ? std::string("the threshold") : Duration(threshold),
        fmt::join(stalled, ", "));
  }
  return out;
}
}  // namespace

std::string RenderSummary(const RunResult& run) {
  GridTable table;
  table.header = {
      {"benchmark", "mean", "p50", "p99", "p99.9", "max", "cv%", "stalls/M", "reps x calls"}};
  table.right_align = {false, true, true, true, true, true, true, true, true};
  std::vector<std::vector<std::string>> rows;
  bool below_overhead = false;
  for (const BenchmarkResult& b : run.benchmarks) {
    BenchmarkSummary s = Summarize(b, run.timer.overhead_ns);
    rows.push_back(
        {RowName(b), CellText(s.mean), CellText(s.p50), CellText(s.p99), CellText(s.p999),
         CellText(s.max), std::isnan(s.cv_pct) ? "-" : fmt::format("{:.2f}", s.cv_pct),
         CellText(s.stalls_per_million),
         fmt::format("{} x {}", s.repetitions, s.repetitions ? s.calls / s.repetitions : 0)});
    below_overhead = below_overhead || s.mean < 0 || (s.has_percentiles && s.p50 < 0);
  }
  table.groups = {std::move(rows)};
  std::string out = fmt::format(
      "# {}{} | timer {} @ {:.1f} MHz, step {}, overhead {:.1f} ns subtracted | times in ns unless "
      "a row says, {} mode\n",
      run.label, run.partial ? " (PARTIAL: interrupted)" : "", run.timer.source,
      run.timer.freq_hz / 1e6,
      run.timer.resolution_ns ? fmt::format("{:.1f} ns", *run.timer.resolution_ns) : "? ns",
      run.timer.overhead_ns, run.benchmarks.empty() ? "percall" : run.benchmarks[0].timing);
  out += RenderGrid(table);
  out +=
      "# mean: mean of repetition means; p50..max: pooled histogram (<=0.05% binning error); "
      "cv%: spread of repetition means; stalls/M: calls above the stall threshold per million\n";
  // Metrics a row gathers beside its timing (a build's user and system seconds, failures).
  for (const BenchmarkResult& b : run.benchmarks) {
    std::map<std::string, std::pair<double, int>> extra;  // metric -> sum, count
    for (const Repetition& r : b.repetitions) {
      for (const auto& [metric, value] : r.metrics) {
        if (!kTimingMetrics.count(metric)) {
          extra[metric].first += value;
          ++extra[metric].second;
        }
      }
    }
    if (extra.empty()) continue;
    std::string items;
    for (const auto& [metric, sum_count] : extra) {
      items += fmt::format("{}{} {}", items.empty() ? "" : ", ", metric,
                           CellText(sum_count.first / sum_count.second));
    }
    out += fmt::format("# {}: {} (per call, mean of repetitions; times in {})\n",
                       BenchmarkLabel(b.name, ParamsText(b.params)), items, b.unit);
    // One call per repetition (a kernbench build): each repetition is one call, so list every
    // call's values, as kernbench reports every build; a longer list stays summarised above.
    const bool one_call_each = b.repetitions.size() <= kMaxCallsListed &&
                               std::all_of(b.repetitions.begin(), b.repetitions.end(),
                                           [](const Repetition& r) { return r.iterations == 1; });
    if (!one_call_each) continue;
    auto values = [&](const std::string& metric) {
      std::string list;
      for (const Repetition& r : b.repetitions) {
        auto it = r.metrics.find(metric);
        list += (list.empty() ? "" : ", ") +
                (it == r.metrics.end() ? "?" : fmt::format("{:.2f}", it->second));
      }
      return list;
    };
    std::string lists = "elapsed " + values("mean");
    for (const auto& [metric, sum_count] : extra) lists += "; " + metric + " " + values(metric);
    out += fmt::format("#   each call (one per repetition): {}\n", lists);
  }
  if (below_overhead) {
    out += fmt::format(
        "# negative values: the call costs less than the timer's own overhead varies ({:.1f} ns "
        "subtracted); time such calls in loop timing mode or compare them only with "
        "each other\n",
        run.timer.overhead_ns);
  }
  out += StepAndStallNotes(run);
  return out;
}

}  // namespace kstacklab::report
