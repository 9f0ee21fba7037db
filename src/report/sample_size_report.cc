// The plan renderer (include/kstacklab/report/sample_size_report.h).
#include "kstacklab/report/sample_size_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kstacklab/report/grid_table.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/stats/sample_size.h"
#include "kstacklab/stats/stats.h"

namespace kstacklab::report {
namespace {

std::string Pct(double v) { return std::isfinite(v) ? fmt::format("{:.2f}%", v) : "?"; }

// "1.20/0.40/0.80%": SD of each component as % of the mean, '?' where the level did not vary.
std::string ComponentsText(const stats::SampleSizeRow& r) {
  auto one = [&](double var) {
    const double pct = stats::ComponentSdPercent(var, r.mean);
    return std::isnan(pct) ? std::string("?") : fmt::format("{:.2f}", pct);
  };
  return one(r.components.run) + "/" + one(r.components.session) + "/" +
         one(r.components.repetition) + "%";
}

std::string SecondsText(double s) {
  if (s >= 3600) return fmt::format("{:.1f} h", s / 3600);
  if (s >= 60) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} s", s);
}

}  // namespace

Expected<PlanFormat> ParsePlanFormat(const std::string& text) {
  if (text == "grid") return PlanFormat::kGrid;
  if (text == "markdown") return PlanFormat::kMarkdown;
  return UsageError(fmt::format("--format '{}' is unknown; use one of: grid, markdown", text));
}

std::string RenderPlan(const std::vector<stats::SampleSizeRow>& rows,
                       const stats::SampleSizeOptions& o, PlanFormat format) {
  const bool grid = format == PlanFormat::kGrid;
  GridTable g;
  g.header = {{"Benchmark", "Result Class", "Configuration", "Pilot", "CV", "MDC now",
               "SD run/session/rep", "Needed per configuration", "Time"},
              {"", "", "", "runs x sess. x reps", "", "", "% of mean", "runs x sess. x reps",
               "per config."}};
  g.right_align = {false, false, false, true, true, true, true, true, true};
  std::string last;
  bool any_unknown_run = false, any_unreachable = false, any_not_positive = false;
  for (const stats::SampleSizeRow& r : rows) {
    std::string key = r.key.name + " " + r.configuration;
    if (key != last || g.groups.empty()) g.groups.emplace_back();
    const std::string params = ParamsText(r.key.params);
    std::string cls = (params.empty() ? "" : params + " ") + r.metric + " (" + r.unit + ")";
    std::string pilot = fmt::format("{} x {} x {}", r.runs, r.sessions / std::max(r.runs, 1),
                                    r.repetitions / std::max(r.sessions, 1));
    std::string needed = r.not_positive ? "cannot be planned"
                         : r.plan.runs  ? fmt::format("{} x {} x {}", r.plan.runs, r.plan.sessions,
                                                      r.plan.repetitions)
                         : r.plan.unreachable ? fmt::format("> {} runs", stats::kMaxPlanRuns)
                                              : "?";
    any_not_positive = any_not_positive || r.not_positive;
    g.groups.back().push_back({key != last ? r.key.name : "", cls, r.configuration, pilot,
                               Pct(r.cv_pct), Pct(r.mdc_pct), ComponentsText(r), needed,
                               r.plan.runs ? SecondsText(r.plan.cost_s)
                                           : (r.plan.unreachable || r.not_positive ? "-" : "?")});
    any_unreachable = any_unreachable || r.plan.unreachable;
    any_unknown_run = any_unknown_run || std::isnan(r.components.run);
    last = key;
  }
  std::string text = grid ? RenderGrid(g) : RenderMarkdownTable(g) + "\n";
  std::string pre = grid ? "" : "- ";
  text += pre + fmt::format(
                    "Needed: runs x sessions x repetitions per configuration to detect a {:g}% "
                    "change with {:g}% power at alpha {:g} (two-sided Welch t on run means, the "
                    "same counts on both sides), at the least cost (Kalibera & Jones 2013) with "
                    "a run costing {}, a session {} and a repetition its pilot time (iterations x "
                    "mean) unless --cost-repetition is given; at least 3 runs, for a verdict.\n",
                    o.target_pct, 100 * o.power, o.alpha, SecondsText(o.cost_run_s),
                    SecondsText(o.cost_session_s));
  text += pre +
          "Pilot: runs x sessions per run x repetitions per session (means). CV and MDC now: of "
          "the pilot's samples (runs, sessions or repetitions, the highest level that varies). "
          "'?' = not computable.\n";
  text += pre +
          "SD run/session/rep: variance components (nested ANOVA, clipped at 0) as SDs; '?' = the "
          "level does not vary in the pilot.\n";
  if (any_unreachable) {
    text += pre + fmt::format(
                      "> {} runs: no design of at most {} runs per configuration (with up to 100 "
                      "sessions x 100000 repetitions each) detects the target with this "
                      "run-to-run variance: give a larger --target-effect, or bring the "
                      "run-to-run variance down first (docs/methodology.md).\n",
                      stats::kMaxPlanRuns, stats::kMaxPlanRuns);
  }
  if (any_not_positive) {
    text += pre +
            "cannot be planned: the pilot's mean is <= 0 (an overhead-corrected value at or below "
            "the timer's own cost), so it has no % change to detect and no time per repetition; "
            "measure it with more calls per timed batch (--timing loop) or leave it out "
            "(--metrics, --bench).\n";
  }
  if (any_unknown_run) {
    text += pre +
            "A pilot of one run cannot see the run-to-run (boot) variance: the plan assumes it is "
            "0. Give >= 2 pilot runs with the same --label (reboot between them for kernel "
            "configurations) for a plan that includes it.\n";
  }
  return text;
}

}  // namespace kstacklab::report
