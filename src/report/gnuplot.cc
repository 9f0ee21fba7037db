// The gnuplot runner of `kstacklab plot`: writes a GnuplotJob into a temp dir, runs gnuplot
// there (posix_spawn, stdin/stdout /dev/null, stderr captured) and moves the image into place.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "kstacklab/fileio.h"
#include "kstacklab/plot.h"

extern char** environ;

namespace kstacklab {
namespace {

constexpr const char* kInstallHint = "apt-get install gnuplot-nox";

// First executable `name` on $PATH, or "".
std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return std::string();
}

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

}  // namespace

Status RenderGnuplot(const GnuplotJob& job, const std::string& output_path) {
  const std::string gnuplot = FindOnPath("gnuplot");
  if (gnuplot.empty()) {
    return RuntimeError(fmt::format("gnuplot not found on PATH; install it: {}", kInstallHint));
  }
  TempDir dir;
  if (dir.path().empty()) {
    return RuntimeError(
        fmt::format("cannot create a temp dir for gnuplot: {} (set TMPDIR to a "
                    "writable directory)",
                    dir.error()));
  }
  for (const auto& [name, content] : job.data_files) {
    KSTACKLAB_RETURN_IF_ERROR(WriteFileAtomic(dir.path() + "/" + name, content));
  }
  KSTACKLAB_RETURN_IF_ERROR(WriteFileAtomic(dir.path() + "/plot.gp", job.script));

  const std::string err_path = dir.path() + "/gnuplot.stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addchdir_np(&actions, dir.path().c_str());
  std::string arg0 = gnuplot, arg1 = "plot.gp";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, gnuplot.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return RuntimeError(fmt::format("cannot start {}: {} (reinstall it: {})", gnuplot,
                                    std::strerror(rc), kInstallHint));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return RuntimeError(fmt::format("waiting for gnuplot: {}", std::strerror(errno)));
    }
  }
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
  return WriteFileAtomic(output_path, image);
}

}  // namespace kstacklab
