// `kstacklab plot FILE|ID… -o OUT.png|OUT.svg [--kind cdf|tail|compare]` (docs/plots.md).
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "cli_util.h"
#include "command.h"
#include "compare_support.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/loader/load.h"
#include "kstacklab/report/plot.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/stats/compare.h"
#include "kstacklab/store/store.h"

namespace kstacklab::cli {
namespace {

struct PlotArgs {
  std::vector<std::string> inputs;
  std::string output;
  std::string kind = "cdf";
  std::string store;
  std::string metrics = stats::kDefaultCompareMetrics;
  double alpha = 0.05;
  std::string baseline;
  std::vector<std::string> compare_only_given;  // --metrics/--alpha/--baseline, when given
};

int RunPlot(const PlotArgs& a) {
  // Cheap checks first: the output name and kind, before reading any input.
  auto format = report::PlotFormatForPath(a.output);
  if (!format.ok()) return Fail(WithFlag("-o", format.error()));
  auto kind = report::ParsePlotKind(a.kind);
  if (!kind.ok()) return Fail(WithFlag("--kind", kind.error()));
  if (*kind != report::PlotKind::kCompare && !a.compare_only_given.empty()) {
    return Fail(
        UsageError(fmt::format("{} applies to --kind compare only; drop it or add "
                               "--kind compare",
                               a.compare_only_given.front())));
  }
  Status writable = CheckWritable(a.output);
  if (!writable.ok()) return Fail(writable.error());
  for (const std::string& spec : a.inputs) {
    if (SameFile(spec, a.output)) {
      return Fail(UsageError(fmt::format(
          "-o: '{}' is also an input, which the plot would replace; give the plot another name",
          a.output)));
    }
  }

  std::vector<report::PlotInput> inputs;
  for (const std::string& spec : a.inputs) {
    auto run = loader::LoadResultInput(spec, StorePath(a.store));
    if (!run.ok()) return Fail(run.error());
    inputs.push_back(report::PlotInput{spec, std::move(*run)});
  }

  Expected<report::GnuplotJob> job = Error{};
  if (*kind == report::PlotKind::kCompare) {
    stats::CompareOptions options;
    auto metrics = stats::ParseMetricList(a.metrics);
    if (!metrics.ok()) return Fail(WithFlag("--metrics", metrics.error()));
    options.metrics = std::move(*metrics);
    if (Status st = stats::CheckAlpha(a.alpha); !st.ok())
      return Fail(WithFlag("--alpha", st.error()));
    options.alpha = a.alpha;
    options.baseline = a.baseline;
    // One chart is one table: without --baseline, the first variant set's (as `compare` prints
    // it first); the other sets are named with the baseline that plots them.
    auto tables = BuildCompareTables(inputs, options);
    if (!tables.ok()) return Fail(tables.error());
    const stats::CompareTable& table = tables->front();
    WarnAboutTables({table}, /*verbose=*/false);
    for (size_t p = 1; p < tables->size(); ++p) {
      const stats::CompareTable& other = (*tables)[p];
      std::vector<std::string> names;
      for (const stats::CompareRow& r : other.rows) {
        if (r.first_in_group) names.push_back(CompareRowName(r.key));
      }
      Warn(
          fmt::format("not plotted: {} (compared against '{}' in a table of their own); plot "
                      "them with --baseline {}",
                      fmt::join(names, ", "), other.columns[0].name, other.columns[0].name));
    }
    job = report::BuildComparePlot(table, *format);
  } else {
    job = report::BuildLatencyPlot(inputs, *kind, *format);
  }
  if (!job.ok()) return Fail(job.error());
  for (const std::string& note : job->notes) Warn(note);
  Status drawn = report::RenderGnuplot(*job, a.output);
  if (!drawn.ok()) return Fail(drawn.error());
  return PrintStdout(a.output + "\n");
}

}  // namespace

Runner SetupPlotCommand(CLI::App& sub) {
  auto a = std::make_shared<PlotArgs>();
  sub.add_option("inputs", a->inputs, "Result files or store ids (see `kstacklab results list`)")
      ->required();
  sub.add_option("-o,--output", a->output,
                 "Image file: the name's extension picks the format (.png or .svg)")
      ->required();
  sub.add_option("--kind", a->kind,
                 "cdf: latency CDF per benchmark; tail: 1 - CDF on log y (p99, p99.9); "
                 "compare: % change vs the first input with CI whiskers")
      ->capture_default_str();
  AddStoreOption(sub, &a->store);
  sub.add_option("--metrics", a->metrics, "--kind compare: comma-separated metrics")
      ->capture_default_str();
  sub.add_option("--alpha", a->alpha,
                 "--kind compare: significance level; whiskers are 1 - alpha CIs")
      ->capture_default_str();
  sub.add_option("--baseline", a->baseline,
                 "--kind compare: baseline column (default: the first input)");
  sub.footer(
      "Needs gnuplot (apt-get install gnuplot-nox). Latencies are overhead-corrected. "
      "One panel per benchmark; one curve per configuration (label or label:variant).");
  std::vector<CLI::Option*> compare_only = {sub.get_option("--metrics"), sub.get_option("--alpha"),
                                            sub.get_option("--baseline")};
  return [a, compare_only]() {
    for (const CLI::Option* o : compare_only) {
      if (o->count() > 0) a->compare_only_given.push_back(o->get_name());
    }
    return RunPlot(*a);
  };
}

}  // namespace kstacklab::cli
