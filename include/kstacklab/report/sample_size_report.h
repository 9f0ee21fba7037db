// Renderer of `kstacklab plan` (PlanSampleSizes, include/kstacklab/stats/compare.h): the table of
// variance components and needed runs x sessions x repetitions per configuration, and the footer
// that says how to read it. Reading guide: docs/reading-tables.md "plan".
#pragma once

#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/stats/compare.h"
#include "kstacklab/stats/sample_size.h"

namespace kstacklab::report {

enum class PlanFormat { kGrid, kMarkdown };

// "grid" or "markdown"; else a UsageError naming the allowed values.
Expected<PlanFormat> ParsePlanFormat(const std::string& text);

// The complete text for stdout: the table, then the footer (the target, power, alpha and costs
// the plan assumed; what each column means; why a cell reads '?' or '> N runs'). Markdown
// footer lines are list items ("- ").
std::string RenderPlan(const std::vector<stats::SampleSizeRow>& rows,
                       const stats::SampleSizeOptions& options, PlanFormat format);

}  // namespace kstacklab::report
