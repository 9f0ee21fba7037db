// Sessions in fresh processes (src/run/sessions.h).
#include "sessions.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kstacklab/common/fileio.h"
#include "kstacklab/results/result_reader.h"

namespace kstacklab::run {

Expected<RunResult> RunSession(const std::vector<std::string>& argv, int session,
                               const RunGuard& guard) {
  KSTACKLAB_CHECK(!argv.empty());
  std::vector<char*> cargv;
  std::vector<std::string> copy = argv;
  for (std::string& s : copy) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return RuntimeError(fmt::format("cannot start session {}: {}", session, std::strerror(errno)));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return RuntimeError(fmt::format("cannot start session {}: {}", session, std::strerror(err)));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    if (::dup2(fds[1], STDOUT_FILENO) < 0) ::_exit(127);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  bool forwarded = false;
  auto forward_stop = [&] {
    if (guard.stop_requested() && !forwarded) {
      ::kill(pid, guard.stop_signal() != 0 ? guard.stop_signal() : SIGTERM);
      forwarded = true;
    }
  };
  // A child writing more than a result file may hold, or a failed read, leaves no result:
  // the output is dropped and the parse below says the session left none.
  auto output = ReadAll(fds[0], ResultLimits::kMaxFileBytes,
                        fmt::format("session {}'s output", session), forward_stop);
  const std::string text = output.ok() ? std::move(*output) : std::string();
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return RuntimeError(fmt::format("waiting for session {}: {}", session, std::strerror(errno)));
    }
    forward_stop();
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto result = ResultFromJson(text, fmt::format("session {}", session));
  if (!result.ok()) {
    if (code == 0) return RuntimeError(result.error().message);
    return RuntimeError(
        fmt::format("session {} exited with code {} and left no result", session, code));
  }
  if (code != 0 && !result->partial) {
    return RuntimeError(fmt::format("session {} failed with exit code {}", session, code));
  }
  return result;
}

Status MergeSession(RunResult& into, const RunResult& other) {
  if (into.benchmarks.size() != other.benchmarks.size()) {
    return RuntimeError("sessions measured different benchmarks");
  }
  for (size_t i = 0; i < into.benchmarks.size(); ++i) {
    BenchmarkResult& b = into.benchmarks[i];
    const BenchmarkResult& o = other.benchmarks[i];
    if (b.name != o.name || b.variant != o.variant) {
      return RuntimeError("sessions measured different benchmarks");
    }
    b.repetitions.insert(b.repetitions.end(), o.repetitions.begin(), o.repetitions.end());
    KSTACKLAB_RETURN_IF_ERROR(b.histogram.Merge(o.histogram));
  }
  into.partial = into.partial || other.partial;
  return OkStatus();
}

}  // namespace kstacklab::run
