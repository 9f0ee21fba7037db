// The run's guard (include/kstacklab/run/run.h RunGuard): its signal handlers and every change it
// restores.
#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>

#include "kstacklab/knobs/knobs.h"
#include "kstacklab/run/run.h"

namespace kstacklab::run {
namespace {

// A stop request: the run ends after the current chunk and keeps what it measured.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
// Every other signal whose default action ends the process, faults included: while a sysctl is
// held, the handler writes its original value back, then the previous handler (or the default
// action) runs, so a crash restores the value and dies of its signal as it would have. SIGPIPE
// is not among them: the guard ignores it.
constexpr int kEndSignals[] = {SIGQUIT,   SIGUSR1, SIGUSR2, SIGALRM, SIGPROF,
                               SIGVTALRM, SIGXCPU, SIGXFSZ, SIGABRT, SIGSEGV,
                               SIGBUS,    SIGFPE,  SIGILL,  SIGTRAP, SIGSYS};
constexpr size_t kStopCount = std::size(kStopSignals);
constexpr size_t kEndCount = std::size(kEndSignals);

// Prepared before a handler may need them; the handlers only read them.
std::atomic<bool> g_alive{false};
std::atomic<bool> g_stop{false};
volatile sig_atomic_t g_stop_signal = 0;
char g_restore_path[4096];
char g_restore_text[4096 + 2];
size_t g_restore_len = 0;
volatile sig_atomic_t g_restore_armed = 0;
struct sigaction g_old_stop[kStopCount];
bool g_stop_installed[kStopCount];
struct sigaction g_old_end[kEndCount];
bool g_end_installed[kEndCount];
struct sigaction g_old_pipe;

// Writes the held sysctl's original value back (open, write, close: async-signal-safe).
void RestoreSysctlFromHandler() {
  if (g_restore_armed == 0) return;
  const int fd = ::open(g_restore_path, O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t ignored = ::write(fd, g_restore_text, g_restore_len);
  (void)ignored;
  ::close(fd);
}

void OnStop(int sig) {
  const int saved_errno = errno;
  RestoreSysctlFromHandler();
  g_stop_signal = sig;
  g_stop.store(true, std::memory_order_relaxed);
  errno = saved_errno;
}

void OnEnd(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  RestoreSysctlFromHandler();
  for (size_t i = 0; i < kEndCount; ++i) {
    if (kEndSignals[i] != sig) continue;
    const struct sigaction& old = g_old_end[i];
    if ((old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction != nullptr) {
      old.sa_sigaction(sig, info, context);
    } else if ((old.sa_flags & SA_SIGINFO) == 0 && old.sa_handler != SIG_DFL &&
               old.sa_handler != SIG_IGN) {
      old.sa_handler(sig);
    } else {
      ::signal(sig, SIG_DFL);
      ::raise(sig);  // delivered when this handler returns: the default action, as without us
    }
  }
  errno = saved_errno;
}

// The mask every handler runs with: one restore at a time.
sigset_t HandlerMask() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : kStopSignals) sigaddset(&mask, s);
  for (int s : kEndSignals) sigaddset(&mask, s);
  return mask;
}

void InstallEndHandlers() {
  struct sigaction sa {};
  sa.sa_sigaction = OnEnd;
  sa.sa_flags = SA_SIGINFO;
  sa.sa_mask = HandlerMask();
  for (size_t i = 0; i < kEndCount; ++i) {
    sigaction(kEndSignals[i], nullptr, &g_old_end[i]);
    // An ignored signal does not end the process: restoring there would put the original value
    // back under a run that goes on measuring the changed one.
    g_end_installed[i] =
        (g_old_end[i].sa_flags & SA_SIGINFO) != 0 || g_old_end[i].sa_handler != SIG_IGN;
    if (g_end_installed[i]) sigaction(kEndSignals[i], &sa, nullptr);
  }
}

void RemoveEndHandlers() {
  for (size_t i = 0; i < kEndCount; ++i) {
    if (g_end_installed[i]) sigaction(kEndSignals[i], &g_old_end[i], nullptr);
    g_end_installed[i] = false;
  }
}

}  // namespace

struct RunGuard::Held {
  bool pinned = false;
  cpu_set_t saved_affinity{};
  bool fifo = false;
  int saved_policy = 0;
  sched_param saved_param{};
  std::optional<knobs::ScopedKnob> knob;
};

std::string AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "unknown";
  std::string out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) ++e;
    if (!out.empty()) out += ",";
    out += e == c ? fmt::format("{}", c) : fmt::format("{}-{}", c, e);
    c = e;
  }
  return out;
}

RunGuard::RunGuard() : held_(std::make_unique<Held>()) {
  KSTACKLAB_CHECK(!g_alive.exchange(true));
  g_stop.store(false);
  g_stop_signal = 0;
  g_restore_armed = 0;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &g_old_pipe);
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  sa.sa_mask = HandlerMask();
  for (size_t i = 0; i < kStopCount; ++i) {
    sigaction(kStopSignals[i], nullptr, &g_old_stop[i]);
    // SIGHUP ignored (nohup): the user asked for the run to outlive the terminal.
    g_stop_installed[i] = !(kStopSignals[i] == SIGHUP && g_old_stop[i].sa_handler == SIG_IGN &&
                            (g_old_stop[i].sa_flags & SA_SIGINFO) == 0);
    if (g_stop_installed[i]) sigaction(kStopSignals[i], &sa, nullptr);
  }
}

RunGuard::~RunGuard() {
  (void)RestoreKnob();
  RestoreMachine();
  for (size_t i = 0; i < kStopCount; ++i) {
    if (g_stop_installed[i]) sigaction(kStopSignals[i], &g_old_stop[i], nullptr);
  }
  sigaction(SIGPIPE, &g_old_pipe, nullptr);
  g_alive.store(false);
}

bool RunGuard::stop_requested() const { return g_stop.load(std::memory_order_relaxed); }
int RunGuard::stop_signal() const { return g_stop_signal; }
const std::atomic<bool>* RunGuard::stop_flag() const { return &g_stop; }

Status RunGuard::PinCpu(int cpu) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    return RuntimeError(fmt::format("cannot read CPU affinity: {}", std::strerror(errno)));
  }
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) {
    return UsageError(
        fmt::format("CPU {} is not available to this process (allowed: {})", cpu, AllowedCpus()));
  }
  cpu_set_t want;
  CPU_ZERO(&want);
  CPU_SET(cpu, &want);
  if (!held_->pinned) held_->saved_affinity = allowed;
  if (sched_setaffinity(0, sizeof(want), &want) != 0) {
    return RuntimeError(fmt::format("cannot pin to CPU {}: {}", cpu, std::strerror(errno)));
  }
  held_->pinned = true;
  return OkStatus();
}

Status RunGuard::EnableFifo() {
  const int policy = sched_getscheduler(0);
  sched_param old{};
  sched_getparam(0, &old);
  sched_param p{};
  p.sched_priority = 1;
  if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) {
    return RuntimeError(fmt::format("cannot switch to SCHED_FIFO: {}", std::strerror(errno)));
  }
  if (!held_->fifo) {
    held_->saved_policy = policy;
    held_->saved_param = old;
  }
  held_->fifo = true;
  return OkStatus();
}

Status RunGuard::HoldKnob(knobs::Knob& knob) {
  KSTACKLAB_CHECK(!held_->knob.has_value() && knob.changes_machine());
  held_->knob.emplace(knob);
  if (Status st = held_->knob->Begin(); !st.ok()) {
    held_->knob.reset();
    return st;
  }
  const std::string path = knob.path();
  const std::string& value = held_->knob->original();
  KSTACKLAB_CHECK(path.size() < sizeof g_restore_path && value.size() + 1 < sizeof g_restore_text);
  std::memcpy(g_restore_path, path.c_str(), path.size() + 1);
  value.copy(g_restore_text, value.size());
  g_restore_text[value.size()] = '\n';
  g_restore_len = value.size() + 1;
  g_restore_armed = 1;
  InstallEndHandlers();
  return OkStatus();
}

Status RunGuard::SetKnob(const std::string& value) {
  KSTACKLAB_CHECK(held_->knob.has_value());
  return held_->knob->Set(value);
}

std::string RunGuard::KnobOriginal() const {
  return held_->knob ? held_->knob->original() : std::string();
}

Status RunGuard::RestoreKnob() {
  if (!held_->knob) return OkStatus();
  Status st = held_->knob->Restore();
  g_restore_armed = 0;
  RemoveEndHandlers();
  held_->knob.reset();
  return st;
}

void RunGuard::RestoreMachine() {
  if (held_->fifo) sched_setscheduler(0, held_->saved_policy, &held_->saved_param);
  held_->fifo = false;
  if (held_->pinned) sched_setaffinity(0, sizeof(held_->saved_affinity), &held_->saved_affinity);
  held_->pinned = false;
}

}  // namespace kstacklab::run
