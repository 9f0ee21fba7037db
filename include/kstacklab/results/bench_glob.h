// Selecting rows by `--bench GLOB` (run selects workload rows, compare selects result rows).
// Library kstacklab_results (src/results/bench_glob.cc).
#pragma once

#include <string>

#include "kstacklab/results/json.h"

namespace kstacklab {

// The one rule of `--bench GLOB` (run, compare): the glob (fnmatch) matches the row as its
// BenchmarkId, or with the params or the variant left out ("name:variant" selects every params
// row of it, "name" every row); a row of an --ab file also as its own variant (SplitAbVariant).
bool MatchesBenchGlob(const std::string& glob, const std::string& name, const Json& params,
                      const std::string& variant);

}  // namespace kstacklab
