#include "campaign_support.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <functional>

#include "cli_util.h"
#include "kstacklab/common/text.h"
#include "kstacklab/report/bisect_progress.h"
#include "kstacklab/report/campaign_progress.h"

namespace kstacklab::cli {

std::atomic<bool> g_campaign_stop{false};
volatile sig_atomic_t g_campaign_signal = 0;

namespace {
void OnCampaignStop(int sig) {
  g_campaign_signal = sig;
  g_campaign_stop.store(true);
}
// A worded note printed on `status` as one line "kstacklab: WHAT: ...".
std::function<void(const std::string&)> NoteLine(const std::string& what, StatusLine& status) {
  return [what, &status](const std::string& line) {
    status.Note(fmt::format("kstacklab: {}: {}", what, EscapeControl(line)));
  };
}
}  // namespace

StopSignals::StopSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnCampaignStop;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &old_[i]);
}

StopSignals::~StopSignals() {
  for (size_t i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
}

Status DirLock::Take(const std::string& dir) {
  fd_ = open((dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) {
    return RuntimeError(fmt::format("cannot lock '{}': {}", EscapeControl(dir), strerror(errno)));
  }
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    return UsageError(
        fmt::format("'{}' is in use by another kstacklab campaign; wait for it to "
                    "end (or stop it) first",
                    EscapeControl(dir)));
  }
  return OkStatus();
}

DirLock::~DirLock() {
  if (fd_ >= 0) close(fd_);
}

std::string SelfPath() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("/proc/self/exe");
}

campaign::RunnerHooks TerminalHooks(const std::string& what, StatusLine& status) {
  campaign::RunnerHooks hooks;
  if (status.terminal()) {
    hooks.progress = [what, &status](const campaign::BootStarting& b) {
      status.Show(
          fmt::format("kstacklab: {}: {}", what, EscapeControl(report::BootStartingText(b))));
    };
  }
  const auto note = NoteLine(what, status);
  hooks.runner_note = [note](const campaign::RunnerNote& n) { note(report::RunnerNoteText(n)); };
  hooks.engine_note = [note](const campaign::EngineNote& n) { note(report::EngineNoteText(n)); };
  hooks.stop_text = report::CampaignStopText;
  return hooks;
}

campaign::BisectHooks BisectTerminalHooks(const std::string& what, StatusLine& status) {
  campaign::BisectHooks hooks;
  hooks.runner = TerminalHooks(what, status);
  hooks.note = [note = NoteLine(what, status)](const campaign::BisectNote& n) {
    note(report::BisectNoteText(n));
  };
  hooks.outcome_text = report::BisectOutcomeText;
  return hooks;
}

}  // namespace kstacklab::cli
