// What an engine tells the user while a boot goes on, as data: the accelerator it changed to, a
// file or log cut to its cap, a machine waited for. The engines word none of it;
// report/campaign_progress.h does (EngineNoteText), and GuestJob::note carries it.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

namespace kstacklab::campaign {

// The engine changed how it runs its machine during a boot (qemu: the KVM guest's init stalled,
// TCG now). `why` is BootFacts::why, the engine's own words as the state keeps them.
struct AcceleratorChanged {
  std::string how;
  std::string why;
};

// A file the guest sent was over its cap: a log (`dropped` false) of `bytes` bytes kept its first
// and last `kept_each` bytes, within `cap`; any other file (`dropped` true) was over `cap` bytes
// and was not kept (`bytes` and `kept_each` 0: it is not read to its end).
struct GuestFileCut {
  std::string name;  // the guest's file name: "run.log"
  bool dropped = false;
  uint64_t bytes = 0;
  uint64_t kept_each = 0;
  uint64_t cap = 0;
};

// A file on this host cut to its cap in place (CapFile, channel.h): `path` was `bytes` bytes and
// keeps its first and last `kept_each` bytes, within `cap`.
struct CappedFile {
  std::string path;
  uint64_t bytes = 0;
  uint64_t kept_each = 0;
  uint64_t cap = 0;
};

// A boot's log cut to its cap: the console's (qemu) or the LAVA job's log (lava).
enum class LogKind { kConsole, kLava };
struct LogCut {
  LogKind kind = LogKind::kConsole;
  CappedFile file;
};

// The engine is still waiting for its machine `host`:`port` to answer over SSH: `waited_s` of
// `timeout_s` seconds so far, `after_recover` once the plan's recover command has run.
struct MachineAwaited {
  std::string host;
  uint64_t port = 0;
  double waited_s = 0;
  double timeout_s = 0;
  bool after_recover = false;
};

// A line always worth printing while a boot goes on.
using EngineNote = std::variant<AcceleratorChanged, GuestFileCut, LogCut, MachineAwaited>;

}  // namespace kstacklab::campaign
