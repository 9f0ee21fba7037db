#include "campaign_support.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "cli_util.h"
#include "kstacklab/common/text.h"
#include "kstacklab/report/campaign_progress.h"

namespace kstacklab::cli {

std::atomic<bool> g_campaign_stop{false};
volatile sig_atomic_t g_campaign_signal = 0;

namespace {
void OnCampaignStop(int sig) {
  g_campaign_signal = sig;
  g_campaign_stop.store(true);
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
  hooks.note = [what, &status](const std::string& line) {
    status.Note(fmt::format("kstacklab: {}: {}", what, EscapeControl(line)));
  };
  hooks.runner_note = [note = hooks.note](const campaign::RunnerNote& n) {
    note(report::RunnerNoteText(n));
  };
  hooks.stop_text = report::CampaignStopText;
  return hooks;
}

}  // namespace kstacklab::cli
