// `kstacklab plan PILOT... --target-effect PCT [--cost-run 120s] [--cost-session 1s]`: variance
// components per level and the runs x sessions x repetitions per configuration that detect a
// given change at the least cost (Kalibera & Jones 2013; docs/reading-tables.md "plan").
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli_util.h"
#include "command.h"
#include "kstacklab/common/text.h"
#include "kstacklab/loader/load.h"
#include "kstacklab/report/sample_size_report.h"
#include "kstacklab/stats/compare.h"
#include "kstacklab/stats/sample_size.h"
#include "kstacklab/store/store.h"

namespace kstacklab::cli {
namespace {

// "120s", "2min", "1h", "500ms", "250us" or a bare number of seconds -> seconds (up to a year).
Expected<double> ParseDuration(const std::string& text, const std::string& flag) {
  auto ns = ParseDurationNs(text, flag, 0, 365 * 24 * 3600e9, "120s");
  if (!ns.ok()) return ns.error();
  return *ns / 1e9;
}

}  // namespace

Runner SetupPlanCommand(CLI::App& sub) {
  struct Flags {
    std::vector<std::string> inputs;
    double target = 0;
    double power = 0.8;
    double alpha = 0.05;
    std::string metrics = stats::kDefaultCompareMetrics;
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
    auto format = report::ParsePlanFormat(f->format);
    if (!format.ok()) return Fail(format.error());
    stats::SampleSizeOptions o;
    auto metrics = stats::ParseMetricList(f->metrics);
    if (!metrics.ok()) return Fail(WithFlag("--metrics", metrics.error()));
    o.metrics = *metrics;
    for (const auto& [flag, st] :
         {std::pair{"--target-effect", stats::CheckTargetEffect(f->target)},
          std::pair{"--alpha", stats::CheckAlpha(f->alpha)},
          std::pair{"--power", stats::CheckPower(f->power)}}) {
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
    std::vector<stats::CompareInput> inputs;
    for (const std::string& spec : f->inputs) {
      auto run = loader::LoadResultInput(spec, StorePath(f->store));
      if (!run.ok()) return Fail(run.error());
      inputs.push_back({spec, std::move(*run)});
    }
    if (Status st = stats::CheckInputsCompare(inputs); !st.ok()) return Fail(st.error());
    if (Status st = stats::CheckMetricsStored(inputs, o.metrics); !st.ok())
      return Fail(WithFlag("--metrics", st.error()));
    auto rows = stats::PlanSampleSizes(inputs, o);
    if (!rows.ok()) return Fail(rows.error());
    std::string text = report::RenderPlan(*rows, o, *format);
    return PrintStdout(text);
  };
}

}  // namespace kstacklab::cli
