// What `campaign` and `bisect` share on the command line: the stop signals, the directory lock,
// the running binary's path and the lines they print while boots go on.
#pragma once

#include <signal.h>

#include <atomic>
#include <string>

#include "cli_util.h"
#include "kstacklab/campaign/bisect.h"
#include "kstacklab/campaign/runner.h"
#include "kstacklab/common/error.h"

namespace kstacklab::cli {

// Raised by SIGINT/SIGTERM/SIGHUP while a StopSignals lives; the signal is kept.
extern std::atomic<bool> g_campaign_stop;
extern volatile sig_atomic_t g_campaign_signal;

// SIGINT/SIGTERM/SIGHUP raise the stop flag: the runner kills the guest and writes the state.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3]{};
};

// One campaign (or bisect) per directory at a time: a lock (DIR/.lock) held for the whole run.
class DirLock {
 public:
  DirLock() = default;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  ~DirLock();
  // UsageError when another run holds it; RuntimeError when it cannot be made.
  Status Take(const std::string& dir);

 private:
  int fd_ = -1;
};

// This executable (/proc/self/exe).
std::string SelfPath();

// Hooks that print on `status` (which must outlive them) as "kstacklab: WHAT: ...": the progress
// as its shown line (on a terminal only), notes as lines; the runner's events and stop reasons in
// report/campaign_progress.h's words.
campaign::RunnerHooks TerminalHooks(const std::string& what, StatusLine& status);

// TerminalHooks for a bisect's campaigns, plus the bisect's notes and outcome in
// report/bisect_progress.h's words.
campaign::BisectHooks BisectTerminalHooks(const std::string& what, StatusLine& status);

}  // namespace kstacklab::cli
