// Child processes: the one launcher every caller uses (campaign engines, `run` sessions, gnuplot,
// the kernbench compilers). A child is started from an argument vector, never through a shell
// (STYLE.md 17), dies with this process (PR_SET_PDEATHSIG), and every wait for it can have a
// deadline and a stop flag (STYLE.md 19).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kstacklab/common/error.h"

namespace kstacklab {

// Where one of a child's standard streams comes from or goes to.
struct ChildStream {
  enum class Kind {
    kInherit,  // this process's own
    kNull,     // /dev/null
    kPipe,     // a pipe whose other end the caller reads (stdout, stderr) or writes (stdin)
    kFile,     // `path` opened with `flags` (and `mode` when it creates it)
  };
  Kind kind = Kind::kInherit;
  std::string path;
  int flags = 0;
  mode_t mode = 0644;

  static ChildStream Inherit() { return {}; }
  static ChildStream Null() { return {Kind::kNull, "", 0, 0}; }
  static ChildStream Pipe() { return {Kind::kPipe, "", 0, 0}; }
  static ChildStream File(std::string path, int flags, mode_t mode = 0644) {
    return {Kind::kFile, std::move(path), flags, mode};
  }
};

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH unless it holds a '/'
  std::string cwd;                // the directory it starts in ("" = this process's)
  ChildStream in = ChildStream::Null();
  ChildStream out = ChildStream::Inherit();
  ChildStream err = ChildStream::Inherit();  // kInherit with out a kFile: see err_to_out
  bool err_to_out = false;                   // stderr to wherever stdout goes (a log of both)
  std::vector<uint64_t> cpus;                // pinned to these CPUs when not empty
  bool own_group = true;  // in its own process group (a kill reaches its children)
  // The child's signals: true = default dispositions for SIGINT, SIGTERM, SIGHUP, SIGPIPE and
  // SIGXFSZ and nothing blocked; false = as exec(2) leaves them (ignored stay ignored), with
  // `mask` as the blocked set when given, else this thread's.
  bool default_signals = true;
  const sigset_t* mask = nullptr;
};

// A started child. In the child, before exec: its process group (own_group), PR_SET_PDEATHSIG
// SIGKILL (and exit 127 when this process died first), its signals, streams, CPUs and directory;
// exit 126 when the CPUs or the directory cannot be set, 127 when exec fails.
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // kills and reaps a child still running; closes the pipes

  // An error naming the file or the program (os_errno set) when a stream cannot be opened or
  // fork fails.
  Status Start(const ChildSpec& spec);
  // This process's ends of the kPipe streams (-1 otherwise), owned until Release*.
  int out_fd() const { return out_fd_; }
  int err_fd() const { return err_fd_; }
  int in_fd() const { return in_fd_; }
  // Hands the pipe end over to the caller, who closes it.
  int ReleaseOut();
  int ReleaseErr();
  int ReleaseIn();

  // True (and the status in *exit_code: exit status or 128 + signal; the waitpid(2) status in
  // *wait_status when given) once it has ended; a failed waitpid(2) ends it too, with exit code
  // -1 and errno kept.
  bool Poll(int* exit_code, int* wait_status = nullptr);
  // Waits for it to end; its exit status or 128 + signal, -1 when there is none. A wait that a
  // signal interrupts calls `interrupted` (when given), then waits again.
  int Wait(const std::function<void()>& interrupted = {});
  // `sig` to its process group (own_group) or to it.
  void Signal(int sig) const;
  // SIGKILL to its process group (and to it), then reap.
  void Kill();
  pid_t pid() const { return pid_; }
  // Leaves the child to the caller, who reaps it (waitpid(-1, ...) over several children):
  // returns its pid and forgets it.
  pid_t Release() { return std::exchange(pid_, -1); }

 private:
  pid_t pid_ = -1;
  bool own_group_ = true;
  int out_fd_ = -1, err_fd_ = -1, in_fd_ = -1;
};

// What RunChild keeps of a child's output; the rest is read and dropped.
inline constexpr size_t kMaxChildOut = size_t{16} << 20;  // standard output, 16 MiB
inline constexpr size_t kMaxChildErr = size_t{1} << 20;   // standard error, 1 MiB

struct ChildResult {
  int exit_code = -1;  // the exit status, or 128 + signal number
  bool timed_out = false;
  bool interrupted = false;  // `stop` was raised: the child was killed
  std::string out;           // standard output (at most kMaxChildOut kept)
  std::string err;           // standard error (at most kMaxChildErr kept)
};

// Runs `spec` (its out and err become pipes when they are kPipe: read into the result) and waits
// at most `timeout_s` for it to exit and close its output (then SIGKILL to its process group:
// timed_out); when `stop` is given and raised (a signal handler's flag) the child is killed within
// 100 ms (interrupted). A child killed so has exit_code 137 (128 + SIGKILL); one that had ended
// first keeps its own. An error naming the program or file (os_errno set) when it cannot be
// started; a program exec cannot run exits 127.
Expected<ChildResult> RunChild(const ChildSpec& spec, double timeout_s,
                               const std::atomic<bool>* stop = nullptr);

// The exit status of a waitpid(2) status, or 128 + the signal that ended it; -1 otherwise.
int ChildExitCode(int wait_status);

// CLOCK_MONOTONIC in seconds: the clock of every child deadline.
double MonotonicSeconds();

// The path of the executable regular file `name` names: itself when it holds a '/', else the
// first in PATH (an empty entry is the current directory, as for execvp); "" when there is none.
std::string FindOnPath(const std::string& name);

// True when FindOnPath finds `name`.
bool FindProgram(const std::string& name);

}  // namespace kstacklab
