#include "kstacklab/fileio.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace kstacklab {
namespace {

std::string DirOf(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status WriteAll(int fd, std::string_view content, const std::string& what) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return RuntimeError(fmt::format("cannot write {}: {}", what, std::strerror(errno)));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return OkStatus();
}

// The process umask, read without changing it for longer than two syscalls.
mode_t CurrentUmask() {
  mode_t old = ::umask(077);
  ::umask(old);
  return old;
}

// The names `path` passes through, itself and then each symlink's target in turn (at most 40,
// as the kernel follows), made absolute lexically: so.svg -> /dev/stdout -> /proc/self/fd/1.
std::vector<std::string> LinkChain(const std::string& path) {
  std::vector<std::string> chain;
  std::string cur = path;
  for (int hop = 0; hop < 40; ++hop) {
    if (cur.empty() || cur[0] != '/') {
      std::error_code ec;
      cur = (std::filesystem::current_path(ec) / cur).lexically_normal().string();
    }
    chain.push_back(cur);
    struct stat lst {};
    if (::lstat(cur.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) break;
    std::string target(PATH_MAX, '\0');
    const ssize_t n = ::readlink(cur.c_str(), target.data(), target.size());
    if (n <= 0) break;
    target.resize(static_cast<size_t>(n));
    if (target[0] != '/') target = DirOf(cur).append("/").append(target);
    cur = std::filesystem::path(target).lexically_normal().string();
  }
  return chain;
}

// The descriptor of this process that a name in the chain stands for: /dev/stdout, /dev/stderr,
// /dev/fd/N, /proc/self/fd/N, /proc/thread-self/fd/N, /proc/<this pid>/fd/N.
std::optional<int> DescriptorOf(const std::vector<std::string>& chain) {
  const std::string own = fmt::format("/proc/{}/fd/", ::getpid());
  for (const std::string& name : chain) {
    if (name == "/dev/stdout") return 1;
    if (name == "/dev/stderr") return 2;
    for (const std::string& dir : {std::string("/dev/fd/"), std::string("/proc/self/fd/"),
                                   std::string("/proc/thread-self/fd/"), own}) {
      if (name.size() <= dir.size() || name.compare(0, dir.size(), dir) != 0) continue;
      const std::string n = name.substr(dir.size());
      if (n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos) continue;
      return std::stoi(n);
    }
  }
  return std::nullopt;
}

// True when `path` is written through rather than replaced: it exists and is not a regular file
// once symlinks are followed (a device node, FIFO, socket, a /proc/self/fd/N link to a pipe or
// terminal), or it names a descriptor or reaches /proc on the way (/dev/stdout or
// /proc/self/fd/3 onto a regular file: the caller's descriptor, whose other content must
// survive). A symlink to a regular file elsewhere (/dev/shm included) is not special: its
// target is replaced atomically.
bool IsSpecial(const std::string& path) {
  const std::vector<std::string> chain = LinkChain(path);
  if (DescriptorOf(chain)) return true;
  for (const std::string& name : chain) {
    if (name.rfind("/proc/", 0) == 0) return true;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  return !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

Status WriteThrough(const std::string& path, const std::string& content) {
  // A descriptor of ours is written as it stands (its offset, O_APPEND), as `>&N` would be;
  // reopening /proc/self/fd/N would start at offset 0 over what the caller wrote before.
  if (const std::optional<int> own = DescriptorOf(LinkChain(path))) {
    const int flags = ::fcntl(*own, F_GETFL);
    if (flags >= 0 && (flags & O_ACCMODE) != O_RDONLY) {
      return WriteAll(*own, content, fmt::format("'{}'", path));
    }
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return RuntimeError(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  Status st = WriteAll(fd, content, fmt::format("'{}'", path));
  if (::close(fd) != 0 && st.ok() && errno != EINTR) {
    st = RuntimeError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  return st;
}

}  // namespace

Status CheckSymlinkOwner(const std::string& path) {
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) return OkStatus();
  const std::string dir = DirOf(path);
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0) return OkStatus();  // reported by the caller's checks
  const bool shared = (dst.st_mode & S_ISVTX) != 0 && (dst.st_mode & S_IWOTH) != 0;
  if (!shared || lst.st_uid == ::geteuid() || lst.st_uid == dst.st_uid) return OkStatus();
  return UsageError(fmt::format(
      "'{}' is a symbolic link made by uid {} in the shared directory '{}': refusing to write "
      "through it (it could point at any file of yours); give another path",
      path, lst.st_uid, dir));
}

Expected<std::string> ReadAll(int fd, size_t max_bytes, const std::string& what,
                              const std::function<void()>& on_interrupt) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) {
        if (on_interrupt) on_interrupt();
        continue;
      }
      return UsageError(fmt::format("cannot read {}: {}", what, std::strerror(errno)));
    }
    if (n == 0) return out;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      return UsageError(fmt::format("{} is larger than the {} bytes accepted", what, max_bytes));
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

Expected<std::string> ReadWholeFile(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return UsageError(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return UsageError(fmt::format("cannot read '{}': it is a directory", path));
  }
  auto text = ReadAll(fd, max_bytes, fmt::format("'{}'", path));
  ::close(fd);
  return text;
}

Expected<std::string> ReadStdin(size_t max_bytes) {
  return ReadAll(STDIN_FILENO, max_bytes, "standard input");
}

Status WriteStdout(std::string_view text) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
    return RuntimeError(fmt::format("cannot write to standard output: {}", std::strerror(errno)));
  }
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    return RuntimeError(fmt::format("cannot write to standard output: {}", std::strerror(errno)));
  }
  return OkStatus();
}

Status WriteFileAtomic(const std::string& path, const std::string& content) {
  if (path == "-") return WriteStdout(content);
  if (Status st = CheckSymlinkOwner(path); !st.ok()) return RuntimeError(st.error().message);
  if (IsSpecial(path)) return WriteThrough(path, content);
  // A symlink to a regular file: replace the target, keep the link.
  std::string target = path;
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    char* real = ::realpath(path.c_str(), nullptr);
    if (real != nullptr) {
      target = real;
      std::free(real);  // NOLINT(cppcoreguidelines-no-malloc): realpath allocates with malloc
    }
  }
  struct stat old {};
  const bool exists = ::stat(target.c_str(), &old) == 0;
  const mode_t mode = exists ? (old.st_mode & 07777) : (0666 & ~CurrentUmask());
  std::string tmpl = DirOf(target) + "/.kstacklab-tmp-XXXXXX";
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) {
    return RuntimeError(fmt::format("cannot create a file in '{}' for '{}': {}", DirOf(target),
                                    path, std::strerror(errno)));
  }
  Status st = WriteAll(fd, content, fmt::format("'{}'", path));
  if (st.ok() && ::fsync(fd) != 0) {
    st = RuntimeError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  if (st.ok() && ::fchmod(fd, mode) != 0) {
    st = RuntimeError(fmt::format("cannot set the mode of '{}': {}", path, std::strerror(errno)));
  }
  if (st.ok() && exists && ::geteuid() == 0) {
    // As root, keep the owner of the file being replaced (best effort).
    (void)::fchown(fd, old.st_uid, old.st_gid);
  }
  if (::close(fd) != 0 && st.ok()) {
    st = RuntimeError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  if (st.ok() && ::rename(tmpl.c_str(), target.c_str()) != 0) {
    st = RuntimeError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  if (!st.ok()) {
    ::unlink(tmpl.c_str());
    return st;
  }
  // The rename is durable once the directory is on disk too (best effort: some file systems
  // cannot fsync a directory, and the file itself is already complete either way).
  if (const int dfd = ::open(DirOf(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return st;
}

std::string HomeDir() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') return home;
  if (const passwd* pw = ::getpwuid(::getuid());
      pw != nullptr && pw->pw_dir != nullptr && *pw->pw_dir != '\0') {
    return pw->pw_dir;
  }
  return "/";
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat first {};
  struct stat second {};
  return ::stat(a.c_str(), &first) == 0 && ::stat(b.c_str(), &second) == 0 &&
         first.st_dev == second.st_dev && first.st_ino == second.st_ino;
}

Status CheckWritable(const std::string& path) {
  if (path == "-") return OkStatus();
  if (path.empty()) return UsageError("the output path is empty; give a file name or '-'");
  if (path.back() == '/') {
    return UsageError(
        fmt::format("'{}' names a directory; give a file name such as {}out.json", path, path));
  }
  KSTACKLAB_RETURN_IF_ERROR(CheckSymlinkOwner(path));
  if (const std::optional<int> own = DescriptorOf(LinkChain(path))) {  // written through
    const int flags = ::fcntl(*own, F_GETFL);
    if (flags >= 0 && (flags & O_ACCMODE) != O_RDONLY) return OkStatus();
    return UsageError(fmt::format(
        "'{}' is descriptor {} of this process, which is not open for writing; redirect it "
        "(e.g. {}>FILE) or give a file name",
        path, *own, *own));
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return UsageError(
          fmt::format("'{}' is a directory; give a file name such as {}/out.json", path, path));
    }
    if (!S_ISREG(st.st_mode)) {
      if (::access(path.c_str(), W_OK) != 0) {
        return UsageError(fmt::format("cannot write '{}': {}; give a file you can write", path,
                                      std::strerror(errno)));
      }
      return OkStatus();
    }
    // No kstacklab output is a database: replacing one (the results store, given as -o by
    // mistake) would lose every result in it.
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      char magic[16] = {};
      const size_t got = std::fread(magic, 1, sizeof magic, f);
      std::fclose(f);
      if (got == sizeof magic && std::memcmp(magic, "SQLite format 3", 16) == 0) {
        return UsageError(fmt::format(
            "'{}' is an SQLite database (the results store?), which this output would replace; "
            "give another file name",
            path));
      }
    }
  }
  // The temporary file is the name plus a 7-byte suffix, and the name must fit NAME_MAX: refuse
  // now, not after the measurement.
  const size_t slash = path.find_last_of('/');
  const std::string base = path.substr(slash == std::string::npos ? 0 : slash + 1);
  if (base.size() + 8 > NAME_MAX) {
    return UsageError(
        fmt::format("the file name '{}...' is {} bytes, more than the {} a name may "
                    "have (with room for the temporary file); give a shorter one",
                    base.substr(0, 40), base.size(), NAME_MAX - 8));
  }
  std::string dir = DirOf(path);
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    char* real = ::realpath(path.c_str(), nullptr);
    if (real != nullptr) {
      dir = DirOf(real);
      std::free(real);  // NOLINT(cppcoreguidelines-no-malloc): realpath allocates with malloc
    }
  }
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
    return UsageError(fmt::format("cannot write '{}': directory '{}' does not exist", path, dir));
  }
  std::string tmpl = dir + "/.kstacklab-probe-XXXXXX";
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) {  // checked before any work: the path given is the problem, so a usage error
    return UsageError(fmt::format("cannot write '{}': {}; give a path in a directory you can write",
                                  path, std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(tmpl.c_str());
  return OkStatus();
}

}  // namespace kstacklab
