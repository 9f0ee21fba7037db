// Configuration columns of compare and plan (private to src/stats): inputs grouped by label, one
// column per label x variant (DESIGN.md "Statistics": a configuration is a label).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kstacklab/compare.h"
#include "kstacklab/error.h"

namespace kstacklab {

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

}  // namespace kstacklab
