#include "kstacklab/common/fileio.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <pwd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "kstacklab/common/text.h"

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
      const int err = errno;
      if (err == EINTR) continue;
      return SystemError(fmt::format("cannot write {}: {}", what, std::strerror(err)), err);
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
// Used only to recognise a descriptor name; where a write lands is decided by Resolve().
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

// A descriptor closed with its owner.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// Why a walk stopped: the first two are refusals whatever the caller does next; the others are
// reported by CheckWritable in its own words.
enum class WalkProblem { kNone, kForeignLink, kLoop, kMissingDir, kNotDir, kOther };

// Where a write of a path lands once every symbolic link on the way is followed as the kernel
// would follow it: `dir` is reached from "/" or the current directory one component at a time
// with openat(O_NOFOLLOW), so no link is followed unchecked, and `name` is the last component
// in it (it may not exist: a dangling link's target is created through the link).
struct Resolved {
  WalkProblem problem = WalkProblem::kNone;
  std::string message;   // when problem != kNone
  Fd dir;                // O_PATH | O_DIRECTORY
  std::string dir_path;  // the physical path of `dir`, for messages and link targets
  std::string name;      // the last component ("." or ".." when the path ends in one)
  bool exists = false;   // `name` exists in `dir` (and is not a link)
  struct stat st {};     // its status, when it exists
  bool on_proc = false;  // the walk reached procfs (magic links: /proc/self/fd/N); not walked
};

std::string JoinPath(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

// The kernel's fs.protected_symlinks rule for a link made by `link_uid` in a directory with
// status `dir`: in a sticky, world-writable directory only this user's links and the directory
// owner's are followed.
bool ForeignLink(const struct stat& dir, uid_t link_uid) {
  const bool shared = (dir.st_mode & S_ISVTX) != 0 && (dir.st_mode & S_IWOTH) != 0;
  return shared && link_uid != ::geteuid() && link_uid != dir.st_uid;
}

// A walk in progress: the result so far, the components still to walk (first in front) and
// the number of links followed. One-character names are set with assign(1, c): GCC 12 warns
// -Wrestrict on `string = "/"` inlined here (a false positive, GCC bug 105651, fixed in GCC 13).
struct Walk {
  Resolved r;
  std::deque<std::string> todo;
  int hops = 0;

  // Ends the walk on a problem.
  Resolved Stop(WalkProblem p, std::string message) {
    r.problem = p;
    r.message = std::move(message);
    return std::move(r);
  }
  // Puts the components of `p` first in the queue ("" and "." are dropped).
  void PushFrontComponents(const std::string& p) {
    std::vector<std::string> parts;
    for (const std::string& c : Split(p, '/')) {
      if (!c.empty() && c != ".") parts.push_back(c);
    }
    todo.insert(todo.begin(), parts.begin(), parts.end());
  }
  void StartAtRoot() {
    r.dir = Fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    r.dir_path.assign(1, '/');
  }
  void StartAtCurrentDirectory() {
    r.dir = Fd(::open(".", O_PATH | O_DIRECTORY | O_CLOEXEC));
    std::error_code ec;
    r.dir_path = std::filesystem::current_path(ec).string();
    if (ec) r.dir_path.assign(1, '.');
  }
  // Nothing is left to walk ("/", "." or a link to one of them): the path is `dir` itself.
  Resolved AtDirectory() {
    r.name.assign(1, '.');
    r.exists = ::fstat(r.dir.get(), &r.st) == 0;
    return std::move(r);
  }
};

// The component `name` of the walk could not be read (errno `err`): a missing last component
// is where the write creates it; anything else stops the walk.
Resolved Unreadable(Walk& w, const std::string& name, bool last, int err) {
  if (err == ENOENT && last) {
    w.r.name = name;
    return std::move(w.r);
  }
  const std::string here = JoinPath(w.r.dir_path, name);
  if (err == ENOENT) {
    return w.Stop(WalkProblem::kMissingDir, fmt::format("directory '{}' does not exist", here));
  }
  return w.Stop(WalkProblem::kOther, fmt::format("'{}': {}", here, std::strerror(err)));
}

// The component `name` is a symbolic link (status `lst`): its target's components are walked
// next, from "/" when it is absolute. Returns the result when the walk ends here.
std::optional<Resolved> FollowLink(Walk& w, const std::string& name, const struct stat& lst) {
  Resolved& r = w.r;
  const std::string link = JoinPath(r.dir_path, name);
  struct stat dst {};
  if (::fstat(r.dir.get(), &dst) == 0 && ForeignLink(dst, lst.st_uid)) {
    return w.Stop(WalkProblem::kForeignLink,
                  fmt::format("'{}' is a symbolic link made by uid {} in the shared directory "
                              "'{}': refusing to write through it (it could point at any file "
                              "of yours); give another path",
                              link, lst.st_uid, r.dir_path));
  }
  if (++w.hops > 40) {
    return w.Stop(WalkProblem::kLoop,
                  fmt::format("'{}': too many levels of symbolic links (a loop?); give "
                              "another path",
                              link));
  }
  std::string target(PATH_MAX, '\0');
  const ssize_t n = ::readlinkat(r.dir.get(), name.c_str(), target.data(), target.size());
  if (n <= 0) {
    return w.Stop(WalkProblem::kOther, fmt::format("cannot read the link '{}': {}", link,
                                                   std::strerror(n < 0 ? errno : EINVAL)));
  }
  target.resize(static_cast<size_t>(n));
  if (target[0] == '/') w.StartAtRoot();
  if (r.dir.get() < 0) return w.Stop(WalkProblem::kOther, std::strerror(errno));
  w.PushFrontComponents(target);
  if (w.todo.empty()) return w.AtDirectory();  // a link to "/" or "."
  return std::nullopt;
}

// The component `name` (status `lst`, not the last) is entered as the walk's directory.
// Returns the result when the walk ends here.
std::optional<Resolved> EnterDirectory(Walk& w, const std::string& name, const struct stat& lst) {
  Resolved& r = w.r;
  const std::string here = JoinPath(r.dir_path, name);
  if (!S_ISDIR(lst.st_mode)) {
    return w.Stop(WalkProblem::kNotDir, fmt::format("'{}' is not a directory", here));
  }
  Fd next(::openat(r.dir.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (next.get() < 0) {
    return w.Stop(WalkProblem::kOther, fmt::format("'{}': {}", here, std::strerror(errno)));
  }
  r.dir = std::move(next);
  if (name == "..") {
    r.dir_path = DirOf(r.dir_path);
  } else {
    r.dir_path = here;
  }
  return std::nullopt;
}

Resolved Resolve(const std::string& path) {
  Walk w;
  if (!path.empty() && path[0] == '/') {
    w.StartAtRoot();
  } else {
    w.StartAtCurrentDirectory();
  }
  if (w.r.dir.get() < 0) return w.Stop(WalkProblem::kOther, std::strerror(errno));
  w.PushFrontComponents(path);
  if (w.todo.empty()) return w.AtDirectory();  // "/" or "."
  while (!w.todo.empty()) {
    Resolved& r = w.r;
    struct statfs fs {};
    if (::fstatfs(r.dir.get(), &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC) {
      r.on_proc = true;
      r.name = w.todo.back();
      return std::move(r);
    }
    const std::string name = w.todo.front();
    w.todo.pop_front();
    const bool last = w.todo.empty();
    struct stat lst {};
    if (::fstatat(r.dir.get(), name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) != 0) {
      return Unreadable(w, name, last, errno);
    }
    if (S_ISLNK(lst.st_mode)) {
      if (std::optional<Resolved> done = FollowLink(w, name, lst)) return std::move(*done);
      continue;
    }
    if (last) {
      r.name = name;
      r.exists = true;
      r.st = lst;
      return std::move(r);
    }
    if (std::optional<Resolved> done = EnterDirectory(w, name, lst)) return std::move(*done);
  }
  return std::move(w.r);
}

// A file of another user in a sticky, world-writable directory (the kernel's
// fs.protected_regular rule, applied whatever that sysctl says): not ours to replace.
std::optional<std::string> ForeignFile(const Resolved& r) {
  struct stat dst {};
  if (!r.exists || !S_ISREG(r.st.st_mode) || ::fstat(r.dir.get(), &dst) != 0) return std::nullopt;
  if (!ForeignLink(dst, r.st.st_uid)) return std::nullopt;
  return fmt::format(
      "'{}' belongs to uid {} and lies in the shared directory '{}': refusing to replace another "
      "user's file there; give another path",
      JoinPath(r.dir_path, r.name), r.st.st_uid, r.dir_path);
}

// An existing regular file we may not write (mode without write permission for us, as root
// too, or EACCES/EPERM/immutable on open): refused as `cp` without -f refuses it.
std::optional<std::string> WriteProtected(const Resolved& r) {
  if (!r.exists || !S_ISREG(r.st.st_mode)) return std::nullopt;
  const std::string where = JoinPath(r.dir_path, r.name);
  const bool owner = r.st.st_uid == ::geteuid();
  if ((owner && (r.st.st_mode & S_IWUSR) == 0) || (r.st.st_mode & 0222) == 0) {
    return fmt::format(
        "'{}' is write-protected (mode {:04o}); make it writable (chmod u+w) or "
        "give another path",
        where, r.st.st_mode & 07777);
  }
  const int fd = ::openat(r.dir.get(), r.name.c_str(),
                          O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    return fmt::format("cannot write '{}': {}; give a file you can write", where,
                       std::strerror(errno));
  }
  ::close(fd);
  return std::nullopt;
}

// The file name must fit NAME_MAX with room to spare: refused before the measurement.
std::optional<std::string> NameTooLong(const std::string& name) {
  if (name.size() + 8 <= NAME_MAX) return std::nullopt;
  return fmt::format(
      "the file name '{}...' is {} bytes, more than the {} a name may have (with room for the "
      "temporary file); give a shorter one",
      name.substr(0, 40), name.size(), NAME_MAX - 8);
}

// A new file named ".kstacklab-PREFIX-XXXXXX" in `dir`, created exclusively (mode 0600).
Expected<std::pair<Fd, std::string>> CreateTemp(int dir, const std::string& prefix) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (int attempt = 0; attempt < 100; ++attempt) {
    uint64_t bits = 0;
    if (::getrandom(&bits, sizeof bits, 0) != static_cast<ssize_t>(sizeof bits)) {
      bits = static_cast<uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ULL ^
             static_cast<uint64_t>(std::time(nullptr)) ^ static_cast<uint64_t>(attempt);
    }
    std::string name = ".kstacklab-" + prefix + "-";
    for (int i = 0; i < 6; ++i, bits /= 62) name += kAlphabet[bits % 62];
    const int fd =
        ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) return std::make_pair(Fd(fd), name);
    if (errno != EEXIST) return SystemError(std::strerror(errno), errno);
  }
  return RuntimeError("no free temporary name");
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
bool IsSpecial(const std::string& path, const Resolved& r) {
  if (DescriptorOf(LinkChain(path))) return true;
  if (r.on_proc) return true;
  return r.exists && !S_ISREG(r.st.st_mode) && !S_ISDIR(r.st.st_mode);
}

// The SQLite files of a store: the database itself ("SQLite format 3") and its side files
// (NAME-wal, NAME-shm, NAME-journal next to it, or a file with a WAL header). Replacing any of
// them loses committed runs.
std::optional<std::string> SqliteFile(const Resolved& r) {
  auto magic_of = [&r](const std::string& name) {
    std::string magic(16, '\0');
    const int fd =
        ::openat(r.dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return std::string();
    const ssize_t got = ::read(fd, magic.data(), magic.size());
    ::close(fd);
    magic.resize(got > 0 ? static_cast<size_t>(got) : 0);
    return magic;
  };
  const std::string where = JoinPath(r.dir_path, r.name);
  if (r.exists && S_ISREG(r.st.st_mode)) {
    const std::string magic = magic_of(r.name);
    if (magic.size() == 16 && std::memcmp(magic.data(), "SQLite format 3", 16) == 0) {
      return fmt::format(
          "'{}' is an SQLite database (the results store?), which this output would replace; "
          "give another file name",
          where);
    }
    static constexpr unsigned char kWal[2][4] = {{0x37, 0x7f, 0x06, 0x82},
                                                 {0x37, 0x7f, 0x06, 0x83}};
    for (const auto& w : kWal) {
      if (magic.size() >= 4 && std::memcmp(magic.data(), w, 4) == 0) {
        return fmt::format(
            "'{}' is an SQLite write-ahead log, which this output would replace; "
            "give another file name",
            where);
      }
    }
  }
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    const std::string_view s(suffix);
    if (r.name.size() <= s.size() || r.name.compare(r.name.size() - s.size(), s.size(), s) != 0) {
      continue;
    }
    const std::string db = r.name.substr(0, r.name.size() - s.size());
    const std::string magic = magic_of(db);
    if (magic.size() == 16 && std::memcmp(magic.data(), "SQLite format 3", 16) == 0) {
      return fmt::format(
          "'{}' is the {} file of the SQLite database '{}' (the results store?), which this "
          "output would damage; give another file name",
          where, suffix + 1, JoinPath(r.dir_path, db));
    }
  }
  return std::nullopt;
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
  if (fd < 0) {
    return SystemError(fmt::format("cannot open '{}': {}", path, std::strerror(errno)), errno);
  }
  Status st = WriteAll(fd, content, fmt::format("'{}'", path));
  if (::close(fd) != 0 && st.ok() && errno != EINTR) {
    st = SystemError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)), errno);
  }
  return st;
}

}  // namespace

Status CheckSymlinkOwner(const std::string& path) {
  const Resolved r = Resolve(path);
  if (r.problem == WalkProblem::kForeignLink || r.problem == WalkProblem::kLoop) {
    return UsageError(r.message);
  }
  return OkStatus();
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

Expected<std::string> ReadRegularFile(const std::string& path, size_t max_bytes) {
  const std::string shown = EscapeControl(path);
  // O_NONBLOCK: opening a FIFO without a writer, or a device, returns at once instead of waiting.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    return UsageError(fmt::format("cannot read '{}': {}", shown, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return UsageError(fmt::format("cannot read '{}': it is not a regular file", shown));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return UsageError(fmt::format("'{}' is larger than the {} bytes accepted", shown, max_bytes));
  }
  auto text = ReadAll(fd, max_bytes, fmt::format("'{}'", shown));
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

namespace {

// WriteFileAtomic and WriteNewFile: `replace` false never replaces an existing name (the final
// rename is renameat2(RENAME_NOREPLACE)), and says so in `*collided`.
Status WriteFileImpl(const std::string& path, const std::string& content, bool replace,
                     bool* collided) {
  if (collided != nullptr) *collided = false;
  if (path == "-") return WriteStdout(content);
  const Resolved r = Resolve(path);
  if (r.problem == WalkProblem::kForeignLink || r.problem == WalkProblem::kLoop) {
    return RuntimeError(r.message);
  }
  if (!replace) {
    struct stat lst {};
    if (::lstat(path.c_str(), &lst) == 0) {
      if (collided != nullptr) *collided = true;
      return RuntimeError(fmt::format("'{}' exists already", path));
    }
  }
  if (replace && IsSpecial(path, r)) return WriteThrough(path, content);
  if (r.problem != WalkProblem::kNone) {
    return RuntimeError(fmt::format("cannot write '{}': {}", path, r.message));
  }
  if (r.exists && S_ISDIR(r.st.st_mode)) {
    return RuntimeError(fmt::format("cannot write '{}': it is a directory", path));
  }
  if (auto problem = ForeignFile(r)) return RuntimeError(*problem);
  if (auto problem = WriteProtected(r)) return RuntimeError(*problem);
  const mode_t mode = r.exists ? (r.st.st_mode & 07777) : (0666 & ~CurrentUmask());
  auto temp = CreateTemp(r.dir.get(), "tmp");
  if (!temp.ok()) {
    return SystemError(fmt::format("cannot create a file in '{}' for '{}': {}", r.dir_path, path,
                                   temp.error().message),
                       temp.error().os_errno);
  }
  auto& [fd, tmp_name] = *temp;
  Status st = WriteAll(fd.get(), content, fmt::format("'{}'", path));
  if (st.ok() && ::fsync(fd.get()) != 0) {
    st = SystemError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)), errno);
  }
  if (st.ok() && ::fchmod(fd.get(), mode) != 0) {
    st = SystemError(fmt::format("cannot set the mode of '{}': {}", path, std::strerror(errno)),
                     errno);
  }
  if (st.ok() && r.exists && ::geteuid() == 0) {
    // As root, keep the owner of the file being replaced (best effort).
    (void)::fchown(fd.get(), r.st.st_uid, r.st.st_gid);
  }
  if (::close(fd.Release()) != 0 && st.ok()) {
    st = SystemError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)), errno);
  }
  if (st.ok()) {
    int rc = 0;
    if (replace) {
      rc = ::renameat(r.dir.get(), tmp_name.c_str(), r.dir.get(), r.name.c_str());
    } else {
      rc =
          ::renameat2(r.dir.get(), tmp_name.c_str(), r.dir.get(), r.name.c_str(), RENAME_NOREPLACE);
      if (rc != 0 && errno == EINVAL) {  // a file system without RENAME_NOREPLACE
        rc = ::linkat(r.dir.get(), tmp_name.c_str(), r.dir.get(), r.name.c_str(), 0);
        if (rc == 0) ::unlinkat(r.dir.get(), tmp_name.c_str(), 0);
      }
      if (rc != 0 && errno == EEXIST && collided != nullptr) *collided = true;
    }
    if (rc != 0) {
      st = SystemError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)), errno);
    }
  }
  if (!st.ok()) {
    ::unlinkat(r.dir.get(), tmp_name.c_str(), 0);
    return st;
  }
  // The rename is durable once the directory is on disk too (best effort: some file systems
  // cannot fsync a directory, and the file itself is already complete either way).
  if (const int dfd = ::openat(r.dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return st;
}

}  // namespace

Status WriteFileAtomic(const std::string& path, const std::string& content) {
  return WriteFileImpl(path, content, /*replace=*/true, nullptr);
}

Status WriteNewFile(const std::string& path, const std::string& content, bool* exists) {
  return WriteFileImpl(path, content, /*replace=*/false, exists);
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
  {
    const size_t slash = path.find_last_of('/');
    if (auto problem = NameTooLong(path.substr(slash == std::string::npos ? 0 : slash + 1))) {
      return UsageError(*problem);
    }
  }
  const Resolved r = Resolve(path);
  if (r.problem == WalkProblem::kForeignLink || r.problem == WalkProblem::kLoop) {
    return UsageError(r.message);
  }
  if (const std::optional<int> own = DescriptorOf(LinkChain(path))) {  // written through
    const int flags = ::fcntl(*own, F_GETFL);
    if (flags >= 0 && (flags & O_ACCMODE) != O_RDONLY) return OkStatus();
    return UsageError(fmt::format(
        "'{}' is descriptor {} of this process, which is not open for writing; redirect it "
        "(e.g. {}>FILE) or give a file name",
        path, *own, *own));
  }
  if (r.on_proc) {
    if (::access(path.c_str(), W_OK) != 0) {
      return UsageError(fmt::format("cannot write '{}': {}; give a file you can write", path,
                                    std::strerror(errno)));
    }
    return OkStatus();
  }
  switch (r.problem) {
    case WalkProblem::kMissingDir:
      return UsageError(fmt::format("cannot write '{}': {}", path, r.message));
    case WalkProblem::kNotDir:
      return UsageError(fmt::format(
          "cannot write '{}': {}, so nothing can be created under it; give another path", path,
          r.message));
    case WalkProblem::kOther:
      return UsageError(fmt::format("cannot write '{}': {}; give another path", path, r.message));
    default:
      break;
  }
  if (r.exists) {
    if (S_ISDIR(r.st.st_mode)) {
      return UsageError(
          fmt::format("'{}' is a directory; give a file name such as {}/out.json", path, path));
    }
    if (S_ISSOCK(r.st.st_mode)) {
      return UsageError(fmt::format(
          "'{}' is a socket, which cannot be opened and written as a file; give a file name",
          path));
    }
    if (!S_ISREG(r.st.st_mode)) {
      if (::faccessat(r.dir.get(), r.name.c_str(), W_OK, 0) != 0) {
        return UsageError(fmt::format("cannot write '{}': {}; give a file you can write", path,
                                      std::strerror(errno)));
      }
      return OkStatus();
    }
    if (auto problem = ForeignFile(r)) return UsageError(*problem);
    if (auto problem = WriteProtected(r)) return UsageError(*problem);
  }
  // No kstacklab output is a database: replacing one (the results store, or its -wal/-shm/
  // -journal, given as -o by mistake) would lose every result in it.
  if (auto problem = SqliteFile(r)) return UsageError(*problem);
  if (auto problem = NameTooLong(r.name)) return UsageError(*problem);
  auto probe = CreateTemp(r.dir.get(), "probe");
  if (!probe.ok()) {  // checked before any work: the path given is the problem, so a usage error
    return UsageError(fmt::format("cannot write '{}': {}; give a path in a directory you can write",
                                  path, probe.error().message));
  }
  ::unlinkat(r.dir.get(), probe->second.c_str(), 0);
  return OkStatus();
}

}  // namespace kstacklab
