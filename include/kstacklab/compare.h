// The comparison table of `kstacklab compare` (issue 3): plain data built from loaded result
// files by BuildCompareTable(); rendered by report/ (grid, markdown, csv, json) and drawn by the
// %-change chart. Statistics and their definitions: docs/reading-tables.md,
// include/kstacklab/stats.h.
//
// Shape: rows are benchmark x params x metric, grouped by benchmark name (in order of first
// appearance); columns are configurations (a file's label, or label:variant), column 0 being the
// baseline. Each row holds the baseline cell and one cell per other column, in column order.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kstacklab/error.h"
#include "kstacklab/results.h"

namespace kstacklab {

inline constexpr double kCompareNaN = std::numeric_limits<double>::quiet_NaN();

// How the p-value is computed (--test).
enum class SignificanceTest {
  kWelch,        // "welch": Welch's unequal-variance t-test on the per-sample values (default)
  kMannWhitney,  // "mwu": two-sided Mann-Whitney U (exact for small n without ties, else normal
                 //        approximation with tie and continuity correction, as R's wilcox.test)
};

// How the verdict is decided (--method).
enum class VerdictMethod {
  kCi,        // "ci": CI of the % change excludes 0 and p < alpha (default)
  kFastpath,  // "fastpath": the lists' rule, the (1-alpha) Student-t intervals of the two means
              //             do not overlap (Arm Fastpath / mmtests); p-value still reported
};

// Multiple-comparison correction over every variant cell of the table (--correct).
enum class Correction {
  kNone,  // "none"
  kHolm,  // "holm": Holm-Bonferroni step-down adjusted p-values; the verdict also needs adj p <
          // alpha
};

enum class Verdict {
  kNone,         // "-": not significant, or not decidable (too few samples, missing data)
  kRegression,   // "R": significant change in the worse direction (per lower_is_better)
  kImprovement,  // "I": significant change in the better direction
};

// "R", "I" or "-".
const char* VerdictCode(Verdict v);

struct CompareOptions {
  std::vector<std::string> metrics = {"mean", "p99", "p99.9"};
  double alpha = 0.05;        // CI level is 1 - alpha
  double min_effect_pct = 0;  // |change| below this is never (R)/(I)
  double power = 0.8;         // for the minimal detectable change
  SignificanceTest test = SignificanceTest::kWelch;
  VerdictMethod method = VerdictMethod::kCi;
  Correction correction = Correction::kNone;
  std::string baseline;  // column name ("label" or "label:variant") or a variant name; "" = default
};

// One loaded input: `source` is the argument as given (a path, "-", a store id), used to
// disambiguate colliding labels (its file stem) and in messages.
struct CompareInput {
  std::string source;
  RunResult run;
};

// One configuration column.
struct CompareColumn {
  std::string name;     // shown in the header: label, label:variant, or a disambiguated label
  std::string source;   // CompareInput::source it came from
  std::string label;    // RunResult::label (may be empty)
  std::string variant;  // BenchmarkResult::variant selecting the entries, "" for none
};

// A configuration's data for one row, and (for non-baseline cells) its comparison with the
// baseline.
struct CompareCell {
  bool present = false;        // the column has this benchmark and metric; else a blank cell
  double value = kCompareNaN;  // point estimate: mean of the samples (metric's unit)
  double sd = kCompareNaN;     // sample standard deviation of the samples
  int n = 0;                   // number of samples: repetitions, or sessions when hierarchical
  int repetitions = 0;         // repetitions behind the samples
  int sessions = 0;            // distinct Repetition::session values
  bool hierarchical = false;   // samples are session means (more than one session)
  // Comparison with the baseline (NaN / kNone in the baseline cell and when undecidable):
  double change_pct =
      kCompareNaN;  // 100 * (value / baseline.value - 1); + = larger than the baseline
  double ci_low_pct = kCompareNaN;  // (1 - alpha) CI of change_pct (Fieller); NaN when unbounded
  double ci_high_pct = kCompareNaN;
  double p_value = kCompareNaN;     // raw p-value of the chosen test
  double p_adjusted = kCompareNaN;  // Holm-adjusted p-value (== p_value without correction)
  double mdc_pct = kCompareNaN;  // minimal detectable |change| at options.power with these n, SDs
  bool too_few = false;          // fewer than 3 samples on a side: change only, no verdict
  Verdict verdict = Verdict::kNone;
};

struct CompareRow {
  std::string benchmark;  // "syscall/getpid"
  Json params = Json::object();
  std::string params_text;  // ParamsText(params), "" without params
  std::string metric;       // "mean", "p99", ...
  std::string unit;         // "ns"
  bool lower_is_better = true;
  std::string result_class;     // "mean (ns)", "fork: h:1 (ns)", "fork: h:1 p99 (ns)"
  bool first_in_group = false;  // first row of its benchmark group (the name is shown here)
  CompareCell baseline;
  std::vector<CompareCell> variants;  // columns[1..], in order
};

struct CompareTable {
  std::vector<CompareColumn> columns;  // columns[0] is the baseline
  std::vector<CompareRow> rows;
  CompareOptions options;
  std::vector<std::string> notes;     // footnotes: missing benchmarks, too-few samples, MDC, ...
  std::vector<std::string> warnings;  // for stderr: drift of repetitions, ...
};

// Builds the table. UsageErrors: no inputs, an unknown baseline, an unknown metric (naming the
// stored ones), the same benchmark with different units (naming it), bad alpha/power.
Expected<CompareTable> BuildCompareTable(const std::vector<CompareInput>& inputs,
                                         const CompareOptions& options);

// `kstacklab plan`: repetitions (or sessions) needed per side to detect a relative change of
// target_pct with `power` at `alpha`, from a pilot run's per-sample coefficient of variation
// (stats::RepetitionsNeeded; the variant is assumed to have the pilot's CV).
struct PlanRow {
  std::string benchmark;
  std::string params_text;
  std::string configuration;  // ConfigurationName(run, bench)
  std::string metric;
  std::string unit;
  int n = 0;  // pilot samples (repetitions, or sessions when hierarchical)
  bool hierarchical = false;
  double mean = 0;
  double cv_pct = 0;   // 100 * SD / mean of the samples; NaN with n < 2
  double mdc_pct = 0;  // detectable change with the pilot's n on both sides; NaN with n < 2
  size_t needed = 0;   // per side; 0 when not computable (n < 2, mean 0)
};
// UsageErrors: unknown metric (naming the stored ones), target/alpha/power out of range.
Expected<std::vector<PlanRow>> BuildPlan(const RunResult& run,
                                         const std::vector<std::string>& metrics, double target_pct,
                                         double alpha, double power);

// Short descriptions used by every renderer's footer.
std::string MethodDescription(const CompareOptions& options);

}  // namespace kstacklab
