#include <fmt/format.h>

#include <cstdio>

#include "cli/command.h"

namespace kstacklab::cli {

// Setup functions, one per file src/cli/<name>_cmd.cc.
Runner SetupRunCommand(CLI::App& sub);
Runner SetupCompareCommand(CLI::App& sub);
Runner SetupPlanCommand(CLI::App& sub);
Runner SetupListCommand(CLI::App& sub);
Runner SetupShowCommand(CLI::App& sub);
Runner SetupEnvCommand(CLI::App& sub);
Runner SetupRngCommand(CLI::App& sub);
Runner SetupResultsCommand(CLI::App& sub);
Runner SetupPlotCommand(CLI::App& sub);
Runner SetupEntropyCommand(CLI::App& sub);
Runner SetupRecoverCommand(CLI::App& sub);
Runner SetupAttackCommand(CLI::App& sub);

const std::vector<CommandDef>& Commands() {
  static const std::vector<CommandDef> k = {
      {"run", "Measure benchmarks on this kernel and write a result file", SetupRunCommand},
      {"list", "List every benchmark, grouped by suite", SetupListCommand},
      {"show", "Print the summary table of a result file", SetupShowCommand},
      {"compare", "Compare result files or configurations: % change, CI, (R)/(I)",
       SetupCompareCommand},
      {"plan", "Estimate repetitions needed to detect a target effect from a pilot run",
       SetupPlanCommand},
      {"env", "Print the environment capture (kernel, config, CPU, timer)", SetupEnvCommand},
      {"rng", "Dump a model random source's raw output to check it against the kernel",
       SetupRngCommand},
      {"results", "List, show, export and import stored results (SQLite store)",
       SetupResultsCommand},
      {"plot", "Draw latency CDFs or the %-change chart of results (gnuplot)", SetupPlotCommand},
      {"entropy",
       "Offset entropy of each kstack design (model): distinct, Shannon, min-entropy, chi-square",
       SetupEntropyCommand},
      {"recover", "Restore a knob a killed `run --ab` left changed (from the recovery file)",
       SetupRecoverCommand},
      {"attack", "Attack the kstack designs (model): prng-recover, migration, timer; vs chance",
       SetupAttackCommand},
  };
  return k;
}

int Fail(const Error& error) {
  std::fprintf(stderr, "kstacklab: error: %s\n", error.message.c_str());
  return error.exit_code;
}

void Warn(const std::string& message) {
  std::fprintf(stderr, "kstacklab: warning: %s\n", message.c_str());
}

int Main(int argc, char** argv) {
  CLI::App app{"kstacklab: measure and model Linux kernel stack hardening"};
  app.require_subcommand(1);
  app.set_version_flag("--version", KSTACKLAB_VERSION);
  std::vector<std::pair<CLI::App*, Runner>> runners;
  for (const CommandDef& def : Commands()) {
    CLI::App* sub = app.add_subcommand(def.name, def.summary);
    runners.emplace_back(sub, def.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (argc < 2) what = "no command given; try `kstacklab --help`";
    std::fprintf(stderr, "kstacklab: error: %s (see `kstacklab --help`)\n", what.c_str());
    return kExitUsage;
  }
  for (auto& [sub, run] : runners) {
    if (sub->parsed()) return run();
  }
  return Fail(UsageError("no command given; try `kstacklab --help`"));
}

}  // namespace kstacklab::cli
