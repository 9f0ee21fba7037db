// Child processes (include/kstacklab/common/subprocess.h).
#include "kstacklab/common/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "kstacklab/common/text.h"

namespace kstacklab {
namespace {

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The file descriptors of one stream, opened before fork: `child` is dup2'd onto the standard
// stream in the child (-1: inherited), `parent` is this process's end of a pipe (-1: none).
struct StreamFds {
  int child = -1;
  int parent = -1;
  ~StreamFds() {
    CloseFd(child);
    CloseFd(parent);
  }
};

Status OpenStream(const ChildStream& s, bool input, StreamFds* fds) {
  switch (s.kind) {
    case ChildStream::Kind::kInherit:
      return OkStatus();
    case ChildStream::Kind::kNull:
      fds->child = ::open("/dev/null", (input ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
      if (fds->child < 0) {
        return SystemError(fmt::format("cannot open /dev/null: {}", std::strerror(errno)), errno);
      }
      return OkStatus();
    case ChildStream::Kind::kPipe: {
      int p[2];
      if (::pipe2(p, O_CLOEXEC) != 0) {
        return SystemError(fmt::format("pipe: {}", std::strerror(errno)), errno);
      }
      fds->child = input ? p[0] : p[1];
      fds->parent = input ? p[1] : p[0];
      return OkStatus();
    }
    case ChildStream::Kind::kFile:
      fds->child = ::open(s.path.c_str(), s.flags | O_CLOEXEC, s.mode);
      if (fds->child < 0) {
        return SystemError(fmt::format("cannot {} '{}': {}", input ? "read" : "write",
                                       EscapeControl(s.path), std::strerror(errno)),
                           errno);
      }
      return OkStatus();
  }
  return OkStatus();
}

// `fd` as the child's standard stream `target`. dup2 clears close-on-exec on the copy; an `fd`
// that already is `target` (this process had that stream closed when it was opened) is not
// copied, so its flag is cleared here. Async-signal-safe.
bool MoveTo(int fd, int target) {
  if (fd != target) return ::dup2(fd, target) >= 0;
  return ::fcntl(fd, F_SETFD, 0) == 0;
}

// In the child, before exec: async-signal-safe calls only.
[[noreturn]] void ExecChild(const ChildSpec& spec, pid_t parent, char* const* argv, int in, int out,
                            int err) {
  if (spec.own_group) ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  if (spec.default_signals) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGXFSZ}) ::signal(sig, SIG_DFL);
  } else if (spec.mask != nullptr) {
    ::sigprocmask(SIG_SETMASK, spec.mask, nullptr);
  }
  if (in >= 0 && !MoveTo(in, STDIN_FILENO)) ::_exit(127);
  if (out >= 0 && !MoveTo(out, STDOUT_FILENO)) ::_exit(127);
  if (err >= 0 && !MoveTo(err, STDERR_FILENO)) ::_exit(127);
  if (!spec.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (uint64_t c : spec.cpus) CPU_SET(static_cast<int>(c), &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0) ::_exit(126);
  }
  if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) ::_exit(126);
  ::execvp(argv[0], argv);
  ::_exit(127);
}

// Reads the child's stdout and stderr pipes (closing both) until both end and the child has
// exited, the deadline passes (timed_out) or `stop` is raised (interrupted); a child still running
// then is killed. Wakes at least every 100 ms to look at `stop`. True when the child was reaped
// here (its exit code in r->exit_code); else the caller reaps it.
bool Collect(ChildProcess& child, double timeout_s, const std::atomic<bool>* stop, ChildResult* r) {
  const double deadline = MonotonicSeconds() + timeout_s;
  pollfd fds[2] = {{child.ReleaseOut(), POLLIN, 0}, {child.ReleaseErr(), POLLIN, 0}};
  int open_fds = 0;
  for (const pollfd& f : fds) open_fds += f.fd >= 0 ? 1 : 0;
  bool reaped = false;
  for (;;) {
    if (!reaped) reaped = child.Poll(&r->exit_code);
    if (reaped && open_fds == 0) break;
    const bool stopped = stop != nullptr && stop->load();
    const double left = deadline - MonotonicSeconds();
    if (stopped || left <= 0) {
      r->interrupted = stopped;
      r->timed_out = !stopped;
      if (!reaped) child.Signal(SIGKILL);
      break;
    }
    const int wait_ms = static_cast<int>(std::min(left * 1000 + 1, 100.0));
    if (open_fds == 0) {
      ::poll(nullptr, 0, wait_ms);  // the pipes ended; the child has not exited yet
      continue;
    }
    const int n = ::poll(fds, 2, wait_ms);
    if (n < 0 && errno != EINTR) {  // cannot wait on the pipes: end the child, never hang
      if (!reaped) child.Signal(SIGKILL);
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[65536];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        std::string& dst = i == 0 ? r->out : r->err;
        const size_t cap = i == 0 ? kMaxChildOut : kMaxChildErr;
        if (dst.size() < cap) dst.append(buf, std::min(static_cast<size_t>(got), cap - dst.size()));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        CloseFd(fds[i].fd);
        --open_fds;
      }
    }
  }
  for (pollfd& f : fds) CloseFd(f.fd);
  return reaped;
}

}  // namespace

int ChildExitCode(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

ChildProcess::~ChildProcess() {
  Kill();
  CloseFd(out_fd_);
  CloseFd(err_fd_);
  CloseFd(in_fd_);
}

Status ChildProcess::Start(const ChildSpec& spec) {
  KSTACKLAB_CHECK(!spec.argv.empty() && pid_ < 0);
  StreamFds in, out, err;
  KSTACKLAB_RETURN_IF_ERROR(OpenStream(spec.in, true, &in));
  KSTACKLAB_RETURN_IF_ERROR(OpenStream(spec.out, false, &out));
  if (!spec.err_to_out) KSTACKLAB_RETURN_IF_ERROR(OpenStream(spec.err, false, &err));
  std::vector<char*> argv;
  argv.reserve(spec.argv.size() + 1);
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    return SystemError(fmt::format("cannot start {}: {}", spec.argv[0], std::strerror(errno)),
                       errno);
  }
  if (pid == 0) {
    ExecChild(spec, parent, argv.data(), in.child, out.child,
              spec.err_to_out ? out.child : err.child);
  }
  if (spec.own_group) ::setpgid(pid, pid);  // also here, so a Kill() right after reaches the group
  pid_ = pid;
  own_group_ = spec.own_group;
  std::swap(in_fd_, in.parent);
  std::swap(out_fd_, out.parent);
  std::swap(err_fd_, err.parent);
  return OkStatus();
}

int ChildProcess::ReleaseOut() { return std::exchange(out_fd_, -1); }
int ChildProcess::ReleaseErr() { return std::exchange(err_fd_, -1); }
int ChildProcess::ReleaseIn() { return std::exchange(in_fd_, -1); }

bool ChildProcess::Poll(int* exit_code, int* wait_status) {
  if (pid_ < 0) return true;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    *exit_code = ChildExitCode(status);
    if (wait_status != nullptr) *wait_status = status;
    pid_ = -1;
    return true;
  }
  if (r < 0 && errno != EINTR) {  // not ours to wait for (ECHILD): nothing left to wait for
    *exit_code = -1;
    pid_ = -1;
    return true;
  }
  return false;
}

int ChildProcess::Wait(const std::function<void()>& interrupted) {
  if (pid_ < 0) return -1;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) {
      pid_ = -1;
      return -1;
    }
    if (interrupted) interrupted();
  }
  pid_ = -1;
  return ChildExitCode(status);
}

void ChildProcess::Signal(int sig) const {
  if (pid_ < 0) return;
  if (own_group_) ::kill(-pid_, sig);
  ::kill(pid_, sig);
}

void ChildProcess::Kill() {
  if (pid_ < 0) return;
  Signal(SIGKILL);
  Wait();
}

Expected<ChildResult> RunChild(const ChildSpec& spec, double timeout_s,
                               const std::atomic<bool>* stop) {
  ChildProcess child;
  KSTACKLAB_RETURN_IF_ERROR(child.Start(spec));
  ChildResult r;
  if (!Collect(child, timeout_s, stop, &r)) r.exit_code = child.Wait();
  return r;
}

double MonotonicSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string FindOnPath(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return IsExecutableFile(name) ? name : "";
  const char* path = std::getenv("PATH");
  for (const std::string& dir : Split(path != nullptr ? path : "/usr/bin:/bin", ':', true)) {
    std::string candidate = fmt::format("{}/{}", dir.empty() ? "." : dir, name);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return "";
}

bool FindProgram(const std::string& name) { return !FindOnPath(name).empty(); }

}  // namespace kstacklab
