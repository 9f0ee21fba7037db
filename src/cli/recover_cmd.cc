// `kstacklab recover`: writes back every knob value a killed `run --ab` saved in the recovery
// file (knobs::RecoverPending). `run` does the same at its start, with a warning.
#include <fmt/format.h>
#include <sys/stat.h>

#include <iterator>
#include <string>

#include "cli_util.h"
#include "command.h"
#include "kstacklab/knobs/knobs.h"

namespace kstacklab::cli {

Runner SetupRecoverCommand(CLI::App& sub) {
  sub.footer(
      fmt::format("The recovery file: ${} or $XDG_STATE_HOME/kstacklab/knob-recovery "
                  "(default ~/.local/state/kstacklab/knob-recovery). It is applied only if it is "
                  "your own regular file that nobody else can write and every line restores the "
                  "named sysctl's own file; otherwise nothing is written (exit 2).",
                  knobs::kRecoveryFileEnvVar));
  return [] {
    const std::string file = knobs::RecoveryFilePath();
    struct stat st {};
    const bool existed = ::lstat(file.c_str(), &st) == 0;  // only for the message below
    auto restored = knobs::RecoverPending();
    if (!restored.ok()) return Fail(restored.error());
    std::string out;
    if (restored->empty()) {
      out = fmt::format("nothing to recover ({} {})\n", file,
                        existed ? "held no saved values; removed" : "does not exist");
    }
    for (const std::string& line : *restored) fmt::format_to(std::back_inserter(out), "{}\n", line);
    return PrintStdout(out);
  };
}

}  // namespace kstacklab::cli
