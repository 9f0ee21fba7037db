// PlanSampleSizes (include/kstacklab/stats/compare.h): variance components and runs x sessions x
// repetitions per configuration from pilot runs (Kalibera & Jones 2013; docs/reading-tables.md
// "plan").
#include "kstacklab/stats/sample_size.h"

#include <fmt/format.h>

#include <cmath>

#include "columns.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/stats/compare.h"
#include "kstacklab/stats/stats.h"
#include "samples.h"

namespace kstacklab::stats {
namespace {

// A verdict needs >= 3 samples per side (compare's kMinSamples): at least 3 runs.
constexpr size_t kMinRuns = 3;

Status ValidatePlanOptions(const SampleSizeOptions& o) {
  KSTACKLAB_RETURN_IF_ERROR(CheckTargetEffect(o.target_pct));
  KSTACKLAB_RETURN_IF_ERROR(CheckAlpha(o.alpha));
  KSTACKLAB_RETURN_IF_ERROR(CheckPower(o.power));
  for (double c : {o.cost_run_s, o.cost_session_s, o.cost_repetition_s}) {
    if (!(c >= 0) || !std::isfinite(c)) {
      return UsageError("a level cost must be a finite duration >= 0, e.g. 120s");
    }
  }
  if (o.metrics.empty()) return UsageError("no metric to plan; name one, e.g. mean");
  return {};
}

// Seconds of timed calls in one repetition of this entry: iterations x mean per call.
double RepetitionSeconds(const std::vector<std::vector<const BenchmarkResult*>>& runs) {
  double sum = 0;
  size_t n = 0;
  for (const auto& entries : runs) {
    for (const BenchmarkResult* b : entries) {
      for (const Repetition& r : b->repetitions) {
        auto it = r.metrics.find("mean");
        if (it == r.metrics.end()) continue;
        sum += static_cast<double>(r.iterations) * it->second * NsPerUnit(b->unit) * 1e-9;
        ++n;
      }
    }
  }
  return n ? sum / static_cast<double>(n) : 0;
}

SampleSizeRow PlanCell(const CompareColumn& col, const BenchmarkResult& first,
                       const std::vector<std::vector<const BenchmarkResult*>>& runs,
                       const std::string& metric, const SampleSizeOptions& o,
                       const CellSamples& s) {
  SampleSizeRow row;
  row.key.name = first.name;
  row.key.params = first.params;
  row.configuration = col.name;
  row.metric = metric;
  row.unit = first.unit;
  row.n = static_cast<int>(s.samples.size());
  row.sample_unit = s.unit;
  row.runs = s.runs;
  row.sessions = s.sessions;
  row.repetitions = s.repetitions;
  row.mean = stats::Mean(s.samples);
  double sd = stats::StdDev(s.samples);
  row.cv_pct = row.mean != 0 ? 100 * sd / std::fabs(row.mean) : NAN;
  double var = sd * sd;
  row.mdc_pct = row.mean != 0
                    ? 100 *
                          stats::MinimalDetectableDifference(var, s.samples.size(), var,
                                                             s.samples.size(), o.alpha, o.power) /
                          std::fabs(row.mean)
                    : NAN;
  row.needed =
      std::isfinite(row.cv_pct)
          ? stats::RepetitionsNeeded(row.cv_pct / 100, o.target_pct / 100, o.alpha, o.power)
          : 0;
  row.components = s.components;
  row.cost_repetition_s = o.cost_repetition_s > 0 ? o.cost_repetition_s : RepetitionSeconds(runs);
  stats::LevelCosts costs{o.cost_run_s, o.cost_session_s, row.cost_repetition_s};
  // A mean at or below 0 (an overhead-corrected per-call value at the timer's own cost) has no
  // relative change to detect, and its repetitions no positive time: nothing to plan.
  row.not_positive = !(row.mean > 0);
  if (std::isfinite(row.cv_pct) && !row.not_positive)
    row.plan = stats::PlanLevels(s.components, row.mean, o.target_pct / 100, o.alpha, o.power,
                                 costs, kMinRuns);
  return row;
}

}  // namespace

Expected<std::vector<SampleSizeRow>> PlanSampleSizes(const std::vector<CompareInput>& inputs,
                                                     const SampleSizeOptions& options) {
  if (inputs.empty()) return UsageError("plan needs at least one pilot result file or store id");
  if (Status st = ValidatePlanOptions(options); !st.ok()) return st.error();
  if (Status st = CheckMetricsStored(inputs, options.metrics); !st.ok()) return st.error();
  ColumnSet set = GroupColumns(inputs);
  std::vector<SampleSizeRow> rows;
  for (size_t c = 0; c < set.columns.size(); ++c) {
    // The rows of this column, grouped as compare groups them (one unit per row).
    const CompareColumn& col = set.columns[c];
    const Keys keys = RowKeys(set, {c}, inputs);
    for (const std::string& name : keys.names) {
      for (const RowKey& key : keys.by_name.at(name)) {
        auto entries = EntriesOf(key, set, {c}, inputs);
        if (!entries.ok()) return entries.error();
        const std::vector<std::vector<const BenchmarkResult*>>& runs = entries->by_column[0];
        const BenchmarkResult* first = nullptr;
        for (const auto& run : runs) {
          if (first == nullptr && !run.empty()) first = run.front();
        }
        for (const std::string& m : options.metrics) {
          CellSamples s = SamplesOf(runs, m);
          if (s.samples.empty()) continue;
          rows.push_back(PlanCell(col, *first, runs, m, options, s));
        }
      }
    }
  }
  return rows;
}

}  // namespace kstacklab::stats
