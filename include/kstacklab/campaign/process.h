// Child processes of a campaign (QEMU, ldd, kstacklab itself): started from an argument vector,
// never through a shell (STYLE.md 17), each wait under a deadline (STYLE.md 19). A child dies
// with the campaign (PR_SET_PDEATHSIG), so even a SIGKILLed campaign leaves no guest running.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"

namespace kstacklab::campaign {

// What RunProcess keeps of a child's output; the rest is read and dropped.
inline constexpr size_t kMaxProcessOut = size_t{16} << 20;  // standard output, 16 MiB
inline constexpr size_t kMaxProcessErr = size_t{1} << 20;   // standard error, 1 MiB

struct ProcessResult {
  int exit_code = -1;  // the exit status, or 128 + signal number
  bool timed_out = false;
  bool interrupted = false;  // `stop` was raised: the child was killed
  std::string out;           // standard output (at most kMaxProcessOut kept)
  std::string err;           // standard error (at most kMaxProcessErr kept)
};

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
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();  // kills and reaps a child still running
  // Starts `argv` with stdin /dev/null and stdout+stderr appended to `log_path` (stderr to
  // `err_path` instead when given), pinned to `cpus` when not empty. RuntimeError when it cannot
  // be started.
  // `cwd`: the directory it starts in ("" = this process's).
  Status Start(const std::vector<std::string>& argv, const std::string& log_path,
               const std::vector<uint64_t>& cpus, const std::string& err_path = "",
               const std::string& cwd = "");
  // True (and the status in *exit_code: exit status or 128 + signal) once it has ended.
  bool Poll(int* exit_code);
  // SIGKILL to the process group, then reap.
  void Kill();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// CLOCK_MONOTONIC in seconds: every deadline of a campaign is measured on it.
double MonotonicSeconds();

// True when `name` is an executable file in PATH (or a path to one).
bool FindProgram(const std::string& name);

}  // namespace kstacklab::campaign
