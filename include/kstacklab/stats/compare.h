// The comparison table of `kstacklab compare`: plain data built from loaded result files by
// BuildCompareTable() — the numbers, each cell's status and the findings its notes rest on, no
// words; rendered by report/ (grid, markdown, csv, json, the notes and the warnings:
// compare_report.h) and drawn by the %-change chart. Statistics and their definitions:
// docs/reading-tables.md, include/kstacklab/stats/stats.h.
//
// Shape: rows are benchmark x params x metric, grouped by benchmark name (in order of first
// appearance); columns are configurations: a label (every input carrying it is one run of the
// column), or label:variant; column 0 is the baseline. Each row holds the baseline cell and one
// cell per other column, in column order.
//
// Levels (DESIGN.md "Statistics"): run (one input) > session (process) > repetition. A cell's
// samples are taken at the highest level that varies inside its column: per-run means with >= 2
// runs, else session means with >= 2 sessions, else repetitions. Columns measured in different
// runs are decided only when neither side's samples are the repetitions of one process.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/results/results.h"
#include "kstacklab/stats/stats.h"

namespace kstacklab::stats {

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

// The metrics compared and planned when none are named; DefaultCompareMetrics() is its list.
inline constexpr const char* kDefaultCompareMetrics = "mean,p99,p99.9";
const std::vector<std::string>& DefaultCompareMetrics();

// Splits a comma-separated metric list ("mean,p99"), dropping empty items. An empty result is a
// UsageError ("the metric list is empty ...") for the caller to prefix with its flag.
Expected<std::vector<std::string>> ParseMetricList(const std::string& text);

struct CompareOptions {
  std::vector<std::string> metrics = DefaultCompareMetrics();
  double alpha = 0.05;        // CI level is 1 - alpha
  double min_effect_pct = 0;  // |change| below this is never (R)/(I)
  double power = 0.8;         // for the minimal detectable change
  SignificanceTest test = SignificanceTest::kWelch;
  VerdictMethod method = VerdictMethod::kCi;
  Correction correction = Correction::kNone;
  // Column name ("label" or "label:variant") or a variant name; "" = the first column holding a
  // variant flagged BenchmarkResult::baseline, else the first column.
  std::string baseline;
  bool verbose = false;  // renderers add the variance components per cell
};

// Where the variant and the --ab value of an input's rows go in a table: a column, or a part of
// the row (CompareRowName, "syscall/getpid [raw]"). Set by CompareParts; read through
// RowOf/ColumnOf (below), never by taking a name or a variant apart.
enum class RowLayout {
  // The variant (as stored, StoredVariant) names the column, label:variant; the row is the
  // name and params. Every input as read.
  kVariantColumns,
  // An --ab file's values are the columns (AbValuesAsColumns): a row measured under a value
  // keeps its own variant in the row and the value names the column; a row with only one of
  // the two has it as its column.
  kKnobColumns,
  // The variant and the value are parts of the row and the label is the column
  // (VariantsAsRows).
  kRows,
};

// One loaded input: `source` is the argument as given (a path, "-", a store id), used to
// disambiguate colliding labels (its file stem) and in messages.
struct CompareInput {
  std::string source;
  RunResult run;
  RowLayout layout = RowLayout::kVariantColumns;
};

// The row (its key: name, params and the parts the layout puts in the row) and the column
// variant of a benchmark of `in`.
RowKey RowOf(const CompareInput& in, const BenchmarkResult& b);
std::string ColumnOf(const CompareInput& in, const BenchmarkResult& b);

// One configuration column: every input with its label (one run each) x one variant.
struct CompareColumn {
  std::string name;                  // shown in the header: label, or label:variant, or variant
  std::string source;                // the first input's CompareInput::source
  std::string label;                 // RunResult::label of the first input (may be empty)
  std::string variant;               // BenchmarkResult::variant selecting the entries, "" for none
  std::vector<std::string> sources;  // every input (run) of the column, in argument order
};

// The level whose units are a cell's samples.
enum class SampleUnit { kRepetition, kSession, kRun };
// "repetitions", "sessions", "runs".
const char* SampleUnitName(SampleUnit u);

// What a cell holds: a change with its uncertainty and a verdict, or why it does not. The
// renderers mark each kind (docs/reading-tables.md).
enum class CellStatus {
  kAbsent,     // the column lacks this benchmark or metric: a blank cell
  kValueOnly,  // the baseline's own cell, or a row without a baseline value: the value alone
  // The baseline's value is <= 0 (an overhead-corrected per-call value at or below the timer
  // overhead): a % change of it means nothing, so the cell has the column's own value only.
  kBaselineNotPositive,
  // A per-call metric whose baseline value is above 0 but below one timer step
  // (timing::BaselineBelowTimerStep): unresolved by the counter; as kBaselineNotPositive.
  kBaselineBelowTimerStep,
  kTooFew,  // fewer than 3 samples on a side: the change only, no CI or verdict
  // Measured in other runs than the baseline while a side's samples are not per-run means (the
  // repetitions or sessions of one run): no run-to-run variance, so the change and its
  // within-run CI, but no p-value in the correction and no verdict.
  kNoRunVariance,
  kCompared,  // change, CI, p-value, MDC, and a verdict when significant
};

// A configuration's data for one row, and (for non-baseline cells) its comparison with the
// baseline.
struct CompareCell {
  CellStatus status = CellStatus::kAbsent;
  double value = kCompareNaN;  // point estimate: mean of the samples (metric's unit)
  double sd = kCompareNaN;     // sample standard deviation of the samples
  int n = 0;                   // number of samples (units of `unit`)
  int repetitions = 0;         // repetitions behind the samples
  int sessions = 0;            // distinct (run, Repetition::session) pairs
  int runs = 0;                // inputs behind the samples
  SampleUnit unit = SampleUnit::kRepetition;
  // Per-level variance components (NaN where the level does not vary), from the cell's data.
  stats::VarianceComponents components;
  // Comparison with the baseline (NaN / kNone in the baseline cell and when undecidable):
  double change_pct =
      kCompareNaN;  // 100 * (value / baseline.value - 1); + = larger than the baseline
  double ci_low_pct = kCompareNaN;  // (1 - alpha) CI of change_pct (Fieller); NaN when unbounded
  double ci_high_pct = kCompareNaN;
  double p_value = kCompareNaN;     // raw p-value of the chosen test
  double p_adjusted = kCompareNaN;  // Holm-adjusted p-value (== p_value without correction)
  double mdc_pct = kCompareNaN;  // minimal detectable |change| at options.power with these n, SDs
  // Not a status but a caveat on the values, whatever the status: a per-call metric whose two
  // values differ by less than one timer step of either column (timing::ChangeBelowTimerStep),
  // so the difference may be the counter's.
  bool below_timer_step = false;
  Verdict verdict = Verdict::kNone;

  bool present() const { return status != CellStatus::kAbsent; }
  // The baseline cannot carry a % change (shown with '#').
  bool BaselineUnresolved() const {
    return status == CellStatus::kBaselineNotPositive ||
           status == CellStatus::kBaselineBelowTimerStep;
  }
};

struct CompareRow {
  // RowOf the row's entries. Its labels are built from it (results/naming.h): CompareRowName
  // ("syscall/getpid [raw]"), ParamsText of its params, RowResultClass ("mean (ns)").
  RowKey key;
  std::string metric;  // "mean", "p99", ...
  std::string unit;    // "ns"
  bool lower_is_better = true;
  bool first_in_group = false;  // first row of its benchmark group (the name is shown here)
  CompareCell baseline;
  std::vector<CompareCell> variants;  // columns[1..], in order
};

// A row whose repetitions trend over the run in one input (stats::DetectDrift per session and
// metric, at a fixed level of 0.001 whatever the alpha): a change of the machine during the run.
struct DriftMetric {
  std::string metric;
  // The change over the run as a time can change: 100 * (DriftResult::ratio - 1), never below
  // -100; NaN where a value is <= 0 (then `change` says it).
  double change_pct = kCompareNaN;
  double change = kCompareNaN;           // the linear fit's change over the run, metric's unit
  double residual_sd_pct = kCompareNaN;  // spread around the linear fit, % of the mean
  double p = kCompareNaN;                // of slope = 0
};
struct DriftFinding {
  std::string source;  // the input (CompareInput::source)
  // The entry: its row (RowOf) and its column in the input (ColumnOf: its variant or --ab value);
  // report/ names it DriftRowName ("model/kstack [off]").
  RowKey row;
  std::string column;
  std::string unit;                  // the metrics' unit
  int session = 0;                   // the session whose repetitions drift
  bool several_sessions = false;     // other sessions of the entry drift too, or this one is not 0
  size_t repetitions = 0;            // of the entry, every session
  std::vector<DriftMetric> metrics;  // the drifting ones, in CompareOptions::metrics order
};

// What the table's footnotes and warnings rest on, as data: report/ words them
// (compare_report.h CompareNoteLines, CompareWarningLines). Empty or false: nothing to say.
struct CompareFindings {
  // The columns are the variants of one input: its label and source.
  std::optional<std::pair<std::string, std::string>> variants_of_one_run;
  // Some cell has that status (or caveat).
  bool any_too_few = false;
  bool any_baseline_not_positive = false;
  bool any_baseline_below_timer_step = false;
  bool any_below_timer_step = false;
  bool any_no_run_variance = false;
  // > 0: Mann-Whitney with these n cannot reach p < alpha: the largest of its smallest
  // attainable p-values over the cells at or above alpha.
  double mwu_min_p = 0;
  // Column -> the rows whose samples there are session means (a row once per metric; report/
  // names each benchmark once, CompareRowName).
  std::map<std::string, std::vector<RowKey>> session_columns;
  // Column -> how many runs its per-run means come from.
  std::map<std::string, int> run_columns;
  struct Missing {
    RowKey row;
    std::vector<std::string> columns;  // where it is absent (blank cells)
  };
  std::vector<Missing> missing;
  std::vector<RowKey> not_in_baseline;  // rows measured, but not in the baseline column
  struct NoMetric {
    RowKey row;  // the row stores no values of the metric (loop mode: mean only)
    std::string metric;
  };
  std::vector<NoMetric> no_metric;
  // A tail metric whose per-repetition value rests on few calls: a repetition of `calls` calls
  // has `calls_above` above its percentile; `calls_needed` would leave 10 above it.
  struct ThinTail {
    std::string metric;
    uint64_t calls = 0, calls_above = 0;
    long long calls_needed = 0;
  };
  std::vector<ThinTail> thin_tails;  // by metric name
  // Per benchmark name (table order): the largest MDC over its decidable cells, per metric.
  struct Mdc {
    RowKey benchmark;  // the benchmark (CompareRowName): a row key without params
    std::vector<std::pair<std::string, double>> metric_pct;  // CompareOptions::metrics order
  };
  std::vector<Mdc> mdc;
  // Rows measured per call in one input and in loop mode in another (two methods).
  std::vector<RowKey> mixed_timing;
  // Every run of a column measured before (or after) every run of the baseline.
  struct Block {
    std::string column, baseline;  // their labels
    bool after = false;            // the column's runs came after the baseline's
    std::string early_first, early_last, late_first, late_last;  // UTC times
    size_t early_runs = 0, late_runs = 0;
  };
  std::vector<Block> blocks;
  // Drift of repetitions, in input order. With one input the columns were measured interleaved
  // in one run: the drift is shared (a footnote); across inputs it biases the change (a warning).
  std::vector<DriftFinding> drift;
  bool drift_within_one_run = false;
};

struct CompareTable {
  std::vector<CompareColumn> columns;  // columns[0] is the baseline
  std::vector<CompareRow> rows;
  CompareOptions options;
  CompareFindings findings;
};

// Value checks of CompareOptions and SampleSizeOptions, run by BuildCompareTable and
// PlanSampleSizes too. Their UsageErrors name the value, never a command-line flag: a caller that
// wants its own name for the value (the CLI: its flag) checks first and words the error itself.
Status CheckAlpha(double alpha);       // in (0, 0.5)
Status CheckPower(double power);       // in [0.5, 1)
Status CheckMinEffect(double pct);     // finite, >= 0
Status CheckTargetEffect(double pct);  // finite, > 0
// The inputs can be compared: each is a different run (a file given twice, or a file and its own
// store id, would count one run's values as two independent runs and fake a run-to-run
// agreement), and some input holds a benchmark. Usage errors naming the inputs.
Status CheckInputsCompare(const std::vector<CompareInput>& inputs);
// Every metric is stored by some input; the error names the stored ones (MetricNames() order,
// then others).
Status CheckMetricsStored(const std::vector<CompareInput>& inputs,
                          const std::vector<std::string>& metrics);
// `baseline` ("" or a CompareOptions::baseline name) picks exactly one column of `inputs`; the
// error lists the columns.
Status CheckBaseline(const std::vector<CompareInput>& inputs, const std::string& baseline);

// The inputs split into one part per set of variants: the benchmarks (name and params) measured
// under the same variants over all inputs form one part, parts in order of first appearance, each
// input keeping only its part's benchmarks (an input left with none is dropped). One part, equal
// to the inputs, when every benchmark has the same variants. `compare` without an explicit
// baseline builds one table per part, each with its own baseline column, so a file mixing suites
// (syscall raw/libc with the erase strategies) has every row compared.
std::vector<std::vector<CompareInput>> SplitByVariantSet(const std::vector<CompareInput>& inputs);

// Configurations measured in separate runs compare like with like. With two or more labels and a
// baseline that is empty or a label, each variant of a benchmark (the raw/libc call path, a model
// design, an --ab value) becomes a row of its own, named "name [variant]" as `show` names it, and
// the columns are the labels: b's libc row is compared with a's libc row, never with a's raw.
// One label, or a baseline naming a variant (LABEL:VARIANT, VARIANT), keeps the variants as
// columns, compared within their runs.
bool VariantsAreRows(const std::vector<CompareInput>& inputs, const std::string& baseline);
std::vector<CompareInput> VariantsAsRows(std::vector<CompareInput> inputs);

// An --ab file (`run.ab` set) compares its knob's values, each row keeping its own variant: a row
// measured as raw under kernel.stack_erasing=0 (RowKey) becomes the row "name [raw]" under the
// column "kernel.stack_erasing=0" (RowLayout::kKnobColumns), so raw is compared with raw and libc
// with libc, never the C library wrapper's cost with the knob's effect. The value of the flagged
// baseline rows stays the baseline. Inputs without --ab, and rows without a value (a model
// knob's), are unchanged.
std::vector<CompareInput> AbValuesAsColumns(std::vector<CompareInput> inputs);

// The tables `compare` prints for these inputs and baseline, after AbValuesAsColumns: the
// variants as rows (above), else one table per variant set without a named baseline
// (SplitByVariantSet), else one table.
std::vector<std::vector<CompareInput>> CompareParts(const std::vector<CompareInput>& inputs,
                                                    const std::string& baseline);

// Builds the table. UsageErrors: no inputs, an unknown baseline, an unknown metric (naming the
// stored ones), the same benchmark with different units (naming it), bad alpha/power.
Expected<CompareTable> BuildCompareTable(const std::vector<CompareInput>& inputs,
                                         const CompareOptions& options);

}  // namespace kstacklab::stats
