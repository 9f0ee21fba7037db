// Child processes of a campaign (QEMU, ldd, ssh, lavacli, make, kstacklab itself), on the one
// launcher of common/ (kstacklab/subprocess.h): started from an argument vector, never through a
// shell (STYLE.md 17), each wait under a deadline (STYLE.md 19). A child dies with the campaign
// (PR_SET_PDEATHSIG), so even a SIGKILLed campaign leaves no guest running. This file keeps the
// campaign's forms: a program not found is an error naming it, a log file takes both streams.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/common/subprocess.h"

namespace kstacklab::campaign {

// What RunProcess keeps of a child's output; the rest is read and dropped.
inline constexpr size_t kMaxProcessOut = kMaxChildOut;  // standard output, 16 MiB
inline constexpr size_t kMaxProcessErr = kMaxChildErr;  // standard error, 1 MiB

using ProcessResult = ChildResult;
using kstacklab::FindProgram;
using kstacklab::MonotonicSeconds;

// Runs argv[0] (looked up in PATH) with `argv`, stdin from `stdin_path` ("" = /dev/null), and
// waits at most `timeout_s` for it to exit and close its output (then SIGKILL to its process
// group, timed_out). When `stop` is given and raised (a signal handler's flag), the child is
// killed within 100 ms (interrupted). A program that cannot be started, or a stdin file that
// cannot be opened -> RuntimeError naming it.
Expected<ProcessResult> RunProcess(const std::vector<std::string>& argv, double timeout_s,
                                   const std::string& stdin_path = "",
                                   const std::atomic<bool>* stop = nullptr);

// Runs `argv` (looked up in PATH) in the directory `cwd` with stdin /dev/null and stdout and
// stderr appended to `log_path` (a build's output: neither kept in memory nor bounded), and waits
// at most `timeout_s` for it to exit (then SIGKILL to its process group: timed_out), or until
// `stop` is raised (killed: interrupted). `out` and `err` stay empty. RuntimeError when it cannot
// be started or the log cannot be written.
Expected<ProcessResult> RunProcessLogged(const std::vector<std::string>& argv,
                                         const std::string& cwd, const std::string& log_path,
                                         double timeout_s, const std::atomic<bool>* stop = nullptr);

// A started child in its own process group.
class Child {
 public:
  // Starts `argv` with stdin /dev/null and stdout+stderr appended to `log_path` (stderr to
  // `err_path` instead when given), pinned to `cpus` when not empty. RuntimeError when it cannot
  // be started.
  // `cwd`: the directory it starts in ("" = this process's).
  Status Start(const std::vector<std::string>& argv, const std::string& log_path,
               const std::vector<uint64_t>& cpus, const std::string& err_path = "",
               const std::string& cwd = "");
  // True (and the status in *exit_code: exit status or 128 + signal) once it has ended.
  bool Poll(int* exit_code) { return process_.Poll(exit_code); }
  // SIGKILL to the process group, then reap.
  void Kill() { process_.Kill(); }
  pid_t pid() const { return process_.pid(); }

 private:
  ChildProcess process_;  // killed and reaped, if still running, when the Child goes
};

}  // namespace kstacklab::campaign
