// Renderers of the comparison table (include/kstacklab/stats/compare.h), one per format. Each
// returns the complete text for stdout, footer included (method, alpha, sign convention, samples
// per side, notes). Reading guide: docs/reading-tables.md.
#pragma once

#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/results/results.h"
#include "kstacklab/stats/compare.h"

namespace kstacklab::report {

enum class CompareFormat { kGrid, kMarkdown, kCsv, kJson };

// "grid", "markdown" (or "md"), "csv", "json"; else a UsageError naming the allowed values.
Expected<CompareFormat> ParseCompareFormat(const std::string& text);

// The rule that decides (R)/(I), in one sentence (every footer, JSON's method_description).
std::string MethodDescription(const stats::CompareOptions& options);

// A drifting entry as the notes and warnings name it: its row, params and column
// (BenchmarkLabel: "model/kstack [off]", "syscall/fork h:1 [raw]").
std::string DriftRowName(const stats::DriftFinding& d);

// The notes under a table, worded from its findings (CompareFindings), in a fixed order: what
// the cells' marks mean (*, #, (s), ~), where the samples come from, what is missing, thin
// tails, the MDC, how the inputs were measured (per call against loop mode, runs in blocks, a
// drift shared by the columns of one run). Each is one line.
std::vector<std::string> CompareNoteLines(const stats::CompareTable& table);

struct CompareWarningOptions {
  bool verbose = false;  // one more line per drifting row and session, its metrics and fits
  // Where the caller shows every drifting row without `verbose` (the CLI: its flag).
  std::string details_option = "the verbose report";
};
// The warnings for stderr (one line each, no prefix): drift across inputs summarised — one
// line per input ("drift in 14 rows of b1.json (-55.3 to -20.1 % over the run)", the changes
// on a time's scale: DriftMetric::change_pct), then the explanation once; `verbose` adds one
// line per drifting row and session. Empty when nothing drifts across inputs (a drift within
// one run is a note).
std::vector<std::string> CompareWarningLines(const std::vector<stats::CompareTable>& tables,
                                             const CompareWarningOptions& options);

// The footer lines shared by grid, markdown and csv: sign convention per lower_is_better,
// the method, samples per side, then the table's notes.
std::vector<std::string> CompareFooter(const stats::CompareTable& table);

std::string RenderCompareGrid(const stats::CompareTable& table);
std::string RenderCompareMarkdown(const stats::CompareTable& table);
// Long format, one line per row x column; footer lines start with "# ".
std::string RenderCompareCsv(const stats::CompareTable& table);
// {"rows": [...], "columns", "method", "alpha", ...}; numbers rounded to 10 significant digits,
// missing numbers null.
Json CompareToJsonValue(const stats::CompareTable& table);
std::string RenderCompareJson(const stats::CompareTable& table);

std::string RenderCompare(const stats::CompareTable& table, CompareFormat format);
// Several tables (one per variant set, SplitByVariantSet): one table renders as above; more are
// rendered one after another, separated by a blank line (grid, markdown), under one CSV header
// (csv: the column `column` tells the tables apart), or as {"tables": [table, ...]} (json).
std::string RenderCompareTables(const std::vector<stats::CompareTable>& tables,
                                CompareFormat format);
// The json form of RenderCompareTables as a value: one table's object, or {"tables": [...]}.
Json CompareTablesToJsonValue(const std::vector<stats::CompareTable>& tables);

// One CSV field (RFC 4180): control characters escaped (EscapeControl), then quoted when it holds
// a comma, a quote or a newline. Every CSV kstacklab writes uses it.
std::string CsvField(const std::string& raw);

}  // namespace kstacklab::report
