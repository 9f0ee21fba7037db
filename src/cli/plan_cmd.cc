// `kstacklab plan FILE --target-effect PCT [--power 0.8] [--alpha 0.05]`: repetitions needed per
// side to detect a given change, from a pilot run (issue 3, item 4; docs/reading-tables.md).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "kstacklab/compare.h"
#include "kstacklab/grid_table.h"
#include "kstacklab/store.h"

namespace kstacklab::cli {

Runner SetupPlanCommand(CLI::App& sub) {
  struct Flags {
    std::string input;
    double target = 0;
    double power = 0.8;
    double alpha = 0.05;
    std::string metrics = "mean,p99,p99.9";
    std::string format = "grid";
    std::string store;
  };
  auto f = std::make_shared<Flags>();
  f->store = DefaultStorePath();
  sub.add_option("input", f->input, "Pilot result file, '-' or store id")->required();
  sub.add_option("--target-effect", f->target, "Change to detect, in percent (e.g. 2)")->required();
  sub.add_option("--power", f->power, "Probability of detecting it")->capture_default_str();
  sub.add_option("--alpha", f->alpha, "Significance level of the two-sided test")
      ->capture_default_str();
  sub.add_option("--metrics", f->metrics, "Comma-separated metrics")->capture_default_str();
  sub.add_option("--format", f->format, "grid or markdown")->capture_default_str();
  sub.add_option("--store", f->store, "Results store for store ids")->capture_default_str();
  return [f]() {
    if (f->format != "grid" && f->format != "markdown") {
      return Fail(UsageError(
          fmt::format("--format '{}' is unknown; use one of: grid, markdown", f->format)));
    }
    const std::vector<std::string> metrics = SplitComma(f->metrics);
    if (metrics.empty()) return Fail(UsageError("--metrics is empty; give e.g. mean,p99,p99.9"));
    auto run = LoadResultInput(f->input, f->store);
    if (!run.ok()) return Fail(run.error());
    auto rows = BuildPlan(*run, metrics, f->target, f->alpha, f->power);
    if (!rows.ok()) return Fail(rows.error());
    GridTable g;
    g.header = {
        {"Benchmark", "Result Class", "Configuration", "n (pilot)", "CV", "MDC now", "Needed"},
        {"", "", "", "", "", "", "per side"}};
    g.right_align = {false, false, false, true, true, true, true};
    std::string last;
    bool any_hier = false;
    for (const PlanRow& r : *rows) {
      std::string key = r.benchmark + " " + r.configuration;
      if (key != last || g.groups.empty()) g.groups.emplace_back();
      std::string cls =
          (r.params_text.empty() ? "" : r.params_text + " ") + r.metric + " (" + r.unit + ")";
      auto pct = [](double v) {
        return std::isfinite(v) ? fmt::format("{:.2f}%", v) : std::string("?");
      };
      g.groups.back().push_back({key != last ? r.benchmark : "", cls, r.configuration,
                                 fmt::format("{}{}", r.n, r.hierarchical ? " s" : ""),
                                 pct(r.cv_pct), pct(r.mdc_pct),
                                 r.needed ? fmt::format("{}", r.needed) : "?"});
      any_hier = any_hier || r.hierarchical;
      last = key;
    }
    std::string text = f->format == "grid" ? RenderGrid(g) : RenderMarkdownTable(g) + "\n";
    std::string pre = f->format == "grid" ? "" : "- ";
    text += pre + fmt::format(
                      "Needed per side to detect a {:g}% change with {:g}% power at alpha {:g} "
                      "(two-sided Welch t; each side assumed to have the pilot's CV).\n",
                      f->target, 100 * f->power, f->alpha);
    text += pre +
            "MDC now: the change detectable with the pilot's n on both sides. '?' = fewer than 2 "
            "samples.\n";
    if (any_hier)
      text += pre +
              "n marked 's' counts sessions (the pilot holds several): the figure is sessions per "
              "side.\n";
    return PrintStdout(text);
  };
}

}  // namespace kstacklab::cli
