// `kstacklab plan PILOT... --target-effect PCT [--cost-run 120s] [--cost-session 1s]`: variance
// components per level and the runs x sessions x repetitions per configuration that detect a
// given change at the least cost (Kalibera & Jones 2013; docs/reading-tables.md "plan").
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "kstacklab/compare.h"
#include "kstacklab/grid_table.h"
#include "kstacklab/store.h"

namespace kstacklab::cli {
namespace {

// "120s", "2min", "1h", "500ms", "250us" or a bare number of seconds -> seconds (up to a year).
Expected<double> ParseDuration(const std::string& text, const std::string& flag) {
  auto ns = ParseDurationNs(text, flag, /*bare_seconds=*/true, 0, 365 * 24 * 3600e9, "120s");
  if (!ns.ok()) return ns.error();
  return *ns / 1e9;
}

std::string Pct(double v) { return std::isfinite(v) ? fmt::format("{:.2f}%", v) : "?"; }

// "1.20/0.40/0.80%": SD of each component as % of the mean, '?' where the level did not vary.
std::string ComponentsText(const PlanRow& r) {
  auto one = [&](double var) {
    return std::isnan(var) || r.mean == 0
               ? std::string("?")
               : fmt::format("{:.2f}", 100 * std::sqrt(var) / std::fabs(r.mean));
  };
  return one(r.components.run) + "/" + one(r.components.session) + "/" +
         one(r.components.repetition) + "%";
}

std::string SecondsText(double s) {
  if (s >= 3600) return fmt::format("{:.1f} h", s / 3600);
  if (s >= 60) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} s", s);
}

std::string RenderPlan(const std::vector<PlanRow>& rows, const PlanOptions& o, bool grid) {
  GridTable g;
  g.header = {{"Benchmark", "Result Class", "Configuration", "Pilot", "CV", "MDC now",
               "SD run/session/rep", "Needed per configuration", "Time"},
              {"", "", "", "runs x sess. x reps", "", "", "% of mean", "runs x sess. x reps",
               "per config."}};
  g.right_align = {false, false, false, true, true, true, true, true, true};
  std::string last;
  bool any_unknown_run = false, any_unreachable = false;
  for (const PlanRow& r : rows) {
    std::string key = r.benchmark + " " + r.configuration;
    if (key != last || g.groups.empty()) g.groups.emplace_back();
    std::string cls =
        (r.params_text.empty() ? "" : r.params_text + " ") + r.metric + " (" + r.unit + ")";
    std::string pilot = fmt::format("{} x {} x {}", r.runs, r.sessions / std::max(r.runs, 1),
                                    r.repetitions / std::max(r.sessions, 1));
    std::string needed =
        r.plan.runs ? fmt::format("{} x {} x {}", r.plan.runs, r.plan.sessions, r.plan.repetitions)
        : r.plan.unreachable ? fmt::format("> {} runs", stats::kMaxPlanRuns)
                             : "?";
    g.groups.back().push_back(
        {key != last ? r.benchmark : "", cls, r.configuration, pilot, Pct(r.cv_pct), Pct(r.mdc_pct),
         ComponentsText(r), needed,
         r.plan.runs ? SecondsText(r.plan.cost_s) : (r.plan.unreachable ? "-" : "?")});
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
  if (any_unknown_run) {
    text += pre +
            "A pilot of one run cannot see the run-to-run (boot) variance: the plan assumes it is "
            "0. Give >= 2 pilot runs with the same --label (reboot between them for kernel "
            "configurations) for a plan that includes it.\n";
  }
  return text;
}

}  // namespace

Runner SetupPlanCommand(CLI::App& sub) {
  struct Flags {
    std::vector<std::string> inputs;
    double target = 0;
    double power = 0.8;
    double alpha = 0.05;
    std::string metrics = kDefaultCompareMetrics;
    std::string format = "grid";
    std::string store;
    std::string cost_run = "120s";
    std::string cost_session = "1s";
    std::string cost_repetition;
  };
  auto f = std::make_shared<Flags>();
  sub.add_option("inputs", f->inputs,
                 "Pilot result files, '-' or store ids; inputs with the same label are runs of "
                 "one configuration")
      ->required();
  sub.add_option("--target-effect", f->target, "Change to detect, in percent (e.g. 2)")->required();
  sub.add_option("--power", f->power, "Probability of detecting it")->capture_default_str();
  sub.add_option("--alpha", f->alpha, "Significance level of the two-sided test")
      ->capture_default_str();
  sub.add_option("--metrics", f->metrics, "Comma-separated metrics")->capture_default_str();
  sub.add_option("--format", f->format, "grid or markdown")->capture_default_str();
  AddStoreOption(sub, &f->store);
  sub.add_option("--cost-run", f->cost_run, "Cost of one more run (a reboot), e.g. 120s, 5min")
      ->capture_default_str();
  sub.add_option("--cost-session", f->cost_session,
                 "Cost of one more session (process start, calibration), e.g. 1s")
      ->capture_default_str();
  sub.add_option("--cost-repetition", f->cost_repetition,
                 "Cost of one repetition, e.g. 5ms (default: measured from the pilot)");
  return [f]() {
    if (f->format != "grid" && f->format != "markdown") {
      return Fail(UsageError(
          fmt::format("--format '{}' is unknown; use one of: grid, markdown", f->format)));
    }
    PlanOptions o;
    auto metrics = ParseMetricList(f->metrics);
    if (!metrics.ok()) return Fail(WithFlag("--metrics", metrics.error()));
    o.metrics = *metrics;
    for (const auto& [flag, st] :
         {std::pair{"--target-effect", CheckTargetEffect(f->target)},
          std::pair{"--alpha", CheckAlpha(f->alpha)}, std::pair{"--power", CheckPower(f->power)}}) {
      if (!st.ok()) return Fail(WithFlag(flag, st.error()));
    }
    o.target_pct = f->target;
    o.alpha = f->alpha;
    o.power = f->power;
    auto run_cost = ParseDuration(f->cost_run, "--cost-run");
    if (!run_cost.ok()) return Fail(run_cost.error());
    auto session_cost = ParseDuration(f->cost_session, "--cost-session");
    if (!session_cost.ok()) return Fail(session_cost.error());
    o.cost_run_s = *run_cost;
    o.cost_session_s = *session_cost;
    if (!f->cost_repetition.empty()) {
      auto rep_cost = ParseDuration(f->cost_repetition, "--cost-repetition");
      if (!rep_cost.ok()) return Fail(rep_cost.error());
      o.cost_repetition_s = *rep_cost;
    }
    std::vector<CompareInput> inputs;
    for (const std::string& spec : f->inputs) {
      auto run = LoadResultInput(spec, StorePath(f->store));
      if (!run.ok()) return Fail(run.error());
      inputs.push_back({spec, std::move(*run)});
    }
    if (Status st = CheckInputsCompare(inputs); !st.ok()) return Fail(st.error());
    if (Status st = CheckMetricsStored(inputs, o.metrics); !st.ok())
      return Fail(WithFlag("--metrics", st.error()));
    auto rows = BuildPlan(inputs, o);
    if (!rows.ok()) return Fail(rows.error());
    std::string text = RenderPlan(*rows, o, f->format == "grid");
    return PrintStdout(text);
  };
}

}  // namespace kstacklab::cli
