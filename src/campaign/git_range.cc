#include "kstacklab/campaign/git_range.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "kstacklab/campaign/plan.h"
#include "kstacklab/campaign/process.h"
#include "kstacklab/common/text.h"

namespace kstacklab::campaign {
namespace {

namespace fs = std::filesystem;

// git's own answers are short; a rev-list of kMaxCommits full ids is 820 KB.
constexpr double kGitTimeoutS = 600;

// `git -C TREE ARGS...`, its output kept. RuntimeError when git cannot be run.
Expected<ProcessResult> GitIn(const std::string& tree, std::vector<std::string> args,
                              const std::atomic<bool>* stop = nullptr) {
  std::vector<std::string> argv = {"git", "-C", tree};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunProcess(argv, kGitTimeoutS, "", stop);
  if (!r.ok() && !FindProgram("git")) {
    return UsageError("git is not installed: apt-get install git (the plan's kernels are a range)");
  }
  return r;
}

std::string GitFirstLine(const std::string& text) {
  const size_t nl = text.find('\n');
  return Trim(nl == std::string::npos ? text : text.substr(0, nl));
}

// The full id of `rev` as a commit, or a UsageError naming the key.
Expected<std::string> CommitOf(const GitRange& r, const std::string& key, const std::string& rev) {
  ProcessResult p;
  KSTACKLAB_ASSIGN_OR_RETURN(p, GitIn(r.tree, {"rev-parse", "--verify", "--quiet",
                                               "--end-of-options", rev + "^{commit}"}));
  const std::string id = GitFirstLine(p.out);
  if (p.exit_code != 0 || id.size() < 40) {
    return UsageError(fmt::format(
        "kernels {} '{}' is not a commit of '{}'; give a commit id, tag or branch of that tree",
        key, EscapeControl(rev), EscapeControl(r.tree)));
  }
  return id;
}

// The ends checked against each other: different, good an ancestor of bad.
Status CheckRangeEnds(const GitRange& r, const std::string& good, const std::string& bad) {
  if (good == bad) {
    return UsageError(fmt::format(
        "kernels good '{}' and bad '{}' are the same commit ({}); give the last known good "
        "commit and a later bad one",
        EscapeControl(r.good), EscapeControl(r.bad), GitKernelName(good)));
  }
  ProcessResult p;
  KSTACKLAB_ASSIGN_OR_RETURN(p, GitIn(r.tree, {"merge-base", "--is-ancestor", good, bad}));
  if (p.exit_code == 1) {
    return UsageError(fmt::format(
        "kernels good '{}' is not an ancestor of bad '{}'; give a good commit that bad descends "
        "from (an older one on bad's line)",
        EscapeControl(r.good), EscapeControl(r.bad)));
  }
  if (p.exit_code != 0) {
    return RuntimeError(fmt::format("git merge-base in '{}' failed: {}", EscapeControl(r.tree),
                                    EscapeControl(GitFirstLine(p.err))));
  }
  return OkStatus();
}

// The range's commits after good: bad's first-parent line down to good, oldest first.
Expected<std::vector<std::string>> FirstParentLine(const GitRange& r, const std::string& good,
                                                   const std::string& bad) {
  ProcessResult p;
  KSTACKLAB_ASSIGN_OR_RETURN(p, GitIn(r.tree, {"rev-list", "--first-parent", "--ancestry-path",
                                               "--reverse", good + ".." + bad}));
  if (p.exit_code != 0) {
    return RuntimeError(fmt::format("git rev-list in '{}' failed: {}", EscapeControl(r.tree),
                                    EscapeControl(GitFirstLine(p.err))));
  }
  std::vector<std::string> line = Split(p.out, '\n');
  // Good reached only through a merge's second parent is not on the line: the first commit's
  // first parent is then not good.
  ProcessResult parent;
  if (!line.empty()) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        parent, GitIn(r.tree, {"rev-parse", "--verify", "--quiet", line.front() + "^1"}));
  }
  if (line.empty() || line.back() != bad || GitFirstLine(parent.out) != good) {
    return UsageError(fmt::format(
        "kernels good '{}' is not on the first-parent line of bad '{}' (it came in by a merge); "
        "give as good a commit of that line, e.g. the merge's first parent",
        EscapeControl(r.good), EscapeControl(r.bad)));
  }
  return line;
}

void RemoveWorktree(const std::string& tree, const std::string& worktree) {
  (void)GitIn(tree, {"worktree", "remove", "--force", worktree});
  std::error_code ec;
  fs::remove_all(worktree, ec);
  (void)GitIn(tree, {"worktree", "prune"});
}

// Copies `from` to `to` through a temporary file beside it and a rename.
Status CopyImageAtomically(const std::string& from, const std::string& to) {
  const std::string tmp = to + ".tmp";
  std::error_code ec;
  fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(tmp, to, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return RuntimeError(fmt::format("cannot copy '{}' to '{}': {}", EscapeControl(from),
                                    EscapeControl(to), ec.message()));
  }
  return OkStatus();
}

// The build's outcome in words, "" when it made its image.
std::string GitBuildFailure(const GitRange& r, const ProcessResult& p, const std::string& made) {
  if (p.timed_out) {
    return fmt::format("the build exceeded its deadline of {:.0f} s and was killed",
                       r.build_timeout_s);
  }
  if (p.exit_code != 0) return fmt::format("the build exited with status {}", p.exit_code);
  struct stat st {};
  if (stat(made.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return fmt::format("the build made no image {}", EscapeControl(r.image));
  }
  return std::string();
}

}  // namespace

Status CheckGitRangeValues(const GitRange& r) {
  for (const auto& [key, value] : {std::pair<const char*, const std::string&>{"tree", r.tree},
                                   {"good", r.good},
                                   {"bad", r.bad}}) {
    if (value.empty() || value.size() > CampaignLimits::kMaxTextBytes || TextProblem(value) ||
        value[0] == '-') {
      return UsageError(fmt::format("kernels {} '{}' is not a {}; give one", key,
                                    EscapeControl(value),
                                    std::string(key) == "tree" ? "path" : "commit"));
    }
  }
  if (r.command.empty() || r.command[0].empty()) {
    return UsageError(
        "kernels command is empty; give the build command as a list, e.g. [make, -j8, bzImage]");
  }
  const fs::path image(r.image);
  bool up = false;
  for (const fs::path& part : image) up |= part == "..";
  // "." as the last part ("." or "out/.") names a directory, as a trailing "/" does.
  if (r.image.empty() || image.is_absolute() || up || !image.has_filename() ||
      image.filename() == ".") {
    return UsageError(fmt::format(
        "kernels image '{}' must be a file's path inside the worktree: relative, without .., "
        "e.g. arch/x86/boot/bzImage",
        EscapeControl(r.image)));
  }
  if (!(r.build_timeout_s >= GitRangeLimits::kMinBuildTimeoutS &&
        r.build_timeout_s <= GitRangeLimits::kMaxBuildTimeoutS)) {
    return UsageError(
        fmt::format("kernels build_timeout {:g} s is out of range; give 1 s to 7 d, "
                    "e.g. 2h",
                    r.build_timeout_s));
  }
  if (r.commits.size() > GitRangeLimits::kMaxCommits) {
    return UsageError(fmt::format("the range holds more than {} commits; give a shorter one",
                                  GitRangeLimits::kMaxCommits));
  }
  return OkStatus();
}

Status ResolveGitRange(GitRange& r) {
  KSTACKLAB_RETURN_IF_ERROR(CheckGitRangeValues(r));
  ProcessResult p;
  KSTACKLAB_ASSIGN_OR_RETURN(p, GitIn(r.tree, {"rev-parse", "--git-dir"}));
  if (p.exit_code != 0) {
    return UsageError(fmt::format(
        "kernels tree '{}' is not a git repository; give the path of your kernel checkout",
        EscapeControl(r.tree)));
  }
  std::string good;
  std::string bad;
  KSTACKLAB_ASSIGN_OR_RETURN(good, CommitOf(r, "good", r.good));
  KSTACKLAB_ASSIGN_OR_RETURN(bad, CommitOf(r, "bad", r.bad));
  KSTACKLAB_RETURN_IF_ERROR(CheckRangeEnds(r, good, bad));
  std::vector<std::string> line;
  KSTACKLAB_ASSIGN_OR_RETURN(line, FirstParentLine(r, good, bad));
  r.commits = {good};
  r.commits.insert(r.commits.end(), line.begin(), line.end());
  if (r.commits.size() < 2) {
    return UsageError("the range holds fewer than two commits; give a good end older than bad");
  }
  return CheckGitRangeValues(r);
}

std::string GitKernelName(const std::string& commit) { return commit.substr(0, 12); }

std::string GitImagePath(const std::string& dir, const GitRange& r, const std::string& commit) {
  return fmt::format("{}/images/{}/{}", dir, commit, fs::path(r.image).filename().string());
}

std::string GitBuildLogPath(const std::string& dir, const std::string& commit) {
  return fmt::format("{}/images/{}/build.log", dir, commit);
}

Expected<GitBuild> BuildGitKernel(const std::string& given_dir, const GitRange& r,
                                  const std::string& commit, const std::atomic<bool>& stop,
                                  const std::function<void(const KernelBuilding&)>& note) {
  // Absolute: git takes a relative worktree path from the tree, not from here.
  std::error_code absolute_ec;
  const std::string dir = fs::absolute(given_dir, absolute_ec).lexically_normal().string();
  GitBuild b;
  const std::string cached = GitImagePath(dir, r, commit);
  struct stat st {};
  if (stat(cached.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    b.cached = true;
    return b;
  }
  const std::string worktree = fmt::format("{}/worktrees/{}", dir, commit);
  const std::string log = GitBuildLogPath(dir, commit);
  for (const fs::path& d : {fs::path(log).parent_path(), fs::path(worktree).parent_path()}) {
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec) {
      return RuntimeError(
          fmt::format("cannot create '{}': {}", EscapeControl(d.string()), ec.message()));
    }
  }
  if (std::remove(log.c_str()) != 0 && errno != ENOENT) {
    return RuntimeError(
        fmt::format("cannot replace '{}': {}", EscapeControl(log), std::strerror(errno)));
  }
  RemoveWorktree(r.tree, worktree);  // an interrupted build's
  ProcessResult add;
  KSTACKLAB_ASSIGN_OR_RETURN(
      add, GitIn(r.tree, {"worktree", "add", "--detach", worktree, commit}, &stop));
  if (add.interrupted) {
    b.interrupted = true;
    return b;
  }
  if (add.exit_code != 0) {
    return RuntimeError(fmt::format("git cannot make a worktree of {} in '{}': {}",
                                    GitKernelName(commit), EscapeControl(worktree),
                                    EscapeControl(GitFirstLine(add.err))));
  }
  if (note) note(KernelBuilding{GitKernelName(commit), log});
  ProcessResult p;
  KSTACKLAB_ASSIGN_OR_RETURN(p,
                             RunProcessLogged(r.command, worktree, log, r.build_timeout_s, &stop));
  if (p.interrupted) {
    b.interrupted = true;
    return b;
  }
  const std::string made = worktree + "/" + r.image;
  b.failure = GitBuildFailure(r, p, made);
  if (b.failure.empty()) KSTACKLAB_RETURN_IF_ERROR(CopyImageAtomically(made, cached));
  RemoveWorktree(r.tree, worktree);
  return b;
}

Json GitRangeToJson(const GitRange& r) {
  return Json{{"tree", r.tree},      {"good", r.good},
              {"bad", r.bad},        {"command", r.command},
              {"image", r.image},    {"cmdline", r.cmdline},
              {"initrd", r.initrd},  {"build_timeout_s", r.build_timeout_s},
              {"commits", r.commits}};
}

Expected<GitRange> GitRangeFromJson(const Json& j) {
  KnownJsonKeys(j,
                {"tree", "good", "bad", "command", "image", "cmdline", "initrd", "build_timeout_s",
                 "commits"},
                "the range");
  GitRange r;
  r.tree = j.at("tree").get<std::string>();
  r.good = j.at("good").get<std::string>();
  r.bad = j.at("bad").get<std::string>();
  r.command = j.at("command").get<std::vector<std::string>>();
  r.image = j.at("image").get<std::string>();
  r.cmdline = j.at("cmdline").get<std::string>();
  r.initrd = j.at("initrd").get<std::string>();
  r.build_timeout_s = j.at("build_timeout_s").get<double>();
  r.commits = j.at("commits").get<std::vector<std::string>>();
  KSTACKLAB_RETURN_IF_ERROR(CheckGitRangeValues(r));
  for (const std::string& c : r.commits) {
    // SHA-1 or SHA-256 object names.
    if ((c.size() != 40 && c.size() != 64) ||
        c.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return UsageError(fmt::format("the range's commit '{}' is not a full commit id",
                                    EscapeControl(c.substr(0, 64))));
    }
  }
  if (r.commits.size() < 2) return UsageError("the range holds fewer than two commits");
  return r;
}

}  // namespace kstacklab::campaign
