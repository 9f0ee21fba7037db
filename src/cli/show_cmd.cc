// `kstacklab show FILE|ID`: the summary table of a stored result.
#include "cli/cli_util.h"
#include "cli/command.h"
#include "kstacklab/load.h"
#include "kstacklab/summary.h"

namespace kstacklab::cli {

Runner SetupShowCommand(CLI::App& sub) {
  struct Args {
    std::string input;
    std::string store;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("input", a->input, "Result file, '-' for stdin, or a store id")->required();
  AddStoreOption(sub, &a->store);
  return [a]() -> int {
    auto r = LoadResultInput(a->input, StorePath(a->store));
    if (!r.ok()) return Fail(r.error());
    return PrintStdout(RenderSummary(*r));
  };
}

}  // namespace kstacklab::cli
