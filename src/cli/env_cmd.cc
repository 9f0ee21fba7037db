// `kstacklab env [--json]`: the environment capture alone (DESIGN.md command table).
// $KSTACKLAB_SYSROOT redirects every read to a fixture tree (used by tests/e2e/env_cli.sh).
#include <cstdio>
#include <memory>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "kstacklab/sysinfo.h"

namespace kstacklab::cli {

Runner SetupEnvCommand(CLI::App& sub) {
  auto json = std::make_shared<bool>(false);
  sub.add_flag("--json", *json, "Print the capture as JSON (the result files' `environment`)");
  sub.footer(
      "Unknown fields print as ? (JSON null); nothing unreadable is an error. "
      "KSTACKLAB_SYSROOT=DIR reads DIR/proc, DIR/sys, DIR/boot instead of /.");
  return [json]() {
    Json env = CaptureEnvironment(SysinfoOptionsFromEnvironment());
    std::string text = *json ? env.dump(2) + "\n" : EnvironmentSummary(env);
    return PrintStdout(text);
  };
}

}  // namespace kstacklab::cli
