// `kstacklab recover`: writes back every knob value a killed `run --ab` saved in the recovery
// file (knobs::RecoverPending). `run` does the same at its start, with a warning.
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdio>
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
    if (restored->empty()) {
      std::printf("nothing to recover (%s %s)\n", file.c_str(),
                  existed ? "held no saved values; removed" : "does not exist");
    }
    for (const std::string& line : *restored) std::printf("%s\n", line.c_str());
    return PrintStdout("");  // the checked flush: a failed write to stdout exits 1
  };
}

}  // namespace kstacklab::cli
