// The git-range form of a bisect plan (docs/bisect.md): instead of a list of built kernels, a
// range of commits of the user's tree and the command that builds one. The kernels are the
// commits of bad's first-parent line from good to bad, oldest first, each named by its 12-hex
// abbreviated id; each is built only when the bisect first needs it, in a git worktree of its own
// under the bisect's directory (the user's checkout is never touched: no checkout, no reset), and
// its image kept in a cache by commit:
//
//   DIR/worktrees/COMMIT/          the build's worktree (git worktree add --detach), removed after
//                                  the build, whatever its outcome
//   DIR/images/COMMIT/IMAGE-NAME   the image, copied atomically; a resume rebuilds nothing here
//   DIR/images/COMMIT/build.log    the build's stdout and stderr
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "kstacklab/campaign/bisect_events.h"
#include "kstacklab/common/error.h"
#include "kstacklab/results/json.h"

namespace kstacklab::campaign {

struct GitRangeLimits {
  static constexpr size_t kMaxCommits = 20000;  // a release cycle of the kernel is ~14,000
  static constexpr double kMinBuildTimeoutS = 1;
  static constexpr double kMaxBuildTimeoutS = 7 * 86400.0;
  static constexpr double kDefaultBuildTimeoutS = 2 * 3600.0;
};

// The plan's `kernels:` section, and the commits it names once resolved.
struct GitRange {
  std::string tree;  // the user's checkout (absolute); read by git, never modified
  std::string good;  // commit-ishes as written; good must be an ancestor of bad
  std::string bad;
  std::vector<std::string> command;  // argv run in the worktree; no shell unless it names one
  std::string image;                 // the image the command makes, relative to the worktree
  std::string cmdline{};             // every kernel's, as a profile's
  std::string initrd{};              // every kernel's (absolute), as a profile's
  double build_timeout_s = GitRangeLimits::kDefaultBuildTimeoutS;
  // Filled by ResolveGitRange: full ids, oldest first; [0] is good, back() is bad.
  std::vector<std::string> commits{};
};

// The values alone, no git and no file: a tree, good and bad, a command, an image path inside
// the worktree (relative, no ..), a build deadline in range. UsageError naming the key and the
// fix (`kernels KEY`).
Status CheckGitRangeValues(const GitRange& r);

// Runs git in the tree (read-only): a repository, good and bad commits, different, good an
// ancestor of bad and on its first-parent line; fills `commits` (good, then `git rev-list
// --first-parent --ancestry-path --reverse good..bad`). UsageError in one line naming the fix;
// RuntimeError when git cannot be run.
Status ResolveGitRange(GitRange& r);

// A kernel's name: the commit's 12-hex abbreviated id (what `git bisect replay` takes).
std::string GitKernelName(const std::string& commit);
// Where the image of `commit` is cached, and its build's log, under the bisect directory `dir`.
std::string GitImagePath(const std::string& dir, const GitRange& r, const std::string& commit);
std::string GitBuildLogPath(const std::string& dir, const std::string& commit);

// How a kernel's image came to be (or not).
struct GitBuild {
  bool cached = false;       // found in the image cache: nothing was run
  bool interrupted = false;  // `stop` was raised during the build; nothing cached
  std::string failure;       // why there is no image (a failed build): "" when there is one
};

// The image of `commit` in the cache of `dir`, built when it is not there: a detached worktree
// DIR/worktrees/COMMIT of the tree, the command run in it under the build deadline (its process
// group killed past it) with its output in the build log, the image copied into the cache
// atomically, the worktree removed. `note` (may be empty) is told when a build starts. A build
// that exits non-zero, passes its deadline or makes no image is a GitBuild with a failure;
// RuntimeError when git cannot make the worktree or a file cannot be written.
Expected<GitBuild> BuildGitKernel(const std::string& dir, const GitRange& r,
                                  const std::string& commit, const std::atomic<bool>& stop,
                                  const std::function<void(const KernelBuilding&)>& note);

// bisect.json's "range" object (the commits included); the reader throws Json::exception on a
// wrong form and checks the values (UsageError).
Json GitRangeToJson(const GitRange& r);
Expected<GitRange> GitRangeFromJson(const Json& j);

}  // namespace kstacklab::campaign
