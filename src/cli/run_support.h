// What other commands use of `run`: recording a result in the store (campaign records each boot's
// result), and checking run arguments exactly as `run` parses and validates them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/results/results.h"

namespace kstacklab::cli {

// Records the result in the store ("" = default path) and says so on stderr. A store failure
// is a RuntimeError saying the run is not recorded, that the result file `written_file` ("" =
// none was written) keeps the measurement, and how to add it to the store later.
Expected<int64_t> RecordRunInStore(const RunResult& result, const std::string& store_path,
                                   const std::string& written_file);

// `run_args` parsed as `kstacklab run RUN_ARGS` parses them and the plan they make validated
// (run::ValidatePlan; the output and the store are the caller's): the one-line error `run` would
// print, in a UsageError saying these are run arguments. Measures nothing; run_cmd.cc.
Status CheckRunArguments(const std::vector<std::string>& run_args);

// The rows `kstacklab run RUN_ARGS` measures, as `show` names them (BenchmarkLabel), and whether
// the run is an A/B run (its knob's values become the rows' variants, known only as it runs).
// The arguments must pass CheckRunArguments.
struct RunRows {
  std::vector<std::string> labels;
  std::vector<std::string> names;  // each row's benchmark name
  bool ab = false;
};
Expected<RunRows> RunArgumentRows(const std::vector<std::string>& run_args);

}  // namespace kstacklab::cli
