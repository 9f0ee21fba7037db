// `kstacklab env [--json]`: the environment capture alone (DESIGN.md command table).
// $KSTACKLAB_SYSROOT redirects every read to a fixture tree (used by tests/e2e/env_cli.sh).
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli_util.h"
#include "command.h"
#include "kstacklab/results/json.h"
#include "kstacklab/sysinfo/sysinfo.h"
#include "kstacklab/timing/timing.h"

namespace kstacklab::cli {
namespace {

// The counter `run` would use, calibrated briefly: its rate, step and overhead.
std::string TimerSummary() {
  auto cal = timing::Calibrate(20, 20000);
  if (!cal.ok()) return fmt::format("timer (calibrated now):\n  {}\n", cal.error().message);
  return fmt::format(
      "timer (calibrated now):\n  source: {}\n  frequency: {:.1f} MHz\n  step: {:.1f} ns "
      "({:.1f} ticks; every per-call time is a multiple of it)\n  overhead: {:.1f} ns (empty "
      "timed region, median)\n",
      cal->source, cal->freq_hz / 1e6, cal->resolution_ns, cal->step_ticks, cal->overhead_ns);
}

}  // namespace

Runner SetupEnvCommand(CLI::App& sub) {
  auto json = std::make_shared<bool>(false);
  AddTextOrJsonFormat(sub, json.get(),
                      "Print the capture as JSON (the result files' `environment`)");
  sub.footer(
      "Unknown fields print as ? (JSON null); nothing unreadable is an error. The text form ends "
      "with the timer calibrated now (not with KSTACKLAB_SYSROOT). "
      "KSTACKLAB_SYSROOT=DIR reads DIR/proc, DIR/sys, DIR/boot instead of /.");
  return [json]() {
    const sysinfo::SysinfoOptions options = sysinfo::SysinfoOptionsFromEnvironment();
    Json env = sysinfo::CaptureEnvironment(options);
    std::string text = *json ? DumpJson(env) : sysinfo::EnvironmentSummary(env);
    // The timer is this machine's, calibrated now: not shown for a fixture tree.
    if (!*json && options.root == "/") text += TimerSummary();
    return PrintStdout(text);
  };
}

}  // namespace kstacklab::cli
