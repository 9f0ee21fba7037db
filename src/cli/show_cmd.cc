// `kstacklab show FILE|ID`: the summary table of a stored result.
#include "cli/command.h"
#include "kstacklab/store.h"
#include "kstacklab/summary.h"

namespace kstacklab::cli {

Runner SetupShowCommand(CLI::App& sub) {
  struct Args {
    std::string input;
    std::string store;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("input", a->input, "Result file, '-' for stdin, or a store id")->required();
  sub.add_option("--store", a->store, "Results store to look ids up in");
  return [a]() -> int {
    auto r = LoadResultInput(a->input, a->store.empty() ? DefaultStorePath() : a->store);
    if (!r.ok()) return Fail(r.error());
    std::fputs(RenderSummary(*r).c_str(), stdout);
    return kExitOk;
  };
}

}  // namespace kstacklab::cli
