// `kstacklab show FILE|ID`: the summary table of a stored result.
#include <fmt/format.h>

#include "cli_util.h"
#include "command.h"
#include "kstacklab/campaign/remote.h"
#include "kstacklab/loader/load.h"
#include "kstacklab/report/summary.h"

namespace kstacklab::cli {

Runner SetupShowCommand(CLI::App& sub) {
  struct Args {
    std::string input;
    std::string store;
    bool headline = false;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("input", a->input, "Result file, '-' for stdin, or a store id")->required();
  AddStoreOption(sub, &a->store);
  sub.add_flag("--headline", a->headline,
               "One line per benchmark: a LAVA test case name and its mean in ns (campaign engine "
               "lava reports these with lava-test-case)");
  return [a]() -> int {
    auto r = loader::LoadResultInput(a->input, StorePath(a->store));
    if (!r.ok()) return Fail(r.error());
    if (a->headline) {
      std::string out;
      for (const auto& [name, mean] : campaign::HeadlineFigures(*r)) {
        out += fmt::format("{} {:.3f}\n", name, mean);
      }
      return PrintStdout(out);
    }
    return PrintStdout(report::RenderSummary(*r));
  };
}

}  // namespace kstacklab::cli
