#include "kstacklab/campaign/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "kstacklab/common/text.h"

namespace kstacklab::campaign {
namespace {

int StatusCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::vector<char*> Argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  out.reserve(argv.size() + 1);
  for (const std::string& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

// In the child, before exec: its own process group, death with the parent, default signals,
// stdin from `stdin_fd` (-1: /dev/null).
void ChildSetup(pid_t parent, int stdin_fd = -1) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGXFSZ}) signal(sig, SIG_DFL);
  const int in = stdin_fd >= 0 ? stdin_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (in >= 0) dup2(in, STDIN_FILENO);
}

void KillGroup(pid_t pid) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
}

// Reads the child's stdout and stderr (closing both fds) until both end and the child has exited,
// the deadline passes (timed_out) or `stop` is raised (interrupted); a child still running then
// is killed. Wakes at least every 100 ms to look at `stop`. True when the child was reaped here
// (its status in *status); else the caller reaps it.
bool Collect(pid_t pid, double timeout_s, const std::atomic<bool>* stop, int out_fd, int err_fd,
             ProcessResult* r, int* status) {
  const double deadline = MonotonicSeconds() + timeout_s;
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  bool reaped = false;
  for (;;) {
    if (!reaped) reaped = waitpid(pid, status, WNOHANG) == pid;
    if (reaped && open_fds == 0) break;
    const bool stopped = stop != nullptr && stop->load();
    const double left = deadline - MonotonicSeconds();
    if (stopped || left <= 0) {
      r->interrupted = stopped;
      r->timed_out = !stopped;
      if (!reaped) KillGroup(pid);
      break;
    }
    const int wait_ms = static_cast<int>(std::min(left * 1000 + 1, 100.0));
    if (open_fds == 0) {
      poll(nullptr, 0, wait_ms);  // the pipes ended; the child has not exited yet
      continue;
    }
    const int n = poll(fds, 2, wait_ms);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[65536];
      const ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        std::string& dst = i == 0 ? r->out : r->err;
        const size_t cap = i == 0 ? kMaxProcessOut : kMaxProcessErr;
        if (dst.size() < cap) dst.append(buf, std::min(static_cast<size_t>(got), cap - dst.size()));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  return reaped;
}

}  // namespace

double MonotonicSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool FindProgram(const std::string& name) {
  if (name.empty()) return false;
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  for (const std::string& dir : Split(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    if (access(fmt::format("{}/{}", dir, name).c_str(), X_OK) == 0) return true;
  }
  return false;
}

Expected<ProcessResult> RunProcess(const std::vector<std::string>& argv, double timeout_s,
                                   const std::string& stdin_path, const std::atomic<bool>* stop) {
  int stdin_fd = -1;
  if (!stdin_path.empty()) {
    stdin_fd = open(stdin_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (stdin_fd < 0) {
      return RuntimeError(
          fmt::format("cannot read '{}': {}", EscapeControl(stdin_path), strerror(errno)));
    }
  }
  // Closed on every return below.
  struct FdCloser {
    int fd;
    ~FdCloser() {
      if (fd >= 0) close(fd);
    }
  } stdin_closer{stdin_fd};
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return RuntimeError(std::string("pipe: ") + strerror(errno));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return RuntimeError(std::string("pipe: ") + strerror(errno));
  }
  std::vector<char*> args = Argv(argv);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return RuntimeError(fmt::format("cannot start {}: {}", argv[0], strerror(errno)));
  if (pid == 0) {
    ChildSetup(parent, stdin_fd);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  ProcessResult r;
  int status = 0;
  const bool reaped = Collect(pid, timeout_s, stop, out_pipe[0], err_pipe[0], &r, &status);
  if (!reaped) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  r.exit_code = StatusCode(status);
  if (r.exit_code == 127 && r.out.empty() && r.err.empty() && !FindProgram(argv[0])) {
    return RuntimeError(fmt::format("cannot run {}: not found", argv[0]));
  }
  return r;
}

Child::~Child() { Kill(); }

Status Child::Start(const std::vector<std::string>& argv, const std::string& log_path,
                    const std::vector<uint64_t>& cpus, const std::string& err_path,
                    const std::string& cwd) {
  const int log =
      open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (log < 0) {
    return RuntimeError(fmt::format("cannot write '{}': {}", log_path, strerror(errno)));
  }
  const int err =
      err_path.empty()
          ? log
          : open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (err < 0) {
    close(log);
    return RuntimeError(fmt::format("cannot write '{}': {}", err_path, strerror(errno)));
  }
  std::vector<char*> args = Argv(argv);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log);
    if (err != log) close(err);
    return RuntimeError(fmt::format("cannot start {}: {}", argv[0], strerror(errno)));
  }
  if (pid == 0) {
    ChildSetup(parent);
    dup2(log, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    if (!cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (uint64_t c : cpus) CPU_SET(static_cast<int>(c), &set);
      if (sched_setaffinity(0, sizeof set, &set) != 0) _exit(126);
    }
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(log);
  if (err != log) close(err);
  setpgid(pid, pid);  // also here, so a Kill() right after Start() reaches the group
  pid_ = pid;
  return OkStatus();
}

bool Child::Poll(int* exit_code) {
  if (pid_ < 0) return true;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    *exit_code = StatusCode(status);
    pid_ = -1;
    return true;
  }
  return false;
}

void Child::Kill() {
  if (pid_ < 0) return;
  KillGroup(pid_);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

Expected<ProcessResult> RunProcessLogged(const std::vector<std::string>& argv,
                                         const std::string& cwd, const std::string& log_path,
                                         double timeout_s, const std::atomic<bool>* stop) {
  Child child;
  KSTACKLAB_RETURN_IF_ERROR(child.Start(argv, log_path, {}, "", cwd));
  const double deadline = MonotonicSeconds() + timeout_s;
  ProcessResult r;
  while (!child.Poll(&r.exit_code)) {
    const bool stopped = stop != nullptr && stop->load();
    const double left = deadline - MonotonicSeconds();
    if (stopped || left <= 0) {
      r.interrupted = stopped;
      r.timed_out = !stopped;
      child.Kill();
      r.exit_code = -1;
      return r;
    }
    poll(nullptr, 0, static_cast<int>(std::min(left * 1000 + 1, 100.0)));
  }
  if (r.exit_code == 127 && !FindProgram(argv[0])) {
    return RuntimeError(fmt::format("cannot run {}: not found", argv[0]));
  }
  return r;
}

}  // namespace kstacklab::campaign
