#include "compare_support.h"

#include <utility>

#include "cli_util.h"
#include "command.h"
#include "kstacklab/report/compare_report.h"

namespace kstacklab::cli {

Expected<std::vector<stats::CompareTable>> BuildCompareTables(
    const std::vector<stats::CompareInput>& inputs, const stats::CompareOptions& options) {
  if (Status st = stats::CheckInputsCompare(inputs); !st.ok()) return st.error();
  if (Status st = stats::CheckMetricsStored(inputs, options.metrics); !st.ok())
    return WithFlag("--metrics", st.error());
  if (Status st = stats::CheckBaseline(inputs, options.baseline); !st.ok())
    return WithFlag("--baseline", st.error());
  std::vector<stats::CompareTable> tables;
  for (const std::vector<stats::CompareInput>& part :
       stats::CompareParts(inputs, options.baseline)) {
    auto table = stats::BuildCompareTable(part, options);
    if (!table.ok()) return table.error();
    tables.push_back(std::move(*table));
  }
  return tables;
}

void WarnAboutTables(const std::vector<stats::CompareTable>& tables, bool verbose) {
  report::CompareWarningOptions options;
  options.verbose = verbose;
  options.details_option = "`kstacklab compare --verbose`";
  for (const std::string& line : report::CompareWarningLines(tables, options)) Warn(line);
}

}  // namespace kstacklab::cli
