// Runtime knobs, their locks and the recovery file (include/kstacklab/knobs/knobs.h).
#include "kstacklab/knobs/knobs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/results/naming.h"

namespace kstacklab::knobs {
namespace {

Status MakeParents(const std::string& path) {
  for (size_t i = 1; i < path.size(); ++i) {
    if (path[i] != '/') continue;
    const std::string dir = path.substr(0, i);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return RuntimeError(fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
    }
  }
  return OkStatus();
}

// Writes `value` to a sysctl file the way `sysctl -w` does (one write, then close).
Status WriteValue(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return RuntimeError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  const std::string text = value + "\n";
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return RuntimeError(fmt::format("cannot write '{}' to {}: {}", value, path,
                                    n < 0 ? std::strerror(err) : "short write"));
  }
  return OkStatus();
}

// Why `name` is not a sysctl name (empty, a '/', a "..", a leading '.'), or nothing.
std::optional<std::string> SysctlNameProblem(const std::string& name) {
  if (name.empty()) return "it is empty";
  if (name.find('/') != std::string::npos) return "it holds a '/'";
  if (name.find("..") != std::string::npos || name.front() == '.') {
    return "it starts with '.' or holds '..'";
  }
  if (name.find_first_of("\t\n") != std::string::npos) return "it holds a tab or newline";
  return std::nullopt;
}

// The file of sysctl `name` under SysctlRoot(): kernel.stack_erasing ->
// /proc/sys/kernel/stack_erasing.
std::string SysctlPathOf(const std::string& name) {
  std::string rel = name;
  std::replace(rel.begin(), rel.end(), '.', '/');
  return SysctlRoot() + "/" + rel;
}

// The longest value a recovery line may restore (a sysctl file holds at most a page).
constexpr size_t kMaxSysctlValue = 4096;
// The largest recovery file read: one line per knob a run held, far below this.
constexpr size_t kMaxRecoveryFile = 65536;

class SysctlKnob : public Knob {
 public:
  SysctlKnob(std::string name, std::string path) : name_(std::move(name)), path_(std::move(path)) {}
  std::string name() const override { return name_; }
  std::string path() const override { return path_; }
  Expected<std::string> Read() const override {
    std::ifstream in(path_);
    if (!in) return RuntimeError(fmt::format("cannot read {}: {}", path_, std::strerror(errno)));
    std::stringstream ss;
    ss << in.rdbuf();
    return Trim(ss.str());
  }
  Status Write(const std::string& value) override { return WriteValue(path_, value); }

 private:
  std::string name_;
  std::string path_;
};

// --- model knobs ------------------------------------------------------------------------------

// A model knob switches the variant of the rows of some benchmarks of one suite.
struct ModelKnobDef {
  const char* name;                     // model:NAME
  const char* what;                     // in messages
  const char* suite;                    // the suite holding the rows
  const char* glob;                     // --bench glob of a value's rows, "{}" = the value
  std::vector<std::string> benchmarks;  // the rows' names
  bool Holds(const workloads::WorkloadDef& w) const {
    return std::find(benchmarks.begin(), benchmarks.end(), w.name) != benchmarks.end();
  }
};

const ModelKnobDef* FindModelKnob(std::string_view name) {
  static const std::vector<ModelKnobDef> k = {
      {"policy", "kstack policy", "model", "model/kstack:{}", {"model/kstack"}},
      {"strategy", "poison strategy", "erase", "erase/*:{}", {"erase/poison", "erase/syscall"}},
  };
  for (const ModelKnobDef& d : k) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

class ModelKnob : public Knob {
 public:
  ModelKnob(const ModelKnobDef& def, std::string baseline)
      : def_(def), baseline_(std::move(baseline)) {}
  std::string name() const override { return def_.name; }
  std::string path() const override { return {}; }
  Expected<std::string> Read() const override { return value_; }
  Status Write(const std::string& value) override {
    value_ = value;
    return OkStatus();
  }
  bool changes_machine() const override { return false; }
  bool Takes(const workloads::WorkloadDef& w) const override { return def_.Holds(w); }
  Expected<std::vector<workloads::WorkloadDef>> RowsFor(
      const std::vector<workloads::WorkloadDef>& rows, const std::vector<std::string>& values,
      size_t v) const override {
    std::vector<workloads::WorkloadDef> out;
    for (const workloads::WorkloadDef& w : rows) {
      if (!Takes(w) || w.variant != values[v]) continue;
      out.push_back(w);
      out.back().baseline = values[v] == baseline_;
    }
    if (out.empty()) {
      return UsageError(fmt::format(
          "model:{}={}: no selected benchmark carries {} '{}'; select the {} suite (or the "
          "benchmarks matching '{}')",
          def_.name, fmt::join(values, ","), def_.what, values[v], def_.suite,
          fmt::format(fmt::runtime(def_.glob), values[v])));
    }
    return out;
  }

 private:
  const ModelKnobDef& def_;
  std::string baseline_;
  std::string value_;
};

// Checks the values against the variants of the knob's rows in the workload table, and picks
// the baseline: the first value the table flags as a baseline, else the first value.
Expected<std::unique_ptr<Knob>> OpenModelKnob(const AbSpec& spec) {
  const ModelKnobDef& def = *FindModelKnob(spec.name);
  std::vector<std::string> valid;
  std::set<std::string> flagged;
  for (const workloads::SuiteDef& suite : workloads::Suites()) {
    if (suite.name != def.suite) continue;
    for (const workloads::WorkloadDef& w : suite.rows()) {
      if (!def.Holds(w)) continue;
      if (std::find(valid.begin(), valid.end(), w.variant) == valid.end()) {
        valid.push_back(w.variant);
      }
      if (w.baseline) flagged.insert(w.variant);
    }
  }
  for (const std::string& v : spec.values) {
    if (std::find(valid.begin(), valid.end(), v) == valid.end()) {
      return UsageError(fmt::format("{}: unknown {} '{}' (valid: {})", spec.text, def.what, v,
                                    fmt::join(valid, ", ")));
    }
  }
  std::string baseline = spec.values[0];
  for (const std::string& v : spec.values) {
    if (flagged.count(v) != 0) {
      baseline = v;
      break;
    }
  }
  return std::unique_ptr<Knob>(std::make_unique<ModelKnob>(def, baseline));
}

}  // namespace

Expected<std::vector<workloads::WorkloadDef>> Knob::RowsFor(
    const std::vector<workloads::WorkloadDef>& rows, const std::vector<std::string>& values,
    size_t v) const {
  std::vector<workloads::WorkloadDef> out = rows;
  const std::string tag = fmt::format("{}={}", name(), values[v]);
  for (workloads::WorkloadDef& w : out) {
    w.baseline = v == 0 && (w.baseline || w.variant.empty());
    w.knob = tag;
  }
  return out;
}

Expected<AbSpec> ParseAbSpec(std::string_view text) {
  AbSpec spec;
  spec.text = std::string(text);
  const std::string form = "expected KIND:NAME=V1,V2[,...], e.g. sysctl:kernel.stack_erasing=0,1";
  const size_t colon = text.find(':');
  const size_t eq = text.find('=');
  if (colon == std::string_view::npos || eq == std::string_view::npos || eq < colon) {
    return UsageError(fmt::format("'{}': {}", text, form));
  }
  spec.kind = std::string(text.substr(0, colon));
  spec.name = std::string(text.substr(colon + 1, eq - colon - 1));
  if (spec.kind != "sysctl" && spec.kind != "model") {
    return UsageError(fmt::format(
        "'{}': unknown knob kind '{}' (knobs: sysctl:NAME, model:policy, model:strategy)", text,
        spec.kind));
  }
  if (spec.kind == "model" && FindModelKnob(spec.name) == nullptr) {
    return UsageError(
        fmt::format("'{}': unknown model knob '{}' (model knobs: model:policy, model:strategy)",
                    text, spec.name));
  }
  if (SysctlNameProblem(spec.name)) {
    return UsageError(fmt::format("'{}': '{}' is not a sysctl name (like kernel.stack_erasing)",
                                  text, spec.name));
  }
  std::set<std::string> seen;
  for (const std::string& piece : Split(text.substr(eq + 1), ',', /*keep_empty=*/true)) {
    std::string v = Trim(piece);
    if (v.empty()) return UsageError(fmt::format("'{}': empty value; {}", text, form));
    if (v.find_first_of("\n\t") != std::string::npos) {
      return UsageError(fmt::format("'{}': a value may not hold a newline or tab", text));
    }
    if (!seen.insert(v).second) {
      return UsageError(fmt::format("'{}': value '{}' given twice", text, v));
    }
    spec.values.push_back(v);
  }
  if (spec.values.size() < 2) {
    return UsageError(fmt::format("'{}': an A/B needs at least two values; {}", text, form));
  }
  return spec;
}

std::string SysctlRoot() {
  const char* env = std::getenv(kSysctlRootEnvVar);
  return env != nullptr && *env != '\0' ? std::string(env) : std::string("/proc/sys");
}

std::string RecoveryFilePath() {
  if (const char* env = std::getenv(kRecoveryFileEnvVar); env != nullptr && *env != '\0') {
    return env;
  }
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/kstacklab/knob-recovery";
  }
  return HomeDir() + "/.local/state/kstacklab/knob-recovery";
}

Expected<std::unique_ptr<Knob>> OpenKnob(const AbSpec& spec) {
  if (spec.kind == "model") return OpenModelKnob(spec);
  const std::string path = SysctlPathOf(spec.name);
  if (::access(path.c_str(), F_OK) != 0) {
    if (spec.name == "kernel.stack_erasing") {
      return UsageError(fmt::format(
          "{}: this kernel has no sysctl kernel.stack_erasing ({} does not exist); it needs a "
          "kernel built with CONFIG_KSTACK_ERASE_RUNTIME_DISABLE=y "
          "(CONFIG_STACKLEAK_RUNTIME_DISABLE=y before v6.17)",
          spec.text, path));
    }
    return UsageError(
        fmt::format("{}: no sysctl {} ({} does not exist)", spec.text, spec.name, path));
  }
  if (::access(path.c_str(), W_OK) != 0) {
    return UsageError(fmt::format("{}: sysctl {} is not writable by this user ({}); run as root",
                                  spec.text, spec.name, path));
  }
  if (spec.name == "kernel.stack_erasing") {
    for (const std::string& v : spec.values) {
      if (v != "0" && v != "1") {
        return UsageError(
            fmt::format("{}: kernel.stack_erasing takes 0 or 1, not '{}'", spec.text, v));
      }
    }
  }
  auto knob = std::make_unique<SysctlKnob>(spec.name, path);
  auto current = knob->Read();
  if (!current.ok()) return current.error();
  return std::unique_ptr<Knob>(std::move(knob));
}

Expected<std::vector<RecoveryEntry>> ParseRecoveryFile(std::string_view text) {
  std::vector<RecoveryEntry> entries;
  int number = 0;
  for (const std::string& line : Split(text, '\n', /*keep_empty=*/true)) {
    ++number;
    if (line.empty()) continue;
    // sysctl <TAB> name <TAB> path <TAB> value (the value may itself hold tabs)
    std::vector<std::string> f;
    size_t start = 0;
    for (int i = 0; i < 3; ++i) {
      const size_t tab = line.find('\t', start);
      if (tab == std::string::npos) break;
      f.push_back(line.substr(start, tab - start));
      start = tab + 1;
    }
    std::optional<std::string> problem;
    if (f.size() != 3 || f[0] != "sysctl") {
      problem = "not of the form sysctl<TAB>NAME<TAB>PATH<TAB>VALUE";
    } else if (auto p = SysctlNameProblem(f[1])) {
      problem = fmt::format("'{}' is not a sysctl name: {}", f[1], *p);
    } else if (f[2] != SysctlPathOf(f[1])) {
      problem = fmt::format("the path '{}' is not the file of sysctl {} ({})", f[2], f[1],
                            SysctlPathOf(f[1]));
    } else if (line.size() - start > kMaxSysctlValue) {
      problem = fmt::format("the value is longer than {} bytes", kMaxSysctlValue);
    } else if (std::any_of(line.begin() + static_cast<std::ptrdiff_t>(start), line.end(),
                           [](char c) {
                             // unsigned: char is signed on x86-64, unsigned on aarch64
                             const auto u = static_cast<unsigned char>(c);
                             return (u < 0x20 && c != '\t') || u == 0x7f;
                           })) {
      problem = "the value holds a control character (a sysctl value is text, tabs allowed)";
    }
    if (problem) return UsageError(fmt::format("line {}: {}", number, EscapeControl(*problem)));
    entries.push_back({f[1], f[2], line.substr(start)});
  }
  return entries;
}

// The lock that marks the recovery file as a live run's: held (flock) from ScopedKnob::Begin()
// to Restore(), and released by the kernel however the run ends, SIGKILL included. It sits next
// to the recovery file and is never removed (removing it would let two runs lock two files).
namespace {
std::string RecoveryLockPath() { return RecoveryFilePath() + ".lock"; }

class RecoveryLock {
 public:
  RecoveryLock() = default;
  ~RecoveryLock() { Release(); }
  RecoveryLock(const RecoveryLock&) = delete;
  RecoveryLock& operator=(const RecoveryLock&) = delete;
  // Takes the lock without waiting: true when taken, false when a live run holds it.
  Expected<bool> TryTake() {
    // A recovery file that is not a regular file (/dev/null) is refused before its lock is
    // made next to it (/dev/null.lock).
    struct stat file {};
    if (::lstat(RecoveryFilePath().c_str(), &file) == 0 && !S_ISREG(file.st_mode)) {
      return UsageError(
          fmt::format("refusing the recovery file {}: {}; nothing was written: point {} (or "
                      "XDG_STATE_HOME) at a regular file of your own",
                      RecoveryFilePath(),
                      S_ISLNK(file.st_mode) ? "it is a symbolic link" : "it is not a regular file",
                      kRecoveryFileEnvVar));
    }
    const std::string path = RecoveryLockPath();
    if (Status st = MakeParents(path); !st.ok()) return st.error();
    fd_ = ::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd_ < 0) {
      return RuntimeError(
          fmt::format("cannot open the recovery lock {}: {}", path, std::strerror(errno)));
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return true;
    const int err = errno;
    Release();
    if (err == EWOULDBLOCK) return false;
    return RuntimeError(fmt::format("cannot lock {}: {}", path, std::strerror(err)));
  }
  void Release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int Detach() { return std::exchange(fd_, -1); }  // the caller closes it to release the lock

 private:
  int fd_ = -1;
};

}  // namespace

std::string RecoveryInUseMessage() {
  return fmt::format(
      "the recovery file {} belongs to a kstacklab run that is still running with a knob "
      "changed (it holds {}); that run restores the knob when it ends",
      RecoveryFilePath(), RecoveryLockPath());
}

namespace {

// The machine-wide lock of one sysctl: whoever holds it is the one run changing that knob, so a
// second A/B of it (with another recovery file, XDG_STATE_HOME or user) cannot save the first
// run's value as the original. flock on LockDir()/sysctl-NAME.lock, released by the kernel
// however the holder ends; the file holds the holder's pid, for the message.
std::string LockDir() {
  if (const char* env = std::getenv(kLockDirEnvVar); env != nullptr && *env != '\0') return env;
  return "/run/kstacklab";
}

std::string SysctlLockPath(const std::string& name, const std::string& path) {
  // Under a test's KSTACKLAB_SYSCTL_ROOT the file is not the machine's sysctl: its own lock.
  std::string file = "sysctl-" + name;
  if (SysctlRoot() != "/proc/sys") {
    file += fmt::format("-{:016x}", std::hash<std::string>{}(path));
  }
  return LockDir() + "/" + file + ".lock";
}

// Takes the lock of sysctl `name` (file `path`) without waiting: the descriptor, or a
// UsageError naming the run that holds it.
Expected<int> TakeSysctlLock(const std::string& name, const std::string& path) {
  const std::string dir = LockDir();
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return RuntimeError(
        fmt::format("cannot create the lock directory {}: {}; run as root, or set "
                    "{} to a directory of locks shared by every run",
                    dir, std::strerror(errno), kLockDirEnvVar));
  }
  const std::string lock = SysctlLockPath(name, path);
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    return RuntimeError(fmt::format("cannot open the lock {}: {}", lock, std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char pid[32] = {};
    const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) {
      return RuntimeError(fmt::format("cannot lock {}: {}", lock, std::strerror(err)));
    }
    std::string holder = n > 0 ? Trim(std::string(pid, static_cast<size_t>(n))) : std::string();
    if (holder.find_first_not_of("0123456789") != std::string::npos) holder.clear();
    return UsageError(fmt::format(
        "sysctl {} is being changed by another kstacklab run{} (it holds {}); wait for it to "
        "finish: a second A/B of the same sysctl would measure, and save as original, the "
        "other run's value",
        name, holder.empty() ? "" : " (pid " + holder + ")", lock));
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, me.data(), me.size(), 0);
  return fd;
}

}  // namespace

bool RecoveryInUse() {
  struct stat st {};
  if (::lstat(RecoveryFilePath().c_str(), &st) != 0) return false;
  RecoveryLock lock;
  auto taken = lock.TryTake();
  return taken.ok() && !*taken;
}

Expected<std::vector<std::string>> RecoverPending() {
  const std::string file = RecoveryFilePath();
  struct stat exists {};
  if (::lstat(file.c_str(), &exists) != 0 && errno == ENOENT) return std::vector<std::string>{};
  // A live run's file is its own: restoring from it would undo that run's knob mid-measurement
  // and delete the record it needs if it is killed.
  RecoveryLock lock;
  auto taken = lock.TryTake();
  if (!taken.ok()) return taken.error();
  if (!*taken) return RuntimeError(RecoveryInUseMessage() + "; nothing was written");
  // The file says what to write where, and `run` applies it as whoever runs it (often root): it
  // is trusted only if it is this user's own regular file that nobody else can write, and only
  // for lines that restore a sysctl under SysctlRoot(). Every line is checked before any write.
  const std::string keep =
      "; nothing was written: check the file, restore any value by hand, and delete it";
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::vector<std::string>{};
    return UsageError(fmt::format("cannot read the recovery file {}: {}{}", file,
                                  errno == ELOOP ? "it is a symbolic link" : std::strerror(errno),
                                  keep));
  }
  struct stat st {};
  std::optional<std::string> untrusted;
  if (::fstat(fd, &st) != 0) {
    untrusted = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    untrusted = "it is not a regular file";
  } else if (st.st_uid != ::geteuid()) {
    untrusted =
        fmt::format("it belongs to uid {}, not to this user (uid {})", st.st_uid, ::geteuid());
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    untrusted = fmt::format("group or others may write it (mode {:04o})", st.st_mode & 07777);
  }
  Expected<std::string> text = untrusted ? Expected<std::string>(UsageError(*untrusted))
                                         : ReadAll(fd, kMaxRecoveryFile, "the recovery file");
  ::close(fd);
  if (!text.ok()) {
    return UsageError(
        fmt::format("refusing the recovery file {}: {}{}", file, text.error().message, keep));
  }
  auto entries = ParseRecoveryFile(*text);
  if (!entries.ok()) {
    return UsageError(
        fmt::format("refusing the recovery file {}: {}{}", file, entries.error().message, keep));
  }
  for (const RecoveryEntry& e : *entries) {  // every line checked before any write
    struct stat target {};
    if (::stat(e.path.c_str(), &target) != 0 || !S_ISREG(target.st_mode)) {
      return UsageError(fmt::format("refusing the recovery file {}: {} is not a sysctl file{}",
                                    file, e.path, keep));
    }
  }
  std::vector<std::string> restored;
  std::optional<std::string> failure;
  for (const RecoveryEntry& e : *entries) {
    if (Status st = WriteValue(e.path, e.value); !st.ok()) {
      failure = st.error().message;
      continue;
    }
    restored.push_back(fmt::format("{} restored to {} ({})", e.name, e.value, e.path));
  }
  if (failure) {
    return RuntimeError(fmt::format(
        "recovering from {}: {}; the file is kept: fix the cause and run `kstacklab recover`, or "
        "restore the value by hand and delete the file",
        file, *failure));
  }
  ::unlink(file.c_str());
  return restored;
}

ScopedKnob::~ScopedKnob() { (void)Restore(); }

Status ScopedKnob::Begin() {
  KSTACKLAB_CHECK(!active_ && knob_.changes_machine());
  // The sysctl's own lock first: held until Restore(), by one run on the whole machine.
  auto sysctl_lock = TakeSysctlLock(knob_.name(), knob_.path());
  if (!sysctl_lock.ok()) return sysctl_lock.error();
  struct CloseUnlessKept {
    int fd;
    bool keep = false;
    ~CloseUnlessKept() {
      if (!keep) ::close(fd);
    }
  } knob_lock{*sysctl_lock};
  // Held until Restore(): another run must neither recover from our file nor change a knob too
  // (it would save our changed value as its original).
  RecoveryLock lock;
  auto taken = lock.TryTake();
  if (!taken.ok()) return taken.error();
  if (!*taken) {
    return UsageError(RecoveryInUseMessage() +
                      "; wait for it to finish: two runs changing knobs at once would each "
                      "measure, and save as original, the other's value");
  }
  auto current = knob_.Read();
  if (!current.ok()) return current.error();
  original_ = *current;
  const std::string file = RecoveryFilePath();
  KSTACKLAB_RETURN_IF_ERROR(MakeParents(file));
  // Appended, and synced before the first change: a kill at any later point leaves it behind.
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return RuntimeError(
        fmt::format("cannot write the recovery file {}: {}", file, std::strerror(errno)));
  }
  const std::string line =
      fmt::format("sysctl\t{}\t{}\t{}\n", knob_.name(), knob_.path(), original_);
  struct stat before {};
  const bool was_empty = ::fstat(fd, &before) == 0 && before.st_size == 0;
  const ssize_t n = ::write(fd, line.data(), line.size());
  const bool ok = n == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) {
    if (was_empty) ::unlink(file.c_str());  // ours, and holding nothing: leave no empty file
    return RuntimeError(fmt::format(
        "cannot write the recovery file {}: {}; nothing was changed: free space there, or point "
        "KSTACKLAB_RECOVERY_FILE (or XDG_STATE_HOME) at a writable place",
        file,
        n >= 0 && n < static_cast<ssize_t>(line.size()) ? "short write" : std::strerror(err)));
  }
  lock_fd_ = lock.Detach();
  knob_lock.keep = true;
  sysctl_lock_fd_ = knob_lock.fd;
  active_ = true;
  return OkStatus();
}

Status ScopedKnob::Set(const std::string& value) {
  KSTACKLAB_CHECK(active_);
  KSTACKLAB_RETURN_IF_ERROR(knob_.Write(value));
  auto now = knob_.Read();
  if (!now.ok()) return now.error();
  if (*now != value) {
    return RuntimeError(fmt::format("{} reads '{}' after writing '{}'", knob_.name(), *now, value));
  }
  return OkStatus();
}

Status ScopedKnob::Restore() {
  if (!active_) return OkStatus();
  Status st = knob_.Write(original_);
  active_ = false;
  // Released after the recovery file is removed (below), or kept for `recover` when the write
  // failed: either way another run may take it from here on.
  struct CloseLock {
    int& fd;
    ~CloseLock() {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  } close_lock{lock_fd_}, close_sysctl_lock{sysctl_lock_fd_};
  if (!st.ok()) {
    return RuntimeError(
        fmt::format("{}; the original value {} is kept in {} for `kstacklab "
                    "recover`",
                    st.error().message, original_, RecoveryFilePath()));
  }
  ::unlink(RecoveryFilePath().c_str());
  return OkStatus();
}

}  // namespace kstacklab::knobs
