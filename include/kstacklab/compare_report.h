// Renderers of the comparison table (include/kstacklab/compare.h), one per format. Each returns
// the complete text for stdout, footer included (method, alpha, sign convention, samples per side,
// notes). Reading guide: docs/reading-tables.md.
#pragma once

#include <string>
#include <vector>

#include "kstacklab/compare.h"
#include "kstacklab/error.h"
#include "kstacklab/results.h"

namespace kstacklab {

enum class CompareFormat { kGrid, kMarkdown, kCsv, kJson };

// "grid", "markdown" (or "md"), "csv", "json"; else a UsageError naming the allowed values.
Expected<CompareFormat> ParseCompareFormat(const std::string& text);

// The footer lines shared by grid, markdown and csv: sign convention per lower_is_better,
// the method, samples per side, then the table's notes.
std::vector<std::string> CompareFooter(const CompareTable& table);

std::string RenderCompareGrid(const CompareTable& table);
std::string RenderCompareMarkdown(const CompareTable& table);
// Long format, one line per row x column; footer lines start with "# ".
std::string RenderCompareCsv(const CompareTable& table);
// {"rows": [...], "columns", "method", "alpha", ...}; numbers rounded to 10 significant digits,
// missing numbers null.
Json CompareToJsonValue(const CompareTable& table);
std::string RenderCompareJson(const CompareTable& table);

std::string RenderCompare(const CompareTable& table, CompareFormat format);
// Several tables (one per variant set, SplitByVariantSet): one table renders as above; more are
// rendered one after another, separated by a blank line (grid, markdown), under one CSV header
// (csv: the column `column` tells the tables apart), or as {"tables": [table, ...]} (json).
std::string RenderCompareTables(const std::vector<CompareTable>& tables, CompareFormat format);

// One CSV field (RFC 4180): control characters escaped (EscapeControl), then quoted when it holds
// a comma, a quote or a newline. Every CSV kstacklab writes uses it.
std::string CsvField(const std::string& raw);

}  // namespace kstacklab
