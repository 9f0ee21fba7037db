// The gnuplot runner of `kstacklab plot`: writes a GnuplotJob into a temp dir, runs gnuplot
// there (stdin/stdout /dev/null, stderr captured) and moves the image into place.
#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/common/fileio.h"
#include "kstacklab/common/subprocess.h"
#include "kstacklab/report/plot.h"

namespace kstacklab::report {
namespace {

constexpr const char* kInstallHint = "apt-get install gnuplot-nox";

// Removes the temp dir on every path.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/kstacklab-plot-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) != nullptr)
      path_ = buf.data();
    else
      error_ = std::strerror(errno);
  }
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  std::string error_;
};

// The file's content, or "" when it cannot be read (gnuplot wrote nothing there).
std::string ContentOrEmpty(const std::string& path) {
  Expected<std::string> text = ReadWholeFile(path);
  return text.ok() ? *text : std::string();
}

// gnuplot's stderr reduced to at most a few lines for an error message.
std::string StderrExcerpt(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line) && n < 6) {
    if (line.find_first_not_of(" \t^") == std::string::npos) continue;
    if (!out.empty()) out += " | ";
    out += line;
    ++n;
  }
  return out.empty() ? std::string("(no message)") : out;
}

// SIGINT, SIGTERM and SIGHUP (those not ignored: SIGHUP stays ignored under nohup) are blocked
// while a plot is drawn, and waited for beside gnuplot: one that arrives ends gnuplot and the
// plot cleanly (temp dir removed, no orphan) instead of killing this process mid-way. The mask
// is restored last; the signal was consumed and is reported as the exit code.
class ScopedBlockedSignals {
 public:
  ScopedBlockedSignals() {
    sigemptyset(&set_);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction now {};
      if (::sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN) continue;
      sigaddset(&set_, sig);
    }
    ::pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~ScopedBlockedSignals() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  ScopedBlockedSignals(const ScopedBlockedSignals&) = delete;
  ScopedBlockedSignals& operator=(const ScopedBlockedSignals&) = delete;
  const sigset_t& old_mask() const { return old_; }
  // A blocked signal that has arrived (consumed), waiting at most `ms`; 0 when none.
  int Take(long ms) const {
    const timespec wait{ms / 1000, (ms % 1000) * 1000000L};
    const int sig = ::sigtimedwait(&set_, nullptr, &wait);
    return sig > 0 ? sig : 0;
  }

 private:
  sigset_t set_{};
  sigset_t old_{};
};

Error Interrupted(int sig, const std::string& output_path) {
  return Error{128 + sig, fmt::format("interrupted by signal {} ({}) while drawing {}: gnuplot "
                                      "stopped, nothing written",
                                      sig, ::strsignal(sig), output_path)};
}

// Runs gnuplot on `job` in a fresh temp dir (removed on every path, a signal included) and
// returns the image it drew.
// A whole PNG (the signature, then the IEND chunk last) or SVG (the closing tag).
bool ImageComplete(const std::string& image) {
  static constexpr std::string_view kPngSignature("\x89PNG\r\n\x1a\n", 8);
  static constexpr std::string_view kPngEnd("IEND\xae\x42\x60\x82", 8);
  const std::string_view v(image);
  if (v.substr(0, kPngSignature.size()) == kPngSignature) {
    return v.size() >= kPngSignature.size() + kPngEnd.size() &&
           v.substr(v.size() - kPngEnd.size()) == kPngEnd;
  }
  return v.find("<svg") != std::string_view::npos && v.rfind("</svg>") != std::string_view::npos;
}

Expected<std::string> DrawImage(const GnuplotJob& job, const std::string& output_path) {
  const std::string gnuplot = FindOnPath("gnuplot");
  if (gnuplot.empty()) {
    return RuntimeError(fmt::format("gnuplot not found on PATH; install it: {}", kInstallHint));
  }
  const ScopedBlockedSignals signals;  // declared first: restored after the temp dir is gone
  TempDir dir;
  if (dir.path().empty()) {
    return RuntimeError(
        fmt::format("cannot create a temp dir for gnuplot: {} (set TMPDIR to a "
                    "writable directory)",
                    dir.error()));
  }
  for (const auto& [name, content] : job.data_files) {
    if (Status st = WriteFileAtomic(dir.path() + "/" + name, content); !st.ok()) return st.error();
  }
  if (Status st = WriteFileAtomic(dir.path() + "/plot.gp", job.script); !st.ok()) {
    return st.error();
  }

  const std::string err_path = dir.path() + "/gnuplot.stderr";
  // gnuplot starts in the temp dir with this process's own mask (the signals not blocked in it).
  ChildSpec spec;
  spec.argv = {gnuplot, "plot.gp"};
  spec.cwd = dir.path();
  spec.out = ChildStream::Null();
  spec.err = ChildStream::File(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  spec.own_group = false;
  spec.default_signals = false;
  spec.mask = &signals.old_mask();
  ChildProcess child;
  if (Status st = child.Start(spec); !st.ok()) {
    return RuntimeError(fmt::format("cannot start {}: {} (reinstall it: {})", gnuplot,
                                    std::strerror(st.error().os_errno), kInstallHint));
  }
  int status = 0;
  int code = 0;
  while (!child.Poll(&code, &status)) {
    if (const int sig = signals.Take(50); sig != 0) {
      child.Signal(SIGTERM);
      child.Wait();
      return Interrupted(sig, output_path);
    }
  }
  if (code < 0) return RuntimeError(fmt::format("waiting for gnuplot: {}", std::strerror(errno)));
  const std::string err = ContentOrEmpty(err_path);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string how = WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status))
                                        : fmt::format("signal {}", WTERMSIG(status));
    return RuntimeError(
        fmt::format("gnuplot failed ({}) drawing {}: {}", how, output_path, StderrExcerpt(err)));
  }
  const std::string image = ContentOrEmpty(dir.path() + "/plot.out");
  if (image.empty()) {
    return RuntimeError(
        fmt::format("gnuplot wrote no image for {}: {}", output_path, StderrExcerpt(err)));
  }
  if (!ImageComplete(image)) {
    // gnuplot exits 0 after a write that failed part-way (a file-size limit, ulimit -f, a full
    // /tmp): the image would be cut off, so nothing is written.
    return RuntimeError(fmt::format(
        "gnuplot wrote an incomplete image for {} ({} bytes: a file-size limit or a full disk?); "
        "nothing was written",
        output_path, image.size()));
  }
  if (const int sig = signals.Take(0); sig != 0) return Interrupted(sig, output_path);
  return image;
}

}  // namespace

Status RenderGnuplot(const GnuplotJob& job, const std::string& output_path) {
  // The image is written with the signals unblocked again: a FIFO output waiting for its reader
  // can still be interrupted.
  auto image = DrawImage(job, output_path);
  if (!image.ok()) return image.error();
  return WriteFileAtomic(output_path, *image);
}

}  // namespace kstacklab::report
