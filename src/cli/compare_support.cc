#include "compare_support.h"

#include <utility>

#include "cli_util.h"
#include "command.h"
#include "kstacklab/report/compare_report.h"

namespace kstacklab::cli {

Expected<std::vector<CompareTable>> BuildCompareTables(const std::vector<CompareInput>& inputs,
                                                       const CompareOptions& options) {
  if (Status st = CheckInputsCompare(inputs); !st.ok()) return st.error();
  if (Status st = CheckMetricsStored(inputs, options.metrics); !st.ok())
    return WithFlag("--metrics", st.error());
  if (Status st = CheckBaseline(inputs, options.baseline); !st.ok())
    return WithFlag("--baseline", st.error());
  std::vector<CompareTable> tables;
  for (const std::vector<CompareInput>& part : CompareParts(inputs, options.baseline)) {
    auto table = BuildCompareTable(part, options);
    if (!table.ok()) return table.error();
    tables.push_back(std::move(*table));
  }
  return tables;
}

void WarnAboutTables(const std::vector<CompareTable>& tables, bool verbose) {
  CompareWarningOptions options;
  options.verbose = verbose;
  options.details_option = "`kstacklab compare --verbose`";
  for (const std::string& line : CompareWarningLines(tables, options)) Warn(line);
}

}  // namespace kstacklab::cli
