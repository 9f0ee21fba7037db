// Samples of a comparison cell (private to src/stats): per-repetition metric values, or
// per-session means when the repetitions come from more than one session.
#pragma once

#include <string>
#include <vector>

#include "kstacklab/results.h"

namespace kstacklab {

struct CellSamples {
  std::vector<double> samples;
  int repetitions = 0;
  int sessions = 0;
  bool hierarchical = false;
};

// The hierarchical estimate: with more than one distinct Repetition::session, each session
// contributes one sample, the mean of its repetitions' values (sessions in ascending order);
// otherwise every repetition is a sample. Repetitions without `metric` are skipped.
CellSamples SamplesOf(const std::vector<const BenchmarkResult*>& entries,
                      const std::string& metric);

}  // namespace kstacklab
