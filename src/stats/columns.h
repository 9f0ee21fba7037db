// Configuration columns of compare and plan (private to src/stats): inputs grouped by label, one
// column per label x variant (DESIGN.md "Statistics": a configuration is a label).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/stats/compare.h"

namespace kstacklab::stats {

struct ColumnSet {
  std::vector<CompareColumn> columns;     // labels in order of first appearance, then variants
  std::vector<std::vector<size_t>> runs;  // per column: the inputs (runs) holding its variant
  std::vector<size_t> group;              // per column: index of its label, from 0
  // Per column: the coarsest timer step (timer.resolution_ns) of its runs; nullopt when no run
  // recorded one (files written before the step was measured).
  std::vector<std::optional<double>> step_ns;
};

// The effective label of an input: RunResult::label, or the file stem of its source when empty
// ("-" -> "stdin"). Inputs with the same effective label are runs of one configuration. Column
// names: the label, label:variant, or the variant alone when all inputs share one label.
ColumnSet GroupColumns(const std::vector<CompareInput>& inputs);
std::string EffectiveLabel(const CompareInput& input);

// Row keys (RowOf) in order of first appearance over the columns in `order`, grouped by their
// CompareRowName.
struct Keys {
  std::vector<std::string> names;
  std::map<std::string, std::vector<RowKey>> by_name;
};
Keys RowKeys(const ColumnSet& set, const std::vector<size_t>& order,
             const std::vector<CompareInput>& inputs);

// Entries of one row key: per column in `order`, per run of the column. UsageError when the key
// has two units, or both directions (lower/higher is better), among them.
struct KeyEntries {
  std::vector<std::vector<std::vector<const BenchmarkResult*>>> by_column;
  std::string unit;
  bool lower_is_better = true;
};
Expected<KeyEntries> EntriesOf(const RowKey& key, const ColumnSet& set,
                               const std::vector<size_t>& order,
                               const std::vector<CompareInput>& inputs);

}  // namespace kstacklab::stats
