// Selecting rows by `--bench GLOB` (run selects workload rows, compare selects result rows).
// Library kstacklab_results (src/results/bench_glob.cc).
#pragma once

#include <string>

#include "kstacklab/results/results.h"

namespace kstacklab {

// The one rule of `--bench GLOB` (run, compare): the glob (fnmatch) matches the row as its
// BenchmarkId, or with the params or the variant left out ("name:variant" selects every params
// row of it, "name" every row), the variant as stored (StoredVariant); a row measured under an
// --ab value also as its own variant.
bool MatchesBenchGlob(const std::string& glob, const RowKey& row);

}  // namespace kstacklab
