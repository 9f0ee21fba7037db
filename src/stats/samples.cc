#include "samples.h"

#include <map>

namespace kstacklab::stats {

CellSamples SamplesOf(const std::vector<std::vector<const BenchmarkResult*>>& runs,
                      const std::string& metric) {
  CellSamples c;
  std::vector<std::vector<std::vector<double>>> nested;  // run -> session -> values
  for (const std::vector<const BenchmarkResult*>& entries : runs) {
    std::map<int, std::vector<double>> by_session;
    for (const BenchmarkResult* b : entries) {
      for (const Repetition& r : b->repetitions) {
        auto it = r.metrics.find(metric);
        if (it == r.metrics.end()) continue;
        by_session[r.session].push_back(it->second);
        ++c.repetitions;
      }
    }
    if (by_session.empty()) continue;
    c.sessions += static_cast<int>(by_session.size());
    nested.emplace_back();
    for (auto& [session, values] : by_session) nested.back().push_back(std::move(values));
  }
  c.runs = static_cast<int>(nested.size());
  c.components = stats::NestedVarianceComponents(nested);
  if (c.runs > 1) {
    c.unit = SampleUnit::kRun;
    for (const auto& run : nested) {
      std::vector<double> session_means;
      for (const std::vector<double>& values : run) session_means.push_back(stats::Mean(values));
      c.samples.push_back(stats::Mean(session_means));
    }
  } else if (c.sessions > 1) {
    c.unit = SampleUnit::kSession;
    for (const std::vector<double>& values : nested[0]) c.samples.push_back(stats::Mean(values));
  } else if (c.runs == 1) {
    c.samples = nested[0][0];
  }
  return c;
}

}  // namespace kstacklab::stats
