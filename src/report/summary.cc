#include "kstacklab/summary.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace kstacklab {

BenchmarkSummary Summarize(const BenchmarkResult& bench, double overhead_ns) {
  BenchmarkSummary s;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  s.mean = s.cv_pct = s.p50 = s.p99 = s.p999 = s.max = nan;
  double sum = 0, sum_sq = 0;
  size_t n = 0;
  for (const Repetition& r : bench.repetitions) {
    auto it = r.metrics.find("mean");
    if (it == r.metrics.end()) continue;
    sum += it->second;
    sum_sq += it->second * it->second;
    ++n;
    s.calls += r.iterations;
  }
  s.repetitions = n;
  if (n == 0) return s;
  s.mean = sum / n;
  if (n > 1) {
    double var = std::max(0.0, (sum_sq - n * s.mean * s.mean) / (n - 1));
    s.cv_pct = s.mean != 0 ? std::sqrt(var) / std::fabs(s.mean) * 100.0 : nan;
  }
  const Histogram& h = bench.histogram;
  if (h.count() > 0) {
    s.has_percentiles = true;
    // The histogram is in ps; the row's metrics in its unit (ns unless it says otherwise).
    const double per_unit = NsPerUnit(bench.unit);
    auto at = [&](double p) { return (h.ValueAtPercentile(p) / 1000.0 - overhead_ns) / per_unit; };
    s.p50 = at(50);
    s.p99 = at(99);
    s.p999 = at(99.9);
    s.max = (static_cast<double>(h.max()) / 1000.0 - overhead_ns) / per_unit;
  }
  return s;
}

namespace {
// The sampler's own metrics; any other repetition metric is a row's extra (e.g. "user", "sys").
const std::set<std::string> kTimingMetrics = {"mean", "stddev", "min",    "p50", "p90",
                                              "p99",  "p99.9",  "p99.99", "max"};

std::string Num(double v) {
  if (std::isnan(v)) return "-";
  if (std::fabs(v) >= 1e5) return fmt::format("{:.0f}", v);
  return fmt::format("{:.1f}", v);
}
}  // namespace

std::string RenderSummary(const RunResult& run) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"benchmark", "mean", "p50", "p99", "p99.9", "max", "cv%", "reps x calls"});
  for (const BenchmarkResult& b : run.benchmarks) {
    BenchmarkSummary s = Summarize(b, run.timer.overhead_ns);
    std::string name = b.name;
    std::string params = ParamsText(b.params);
    if (!params.empty()) name += " " + params;
    if (!b.variant.empty()) name += " [" + b.variant + "]";
    if (b.unit != "ns") name += " (" + b.unit + ")";
    rows.push_back(
        {name, Num(s.mean), Num(s.p50), Num(s.p99), Num(s.p999), Num(s.max),
         std::isnan(s.cv_pct) ? "-" : fmt::format("{:.2f}", s.cv_pct),
         fmt::format("{} x {}", s.repetitions, s.repetitions ? s.calls / s.repetitions : 0)});
  }
  bool below_overhead = false;
  for (const BenchmarkResult& b : run.benchmarks) {
    BenchmarkSummary s = Summarize(b, run.timer.overhead_ns);
    below_overhead = below_overhead || s.mean < 0 || (s.has_percentiles && s.p50 < 0);
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out = fmt::format(
      "# {}{} | timer {} @ {:.1f} MHz, overhead {:.1f} ns subtracted | times in ns unless a row "
      "says, {} mode\n",
      run.label, run.partial ? " (PARTIAL: interrupted)" : "", run.timer.source,
      run.timer.freq_hz / 1e6, run.timer.overhead_ns,
      run.benchmarks.empty() ? "percall" : run.benchmarks[0].timing);
  for (size_t k = 0; k < rows.size(); ++k) {
    const auto& r = rows[k];
    std::string line = fmt::format("{:<{}}", r[0], width[0]);
    for (size_t i = 1; i < r.size(); ++i) line += fmt::format("  {:>{}}", r[i], width[i]);
    out += line + "\n";
  }
  out +=
      "# mean: mean of repetition means; p50..max: pooled histogram (<=0.05% binning error); "
      "cv%: spread of repetition means\n";
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
                           Num(sum_count.first / sum_count.second));
    }
    out += fmt::format("# {}{}: {} (per call, mean of repetitions; times in {})\n", b.name,
                       b.params.empty() ? "" : " " + ParamsText(b.params), items, b.unit);
  }
  if (below_overhead) {
    out += fmt::format(
        "# negative values: the call costs less than the timer's own overhead varies ({:.1f} ns "
        "subtracted); time such calls in loop mode (--timing loop) or compare them only with "
        "each other\n",
        run.timer.overhead_ns);
  }
  return out;
}

}  // namespace kstacklab
