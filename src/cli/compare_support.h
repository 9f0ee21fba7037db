// The comparison pipeline shared by `compare` and `plot --kind compare` (kept out of
// cli_util.cc, which the parser fuzzer links without the statistics).
#pragma once

#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/stats/compare.h"

namespace kstacklab::cli {

// The tables of `compare` and `plot --kind compare`: the inputs checked (CheckInputsCompare, the
// metrics stored, the baseline; an error names its flag), split as CompareParts splits them, one
// table per part (at least one).
Expected<std::vector<stats::CompareTable>> BuildCompareTables(
    const std::vector<stats::CompareInput>& inputs, const stats::CompareOptions& options);

// The tables' warnings on stderr (CompareWarningLines), each row's details with `verbose`.
void WarnAboutTables(const std::vector<stats::CompareTable>& tables, bool verbose);

}  // namespace kstacklab::cli
