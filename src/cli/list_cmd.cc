// `kstacklab list`: every benchmark, grouped by suite, generated from the workload table.
#include <fmt/format.h>

#include "cli_util.h"
#include "command.h"
#include "kstacklab/results/json.h"
#include "kstacklab/workloads/workload.h"

namespace kstacklab::cli {

Runner SetupListCommand(CLI::App& sub) {
  auto json = std::make_shared<bool>(false);
  AddTextOrJsonFormat(sub, json.get(), "Machine-readable list");
  return [json]() -> int {
    Json out = Json::array();
    std::string text;
    for (const workloads::SuiteDef& suite : workloads::Suites()) {
      text += fmt::format("{}{} — {}\n", text.empty() ? "" : "\n", suite.name, suite.summary);
      for (const workloads::WorkloadDef& w : suite.rows()) {
        std::string id = workloads::WorkloadId(w);
        text += fmt::format("  {:<34} {}\n", id, w.summary);
        out.push_back({{"suite", suite.name},
                       {"name", w.name},
                       {"variant", w.variant},
                       {"params", w.params},
                       {"summary", w.summary},
                       {"unit", w.unit}});
      }
    }
    if (*json) {
      return PrintStdout(DumpJson(out));
    } else {
      text +=
          "\nRun a suite with `kstacklab run --suite NAME`, one benchmark with `--bench NAME`.\n";
      return PrintStdout(text);
    }
  };
}

}  // namespace kstacklab::cli
