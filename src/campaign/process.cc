// The campaign's forms of the common launcher (include/kstacklab/campaign/process.h).
#include "kstacklab/campaign/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>

#include <algorithm>

namespace kstacklab::campaign {
namespace {

// A log a child appends to (never through a symbolic link).
constexpr int kLogFlags = O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW;

// The launcher's errors without their errno: a child that cannot be started is the boot's or the
// step's failure, never a host write fault (IsHostWriteFault reads os_errno).
Error WithoutErrno(const Error& e) { return RuntimeError(e.message); }

}  // namespace

Expected<ProcessResult> RunProcess(const std::vector<std::string>& argv, double timeout_s,
                                   const std::string& stdin_path, const std::atomic<bool>* stop) {
  ChildSpec spec;
  spec.argv = argv;
  if (!stdin_path.empty()) spec.in = ChildStream::File(stdin_path, O_RDONLY);
  spec.out = ChildStream::Pipe();
  spec.err = ChildStream::Pipe();
  auto r = RunChild(spec, timeout_s, stop);
  if (!r.ok()) return WithoutErrno(r.error());
  if (r->exit_code == 127 && r->out.empty() && r->err.empty() && !FindProgram(argv[0])) {
    return RuntimeError(fmt::format("cannot run {}: not found", argv[0]));
  }
  return r;
}

Status Child::Start(const std::vector<std::string>& argv, const std::string& log_path,
                    const std::vector<uint64_t>& cpus, const std::string& err_path,
                    const std::string& cwd) {
  ChildSpec spec;
  spec.argv = argv;
  spec.cwd = cwd;
  spec.cpus = cpus;
  spec.out = ChildStream::File(log_path, kLogFlags);
  if (err_path.empty()) {
    spec.err_to_out = true;
  } else {
    spec.err = ChildStream::File(err_path, kLogFlags);
  }
  if (Status st = process_.Start(spec); !st.ok()) return WithoutErrno(st.error());
  return OkStatus();
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
