// Sessions in fresh processes (src/run/sessions.h).
#include "sessions.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

#include "kstacklab/common/fileio.h"
#include "kstacklab/common/subprocess.h"
#include "kstacklab/results/result_reader.h"

namespace kstacklab::run {

Expected<RunResult> RunSession(const std::vector<std::string>& argv, int session,
                               const RunGuard& guard) {
  KSTACKLAB_CHECK(!argv.empty());
  // The session inherits stdin, stderr and the signals as they are: a terminal's ^C reaches it
  // too, and the stop forwarded below reaches it when it came from elsewhere.
  ChildSpec spec;
  spec.argv = argv;
  spec.in = ChildStream::Inherit();
  spec.out = ChildStream::Pipe();
  spec.own_group = false;
  spec.default_signals = false;
  ChildProcess child;
  if (Status st = child.Start(spec); !st.ok()) {
    return RuntimeError(
        fmt::format("cannot start session {}: {}", session, std::strerror(st.error().os_errno)));
  }
  const int out_fd = child.ReleaseOut();
  bool forwarded = false;
  auto forward_stop = [&] {
    if (guard.stop_requested() && !forwarded) {
      child.Signal(guard.stop_signal() != 0 ? guard.stop_signal() : SIGTERM);
      forwarded = true;
    }
  };
  // A child writing more than a result file may hold, or a failed read, leaves no result:
  // the output is dropped and the parse below says the session left none.
  auto output = ReadAll(out_fd, ResultLimits::kMaxFileBytes,
                        fmt::format("session {}'s output", session), forward_stop);
  const std::string text = output.ok() ? std::move(*output) : std::string();
  ::close(out_fd);
  const int code = child.Wait(forward_stop);
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
    if (b.Key() != o.Key()) {
      return RuntimeError("sessions measured different benchmarks");
    }
    b.repetitions.insert(b.repetitions.end(), o.repetitions.begin(), o.repetitions.end());
    KSTACKLAB_RETURN_IF_ERROR(b.histogram.Merge(o.histogram));
  }
  into.partial = into.partial || other.partial;
  return OkStatus();
}

}  // namespace kstacklab::run
