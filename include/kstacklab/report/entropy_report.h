// Renderers of offset-entropy statistics (analysis::EntropyStats,
// include/kstacklab/analysis/entropy.h), shared by `kstacklab entropy` (the model's policies) and
// `entropy --kernel` (the running kernel): one set of columns and one JSON shape, so the two
// reports read alike.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kstacklab/analysis/entropy.h"
#include "kstacklab/report/grid_table.h"
#include "kstacklab/results/json.h"

namespace kstacklab::report {

// One row per (name, stats). Columns: `name_column` ("policy", "kernel"), samples, distinct,
// shannon and min-ent (bits, 4 decimals), chi2-p (3 significant digits), repeat (5 decimals),
// script (what lkdtm stack-entropy.sh prints).
GridTable EntropyStatsTable(
    const std::string& name_column,
    const std::vector<std::pair<std::string, analysis::EntropyStats>>& rows);

// {"samples", "distinct", "shannon_bits", "min_entropy_bits", "chi_square", "chi_square_p",
//  "repeat_rate", "stack_entropy_sh_bits"}, in that order.
Json EntropyStatsJson(const analysis::EntropyStats& stats);

}  // namespace kstacklab::report
