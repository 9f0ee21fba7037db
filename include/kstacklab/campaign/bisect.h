// A performance bisect over an ordered list of kernels (docs/bisect.md): the ends are measured
// until their difference is established, then each step boots a candidate together with both
// ends in randomised blocks (a campaign of three profiles) until the rule of
// kstacklab/stats/bisect_rule.h calls it good or bad, or leaves it undecided (a skip).
//
// Directory layout (DIR): bisect.json (this state, written atomically after every step and every
// change of the ends), bisect.log (the steps as a `git bisect log`, for `git bisect replay`),
// ends/ (the ends' campaign), step-N-NAME/ (step N's campaign, candidate NAME). Each campaign
// directory is a campaign's own (runner.h): state after every boot, resumed without redoing one.
// A plan whose kernels are a git range (git_range.h) adds images/ and worktrees/: each kernel is
// built when the bisect first needs it, and a kernel whose build fails is a skip.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kstacklab/campaign/bisect_events.h"
#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/git_range.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/campaign/runner.h"
#include "kstacklab/campaign/state.h"
#include "kstacklab/common/error.h"
#include "kstacklab/results/json.h"
#include "kstacklab/stats/bisect_rule.h"

namespace kstacklab::campaign {

inline constexpr const char* kBisectSchema = "kstacklab-bisect/1";
inline constexpr const char* kBisectStateFile = "bisect.json";
inline constexpr const char* kBisectLogFile = "bisect.log";

// What a boot contributes to a step: one number.
struct BisectQuestion {
  // A row of the run ("syscall/getppid [raw]", as `show` and `compare` name rows) and a metric:
  // the boot's value is the mean over the row's repetitions of that metric.
  std::string row;
  std::string metric = "mean";
  // Or a fact of the boot's `entropy --kernel` (the campaign's strength): "distinct",
  // "shannon_bits" or "min_entropy_bits". "" for a row.
  std::string strength;

  bool IsStrength() const { return !strength.empty(); }
  std::string Describe() const;  // "syscall/getppid [raw] mean", "strength distinct"
};

// The facts a strength question may name (CapStrength's numbers).
const std::vector<std::string>& BisectStrengthFacts();

// A question whose words are valid (a known metric or fact, a row of one line, not both a row and
// a fact): UsageError worded with the values otherwise (the CLI adds its flags). The run's rows
// are checked by the caller.
Status CheckBisectQuestion(const BisectQuestion& q);
Status CheckBisectFact(const std::string& fact);      // one of BisectStrengthFacts()
Status CheckBisectMetric(const std::string& metric);  // one of MetricNames()
Status CheckBisectRow(const std::string& row);        // not empty, one line, within the limits

// One step: a candidate booted with both ends.
struct BisectStep {
  size_t kernel = 0;    // index into the plan's profiles
  std::string dir;      // relative to DIR: "step-1-NAME"
  std::string verdict;  // "good", "bad", "undecided"; "" while it runs
  stats::ThetaInterval interval;
  uint64_t boots = 0;  // boots made (accepted and failed)
  double seconds = 0;  // wall time of its boots
  // The git-range form: why the candidate has no image (its build failed); the step is then
  // undecided without a boot. "" otherwise.
  std::string build_failure{};
};

struct BisectEnds {
  std::string verdict;  // "established", "no-regression"; "" while they are measured
  stats::EndsJudgement judgement;
  double good_mean = 0;  // the ends' means over the blocks judged
  double bad_mean = 0;
  uint64_t boots = 0;
  double seconds = 0;
};

struct BisectState {
  std::string schema = kBisectSchema;
  std::string tool_version;
  std::string created;
  std::string updated;
  std::string source;  // the plan file
  // The kernels, oldest first, as the plan's profiles: [0] is the good end, back() the bad end.
  // Its boots and target are unused: each campaign's count is the rule's.
  // The git-range form: one per commit of `range` (GitRangeKernels), each image built when first
  // needed; bisect.json keeps the range and only the ends' profiles.
  CampaignPlan plan;
  std::optional<GitRange> range;
  BisectQuestion question;
  stats::BisectRule rule;
  BisectEnds ends;
  std::vector<BisectStep> steps;
  CampaignStatus status = CampaignStatus::kRunning;
  std::string result;  // the outcome in words, when complete

  // The search as the recorded verdicts leave it.
  stats::BisectSearch Search() const;
};

Json BisectStateToJson(const BisectState& s);
// A damaged or foreign file -> UsageError naming `path`.
Expected<BisectState> BisectStateFromJson(const Json& j, const std::string& path);
Status SaveBisectState(const std::string& dir, BisectState& s);
Expected<BisectState> LoadBisectState(const std::string& dir);

// The checks of a new bisect before boot 1 (the plan itself is CheckPlan's): at least two
// kernels (two: the ends alone, measured for `kstacklab bisect step`), the rule's numbers in range,
// a plan without boots or target (the rule decides).
Status CheckBisectPlan(const CampaignPlan& plan, const stats::BisectRule& rule);

// The kernels of a resolved git range as profiles of the bisect in `dir`: named by their commits'
// abbreviated ids, each image at its place in the cache (GitImagePath; there once built), the
// range's cmdline and initrd.
std::vector<Profile> GitRangeKernels(const std::string& dir, const GitRange& range);

// A new bisect in `dir` (CheckNewCampaignDir): creates it and bisect.json. With a (resolved) git
// range, the plan's profiles are the range's kernels (GitRangeKernels) whatever it holds.
Expected<BisectState> CreateBisect(const std::string& dir, const CampaignPlan& plan,
                                   const BisectQuestion& question, const stats::BisectRule& rule,
                                   const std::string& source,
                                   const std::optional<GitRange>& range = std::nullopt);

// The value of one accepted boot of campaign `dir`: UsageError when its file lacks the row or
// metric (or its strength the fact).
Expected<double> BisectBootValue(const std::string& dir, const Boot& boot, const BisectQuestion& q);

// Makes the engine of one campaign (its plan, its scratch directory).
using EngineFactory =
    std::function<std::unique_ptr<Engine>(const CampaignPlan& plan, const std::string& work_dir)>;

// The git-range form: checks a kernel's image once it exists (built, or found in the cache) and
// fills what CheckPlan fills for a listed kernel (release, arch, identity) in `kernel`; `plan` is
// the bisect's. A failure counts as a failed build (a skip; fatal for an end).
using ImageCheck = std::function<Status(const CampaignPlan& plan, Profile& kernel)>;

struct BisectHooks {
  // The campaigns' progress and notes (its stop_text is required, as RunCampaign requires it).
  RunnerHooks runner;
  // The bisect's own notes (bisect_events.h: a build starting, the ends, each step, the
  // outcome), for stderr; may be empty.
  std::function<void(const BisectNote&)> note;
  // Required: the words of the outcome, kept as bisect.json's `result`
  // (report::BisectOutcomeText, report/bisect_progress.h). A hook because the state keeps the
  // words and campaign/ may not depend on report/ (the module graph).
  std::function<std::string(const BisectOutcome&)> outcome_text;
};

// Runs (or resumes) the bisect until it ends or stops; saves `s` after every change. The
// campaigns' notes and progress go to hooks.runner; one note per decision (the ends, each step,
// the outcome) to hooks.note. The git-range form builds each kernel before its first campaign (a
// KernelBuilding note), the ends first, and checks it with `check_image` (none when empty): a
// candidate whose build fails is a step undecided (a skip) without a boot; an end whose build
// fails is a RuntimeError naming its build log. Runtime errors: a directory that cannot be
// written, an engine that cannot start. hooks.runner.stop_text and hooks.outcome_text must be set.
Status RunBisect(const std::string& dir, BisectState& s, const EngineFactory& make_engine,
                 const std::atomic<bool>& stop, const BisectHooks& hooks,
                 const ImageCheck& check_image = nullptr);

// One step outside the search, for `git bisect run` (kstacklab bisect step): `candidate` booted
// with the ends of the bisect in `dir` (whose ends must be established) in a campaign of its own,
// DIR/candidate-NAME (resumed when it exists), judged by the bisect's rule. Returns the step
// (verdict "good", "bad" or "undecided", or "" when the campaign was interrupted or stopped; the
// campaign's status is then in `*status`). UsageError when the ends are not established or the
// candidate's name is one of the ends'.
Expected<BisectStep> RunCandidateStep(const std::string& dir, const BisectState& s,
                                      const Profile& candidate, const EngineFactory& make_engine,
                                      const std::atomic<bool>& stop, const RunnerHooks& hooks,
                                      CampaignStatus* status);

// The steps as `git bisect log` writes them (good and bad ends, each step's verdict as good, bad
// or skip, the first bad kernel), kernels named by their profile names: `git bisect replay`
// takes it when the names are commits.
std::string BisectGitLog(const BisectState& s);

// The report: the question and rule, the ends, one line per step (candidate, boots, theta, its
// interval, verdict), the outcome and its evidence (good end, last good, first bad, bad end:
// boots and the mean value of each with its 95 % interval), the boots and their time in total.
std::string RenderBisectReport(const std::string& dir, const BisectState& s);

}  // namespace kstacklab::campaign
