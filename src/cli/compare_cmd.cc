// `kstacklab compare BASE VARIANT...`: the comparison table (docs/reading-tables.md).
// Glue only: parse flags -> load inputs -> BuildCompareTable -> render the table on stdout and
// its warnings on stderr.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli_util.h"
#include "command.h"
#include "compare_support.h"
#include "kstacklab/common/text.h"
#include "kstacklab/histogram/histogram.h"
#include "kstacklab/loader/load.h"
#include "kstacklab/report/compare_report.h"
#include "kstacklab/results/bench_glob.h"
#include "kstacklab/results/results.h"
#include "kstacklab/stats/compare.h"
#include "kstacklab/store/store.h"

namespace kstacklab::cli {
namespace {

struct CompareFlags {
  std::vector<std::string> inputs;
  std::string format = "grid";
  std::string metrics = stats::kDefaultCompareMetrics;
  std::string alpha = "0.05";
  std::string min_effect = "0";
  std::string test = "welch";
  std::string method = "ci";
  std::string correct = "none";
  std::string baseline;
  std::string store;
  std::vector<std::string> benches;  // globs; empty = every benchmark
  bool verbose = false;
};

// Keeps the benchmarks matching one of the globs, as `run --bench` selects them.
bool BenchSelected(const BenchmarkResult& b, const std::vector<std::string>& globs) {
  return globs.empty() || std::any_of(globs.begin(), globs.end(), [&](const std::string& g) {
           return MatchesBenchGlob(g, b.Key());
         });
}

Expected<stats::CompareOptions> OptionsFrom(const CompareFlags& f) {
  stats::CompareOptions o;
  auto metrics = stats::ParseMetricList(f.metrics);
  if (!metrics.ok()) return WithFlag("--metrics", metrics.error());
  o.metrics = *metrics;
  auto alpha = ParseNumber(f.alpha, "--alpha", "0.05");
  if (!alpha.ok()) return alpha.error();
  if (Status st = stats::CheckAlpha(*alpha); !st.ok()) return WithFlag("--alpha", st.error());
  o.alpha = *alpha;
  auto min_effect = ParseNumber(f.min_effect, "--min-effect", "1 (percent)");
  if (!min_effect.ok()) return min_effect.error();
  if (Status st = stats::CheckMinEffect(*min_effect); !st.ok())
    return WithFlag("--min-effect", st.error());
  o.min_effect_pct = *min_effect;
  if (f.test == "welch")
    o.test = stats::SignificanceTest::kWelch;
  else if (f.test == "mwu")
    o.test = stats::SignificanceTest::kMannWhitney;
  else
    return UsageError(fmt::format("--test '{}' is unknown; use one of: welch, mwu", f.test));
  if (f.method == "ci")
    o.method = stats::VerdictMethod::kCi;
  else if (f.method == "fastpath")
    o.method = stats::VerdictMethod::kFastpath;
  else
    return UsageError(fmt::format("--method '{}' is unknown; use one of: ci, fastpath", f.method));
  if (f.correct == "none")
    o.correction = stats::Correction::kNone;
  else if (f.correct == "holm")
    o.correction = stats::Correction::kHolm;
  else
    return UsageError(fmt::format("--correct '{}' is unknown; use one of: none, holm", f.correct));
  o.baseline = f.baseline;
  o.verbose = f.verbose;
  return o;
}

// Memory proportional to what the table reads: each input, once loaded, keeps only the metrics
// compared (and the mean; all of them in its first repetition) and no histogram (compare reads
// none; a histogram's buckets are ~650 KB per row), so N inputs need about one input's parse (~12x
// its size, at most the 64 MiB a file may be) plus ~100 bytes per repetition and metric kept, not
// ~12x their sum (seven 55 MB inputs took 4.8 GB). The repetitions (of the rows --bench selects)
// one comparison reads, over all its inputs: four files at the 100 000 a run may write. Measured
// peak memory at this bound: 0.53 GB with the default metrics, 1.3 GB with all nine
// (docs/result-schema.md "Limits").
constexpr size_t kMaxCompareRepetitions = 400000;

void KeepOnlyWhatCompareReads(const std::vector<std::string>& metrics, RunResult* run) {
  for (BenchmarkResult& b : run->benchmarks) {
    b.histogram = histogram::Histogram(2, 3);  // the smallest layout: no buckets allocated
    // The first repetition keeps every metric, so an unknown --metrics is still answered with
    // the metrics the inputs store (CheckMetricsStored); compare reads only the ones named.
    for (size_t i = 1; i < b.repetitions.size(); ++i) {
      Repetition& r = b.repetitions[i];
      std::erase_if(r.metrics, [&](const auto& kv) {
        return kv.first != "mean" &&
               std::find(metrics.begin(), metrics.end(), kv.first) == metrics.end();
      });
    }
    b.repetitions.shrink_to_fit();
  }
}

// Loads the inputs, each keeping only the rows --bench selects and what the table reads; refuses
// more repetitions than one comparison takes, and a --bench that selects nothing.
Expected<std::vector<stats::CompareInput>> LoadInputs(const CompareFlags& f,
                                                      const stats::CompareOptions& options) {
  std::vector<stats::CompareInput> inputs;
  size_t total_repetitions = 0;
  for (const std::string& spec : f.inputs) {
    auto run = loader::LoadResultInput(spec, StorePath(f.store));
    if (!run.ok()) return run.error();
    std::erase_if(run->benchmarks,
                  [&](const BenchmarkResult& b) { return !BenchSelected(b, f.benches); });
    KeepOnlyWhatCompareReads(options.metrics, &*run);
    for (const BenchmarkResult& b : run->benchmarks) total_repetitions += b.repetitions.size();
    if (total_repetitions > kMaxCompareRepetitions) {
      return UsageError(fmt::format(
          "the inputs up to {} hold more than {} repetitions of the selected rows, more than "
          "one comparison takes (memory grows with them: about 1.3 GB at this bound); select "
          "rows with --bench, or compare fewer files at once",
          EscapeControl(spec), kMaxCompareRepetitions));
    }
    inputs.push_back({spec, std::move(*run)});
  }
  if (!f.benches.empty() &&
      std::all_of(inputs.begin(), inputs.end(),
                  [](const stats::CompareInput& in) { return in.run.benchmarks.empty(); })) {
    return UsageError("--bench matches no benchmark in the inputs (see `kstacklab show FILE`)");
  }
  return inputs;
}

// Warns when the inputs leave nothing to compare between configurations: every file has one
// label, or every table has one column.
void WarnAboutColumns(const std::vector<stats::CompareInput>& inputs,
                      const std::vector<stats::CompareTable>& tables) {
  if (inputs.size() > 1 &&
      std::all_of(inputs.begin(), inputs.end(), [&](const stats::CompareInput& in) {
        return in.run.label == inputs[0].run.label;
      })) {
    // The default label is the kernel release, so two runs on one kernel made without --label
    // merge silently: only their variants are compared, never the files.
    Warn(fmt::format(
        "all {} inputs have the label '{}', so they are runs of one configuration and only "
        "their variants are compared; if the files are different configurations, give each "
        "its own --label when running (the default label is the kernel release)",
        inputs.size(), inputs[0].run.label));
  } else if (std::all_of(tables.begin(), tables.end(),
                         [](const stats::CompareTable& t) { return t.columns.size() < 2; })) {
    Warn(
        "only one configuration given: the table shows the baseline alone; name a second "
        "file, or a file holding several variants");
  }
}

int RunCompare(const CompareFlags& f) {
  auto format = report::ParseCompareFormat(f.format);
  if (!format.ok()) return Fail(WithFlag("--format", format.error()));
  auto options = OptionsFrom(f);
  if (!options.ok()) return Fail(options.error());
  auto inputs = LoadInputs(f, *options);
  if (!inputs.ok()) return Fail(inputs.error());
  auto built = BuildCompareTables(*inputs, *options);
  if (!built.ok()) return Fail(built.error());
  const std::vector<stats::CompareTable>& tables = *built;
  WarnAboutTables(tables, f.verbose);
  WarnAboutColumns(*inputs, tables);
  return PrintStdout(report::RenderCompareTables(tables, *format));
}

}  // namespace

Runner SetupCompareCommand(CLI::App& sub) {
  auto f = std::make_shared<CompareFlags>();
  sub.add_option("inputs", f->inputs,
                 "Result files, '-' (stdin) or store ids; inputs with the same label are runs "
                 "of one column; the first label is the baseline unless --baseline says "
                 "otherwise")
      ->required();
  sub.add_option("--format", f->format, "grid (the lists' layout), markdown, csv or json")
      ->capture_default_str();
  sub.add_option("--metrics", f->metrics,
                 "Comma-separated metrics (any stored one: mean, stddev, min, p50, p90, p99, "
                 "p99.9, p99.99, max)")
      ->capture_default_str();
  sub.add_option("--alpha", f->alpha, "Significance level; CIs are at 1 - alpha")
      ->capture_default_str();
  sub.add_option("--min-effect", f->min_effect, "Smallest |% change| that may be marked (R)/(I)")
      ->capture_default_str();
  sub.add_option("--test", f->test, "p-value: welch (Welch's t) or mwu (Mann-Whitney U)")
      ->capture_default_str();
  sub.add_option("--method", f->method,
                 "Verdict rule: ci (CI of the % change excludes 0 and p < alpha) or fastpath "
                 "(the lists' rule: t-intervals of the two means do not overlap)")
      ->capture_default_str();
  sub.add_option("--correct", f->correct,
                 "Multiple-comparison correction over the table: none or holm")
      ->capture_default_str();
  sub.add_option("--baseline", f->baseline,
                 "Baseline column: LABEL, LABEL:VARIANT or VARIANT (default: the first label's "
                 "variant flagged as baseline by its workload, else its first variant)");
  AddStoreOption(sub, &f->store);
  sub.add_flag("--verbose", f->verbose,
               "Also print the variance components (run, session, repetition) of each cell, and "
               "each drifting row in the drift warnings");
  sub.add_option("--bench", f->benches,
                 "Compare only benchmarks matching this glob (repeatable; name, name:variant)");
  sub.footer(
      "Sign: + % = the variant's value is larger than the baseline's; for times (lower is "
      "better) + % = slower -> (R). See docs/reading-tables.md.");
  return [f]() { return RunCompare(*f); };
}

}  // namespace kstacklab::cli
