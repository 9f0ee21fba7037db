#include "stats/samples.h"

#include <map>

#include "kstacklab/stats.h"

namespace kstacklab {

CellSamples SamplesOf(const std::vector<const BenchmarkResult*>& entries,
                      const std::string& metric) {
  CellSamples c;
  std::map<int, std::vector<double>> by_session;
  std::vector<double> flat;
  for (const BenchmarkResult* b : entries) {
    for (const Repetition& r : b->repetitions) {
      auto it = r.metrics.find(metric);
      if (it == r.metrics.end()) continue;
      by_session[r.session].push_back(it->second);
      flat.push_back(it->second);
      ++c.repetitions;
    }
  }
  c.sessions = static_cast<int>(by_session.size());
  if (by_session.size() > 1) {
    c.hierarchical = true;
    for (const auto& [session, values] : by_session) c.samples.push_back(stats::Mean(values));
  } else {
    c.samples = std::move(flat);
  }
  return c;
}

}  // namespace kstacklab
