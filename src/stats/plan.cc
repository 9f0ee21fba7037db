// BuildPlan (include/kstacklab/compare.h): repetitions needed per side from a pilot run.
#include <fmt/format.h>

#include <cmath>
#include <set>

#include "kstacklab/compare.h"
#include "kstacklab/stats.h"
#include "stats/samples.h"

namespace kstacklab {

Expected<std::vector<PlanRow>> BuildPlan(const RunResult& run,
                                         const std::vector<std::string>& metrics, double target_pct,
                                         double alpha, double power) {
  if (!(target_pct > 0) || !std::isfinite(target_pct)) {
    return UsageError("--target-effect must be a percentage > 0, e.g. 2 for a 2 % change");
  }
  if (!(alpha > 0 && alpha < 0.5)) {
    return UsageError(
        fmt::format("--alpha {:g} is out of range; give a value in (0, 0.5), e.g. 0.05", alpha));
  }
  if (!(power > 0 && power < 1)) {
    return UsageError(
        fmt::format("--power {:g} is out of range; give a value in (0, 1), e.g. 0.8", power));
  }
  std::set<std::string> stored;
  for (const BenchmarkResult& b : run.benchmarks)
    for (const Repetition& r : b.repetitions)
      for (const auto& [k, v] : r.metrics) stored.insert(k);
  for (const std::string& m : metrics) {
    if (!stored.count(m)) {
      std::string names;
      for (const std::string& k : stored) names += (names.empty() ? "" : ", ") + k;
      return UsageError(fmt::format("--metrics: unknown metric '{}'; the input stores: {}", m,
                                    names.empty() ? "(no metrics)" : names));
    }
  }
  std::vector<PlanRow> rows;
  for (const BenchmarkResult& b : run.benchmarks) {
    for (const std::string& m : metrics) {
      CellSamples s = SamplesOf({&b}, m);
      if (s.samples.empty()) continue;
      PlanRow row;
      row.benchmark = b.name;
      row.params_text = ParamsText(b.params);
      row.configuration = ConfigurationName(run, b);
      row.metric = m;
      row.unit = b.unit;
      row.n = static_cast<int>(s.samples.size());
      row.hierarchical = s.hierarchical;
      row.mean = stats::Mean(s.samples);
      double sd = stats::StdDev(s.samples);
      row.cv_pct = row.mean != 0 ? 100 * sd / std::fabs(row.mean) : NAN;
      double var = sd * sd;
      row.mdc_pct = row.mean != 0
                        ? 100 *
                              stats::MinimalDetectableDifference(var, s.samples.size(), var,
                                                                 s.samples.size(), alpha, power) /
                              std::fabs(row.mean)
                        : NAN;
      row.needed = std::isfinite(row.cv_pct)
                       ? stats::RepetitionsNeeded(row.cv_pct / 100, target_pct / 100, alpha, power)
                       : 0;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace kstacklab
