// `kstacklab bisect`: find the first bad kernel of an ordered list with a rule that leaves a step
// undecided (a skip) rather than guess (docs/bisect.md).
//   kstacklab bisect PLAN.yaml --dir DIR (--row ROW [--metric M] | --strength FACT)
//     (the plan's kernels: a list of built images, or a git range built here)
//   kstacklab bisect --resume DIR
//   kstacklab bisect --report DIR
#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <random>

#include "campaign_support.h"
#include "cli_util.h"
#include "command.h"
#include "kstacklab/campaign/bisect.h"
#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "run_support.h"

namespace kstacklab::cli {
namespace {

namespace fs = std::filesystem;
using campaign::BisectState;

struct BisectArgs {
  std::vector<std::string> positional;
  std::string dir;
  std::string resume;
  std::string report;
  std::string row;
  std::string metric = "mean";
  bool metric_given = false;  // --metric on the command line: the --row question's only
  std::string strength;
  std::string alpha;
  std::string min_blocks;
  std::string max_blocks;
};

// The question against what the run measures: the row must be one of its rows (by name alone in
// an A/B run, whose variants are the knob's values).
Status CheckQuestionAgainstRun(const campaign::BisectQuestion& q,
                               const std::vector<std::string>& run_args) {
  if (q.IsStrength()) return OkStatus();
  cli::RunRows rows;
  KSTACKLAB_ASSIGN_OR_RETURN(rows, RunArgumentRows(run_args));
  for (size_t i = 0; i < rows.labels.size(); ++i) {
    if (rows.labels[i] == q.row) return OkStatus();
    if (rows.ab && q.row.rfind(rows.names[i] + " ", 0) == 0) return OkStatus();
  }
  std::vector<std::string> some(rows.labels.begin(),
                                rows.labels.begin() + std::min<size_t>(rows.labels.size(), 6));
  return UsageError(fmt::format(
      "--row '{}' is not a row the plan's run measures; give one of: {}{}", EscapeControl(q.row),
      fmt::join(some, ", "), rows.labels.size() > some.size() ? ", ..." : ""));
}

campaign::EngineFactory Factory() {
  const std::string self = SelfPath();
  return [self](const campaign::CampaignPlan& plan, const std::string& work_dir) {
    return campaign::MakeEngine(plan, work_dir, campaign::GuestBinary(plan, self));
  };
}

// A git range's kernel once built: checked as CheckPlan checks a listed kernel (a kernel image of
// the architecture of this kstacklab or the plan's, its release and identity filled).
Status CheckBuiltImage(const campaign::CampaignPlan& plan, campaign::Profile& kernel) {
  campaign::CampaignPlan one = plan;
  one.profiles = {kernel};
  KSTACKLAB_RETURN_IF_ERROR(campaign::CheckPlan(one));
  kernel = one.profiles.front();
  return OkStatus();
}

// The plan of a git-range bisect's ends alone: what can be checked of it before they are built.
campaign::CampaignPlan EndsOnly(const campaign::CampaignPlan& plan) {
  campaign::CampaignPlan ends = plan;
  ends.profiles = {plan.profiles.front(), plan.profiles.back()};
  return ends;
}

// The kernels before the bisect begins. A list: the plan whole (CheckPlan), ends that differ, the
// engine. A git range (resolved): the plan's values; each image is checked once built
// (CheckBuiltImage), the engine before each campaign.
Status CheckKernels(campaign::CampaignPlan& plan, bool git_range, const std::string& dir) {
  if (git_range) return campaign::CheckPlanValues(EndsOnly(plan));
  KSTACKLAB_RETURN_IF_ERROR(campaign::CheckPlan(plan));
  // The ends' kernels must differ in something a boot can see.
  const campaign::Profile& good = plan.profiles.front();
  const campaign::Profile& bad = plan.profiles.back();
  if (good.kernel == bad.kernel && good.cmdline == bad.cmdline && good.sysctls == bad.sysctls &&
      good.initrd == bad.initrd) {
    return UsageError(fmt::format(
        "the ends '{}' and '{}' boot the same kernel with the same command line and sysctls: "
        "there is nothing between them to bisect",
        good.name, bad.name));
  }
  auto engine =
      campaign::MakeEngine(plan, dir + "/ends/.work", campaign::GuestBinary(plan, SelfPath()));
  return engine->Check();
}

int Finish(const std::string& dir, const BisectState& s) {
  const int printed = PrintStdout(campaign::RenderBisectReport(dir, s));
  if (printed != 0) return printed;
  if (s.ends.verdict == "no-regression") {
    return Fail(RuntimeError(s.result + "; nothing to bisect (the figures are above)"));
  }
  return 0;
}

int Drive(const std::string& dir, BisectState& s) {
  StatusLine status;
  const campaign::BisectHooks hooks = BisectTerminalHooks("bisect", status);
  StopSignals signals;
  const Status st = campaign::RunBisect(dir, s, Factory(), g_campaign_stop, hooks, CheckBuiltImage);
  status.Clear();
  if (!st.ok()) {
    Error e = st.error();
    if (campaign::IsHostWriteFault(e)) {
      e.message += fmt::format(
          "; free space on the file system of {}, then `kstacklab bisect "
          "--resume {}` continues",
          dir, dir);
    }
    return Fail(e);
  }
  if (s.status == campaign::CampaignStatus::kInterrupted) {
    Warn(fmt::format("interrupted: the state is kept; `kstacklab bisect --resume {}` continues",
                     dir));
    return 128 + (g_campaign_signal != 0 ? g_campaign_signal : SIGINT);
  }
  if (s.status == campaign::CampaignStatus::kStopped) {
    return Fail(RuntimeError(fmt::format(
        "{}; the state is kept: `kstacklab bisect --resume {}` continues", s.result, dir)));
  }
  return Finish(dir, s);
}

Expected<stats::BisectRule> RuleFrom(const BisectArgs& a) {
  stats::BisectRule rule;
  if (!a.alpha.empty()) {
    char* end = nullptr;
    rule.alpha = std::strtod(a.alpha.c_str(), &end);
    if (end == a.alpha.c_str() || *end != '\0') {
      return UsageError(
          fmt::format("--alpha '{}' is not a number; give e.g. 0.01", EscapeControl(a.alpha)));
    }
  }
  if (!a.min_blocks.empty()) {
    KSTACKLAB_ASSIGN_OR_RETURN(rule.min_blocks, ParseCount(a.min_blocks, "--min-blocks", 2,
                                                           campaign::CampaignLimits::kMaxBoots));
  }
  if (!a.max_blocks.empty()) {
    KSTACKLAB_ASSIGN_OR_RETURN(rule.max_blocks, ParseCount(a.max_blocks, "--max-blocks", 2,
                                                           campaign::CampaignLimits::kMaxBoots));
    rule.max_end_blocks = rule.max_blocks;
  }
  return rule;
}

int New(const BisectArgs& a) {
  if (a.positional.size() != 1) {
    return Fail(UsageError(
        "give a plan file: kstacklab bisect PLAN.yaml --dir DIR --row ROW (or --strength FACT)"));
  }
  campaign::BisectQuestion q;
  q.row = a.row;
  q.metric = a.metric;
  q.strength = a.strength;
  if (q.row.empty() == q.strength.empty()) {
    return Fail(UsageError(
        "give the question as --row ROW [--metric M] (a row of the run) or --strength FACT "
        "(distinct, shannon_bits or min_entropy_bits), one of them"));
  }
  if (q.IsStrength()) {
    if (Status st = campaign::CheckBisectFact(q.strength); !st.ok()) {
      return Fail(WithFlag("--strength", st.error()));
    }
    if (a.metric_given) {
      return Fail(UsageError(
          "--metric is the --row question's: a --strength question has no metric; drop --metric"));
    }
  } else {
    if (Status st = campaign::CheckBisectRow(q.row); !st.ok()) {
      return Fail(WithFlag("--row", st.error()));
    }
    if (Status st = campaign::CheckBisectMetric(q.metric); !st.ok()) {
      return Fail(WithFlag("--metric", st.error()));
    }
  }
  auto rule = RuleFrom(a);
  if (!rule.ok()) return Fail(rule.error());
  const std::string source = a.positional[0];
  auto text = ReadRegularFile(source, campaign::CampaignLimits::kMaxFileBytes);
  if (!text.ok()) return Fail(text.error());
  std::error_code ec;
  const std::string base = fs::absolute(source, ec).parent_path().string();
  std::optional<campaign::GitRange> range;
  auto plan = campaign::ParseBisectPlanYaml(*text, source, base, &range);
  if (!plan.ok()) return Fail(plan.error());
  const std::string dir =
      campaign::CampaignDirPath(fs::absolute(a.dir, ec).lexically_normal().string());
  if (range) {
    if (Status st = campaign::ResolveGitRange(*range); !st.ok()) return Fail(st.error());
    plan->profiles = campaign::GitRangeKernels(dir, *range);
  }
  if (Status st = campaign::CheckBisectPlan(*plan, *rule); !st.ok()) return Fail(st.error());
  if (!plan->seed_given) {
    plan->seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }
  // CheckPlan's count: the most any of the bisect's campaigns boots.
  plan->boots = std::max(rule->max_blocks, rule->max_end_blocks);
  if (q.IsStrength()) plan->strength = true;
  if (Status st = CheckKernels(*plan, range.has_value(), dir); !st.ok()) return Fail(st.error());
  if (Status st = CheckRunArguments(plan->run_args); !st.ok()) return Fail(st.error());
  if (Status st = CheckQuestionAgainstRun(q, plan->run_args); !st.ok()) return Fail(st.error());
  auto state = campaign::CreateBisect(dir, *plan, q, *rule, source, range);
  if (!state.ok()) return Fail(state.error());
  DirLock lock;
  if (Status st = lock.Take(dir); !st.ok()) return Fail(st.error());
  return Drive(dir, *state);
}

int Resume(const std::string& dir) {
  struct stat sb {};
  if (lstat((dir + "/" + campaign::kBisectStateFile).c_str(), &sb) != 0) {
    return Fail(UsageError(fmt::format("--resume '{}' holds no {}: give a bisect's directory",
                                       EscapeControl(dir), campaign::kBisectStateFile)));
  }
  DirLock lock;
  if (Status taken = lock.Take(dir); !taken.ok()) return Fail(taken.error());
  auto s = campaign::LoadBisectState(dir);
  if (!s.ok()) return Fail(s.error());
  if (s->status == campaign::CampaignStatus::kComplete) {
    Warn("the bisect is already complete; its report follows");
    return Finish(dir, *s);
  }
  if (s->range) {
    // Its images are checked as they are built or found in the cache.
    if (Status st = campaign::CheckPlanValues(EndsOnly(s->plan)); !st.ok()) return Fail(st.error());
  } else {
    if (Status st = campaign::CheckPlan(s->plan); !st.ok()) return Fail(st.error());
    if (Status st = campaign::CheckPlanFilesUnchanged(s->plan); !st.ok()) return Fail(st.error());
  }
  if (Status st = CheckRunArguments(s->plan.run_args); !st.ok()) return Fail(st.error());
  return Drive(dir, *s);
}

int Execute(const BisectArgs& a) {
  const int modes = !a.resume.empty() + !a.report.empty() + !a.dir.empty();
  if (modes != 1) {
    return Fail(UsageError("give one of --dir DIR (a new bisect), --resume DIR or --report DIR"));
  }
  if (!a.dir.empty()) return New(a);
  if (!a.positional.empty() || !a.row.empty() || a.metric_given || !a.strength.empty() ||
      !a.alpha.empty() || !a.min_blocks.empty() || !a.max_blocks.empty()) {
    return Fail(UsageError(
        "--resume and --report take the plan and the question from DIR/bisect.json; give "
        "neither a plan file nor --row, --metric, --strength or rule flags"));
  }
  const std::string dir = campaign::CampaignDirPath(!a.report.empty() ? a.report : a.resume);
  if (!a.resume.empty()) return Resume(dir);
  auto s = campaign::LoadBisectState(dir);
  if (!s.ok()) return Fail(s.error());
  return PrintStdout(campaign::RenderBisectReport(dir, *s));
}

// `bisect step`: what `git bisect run` takes from it. Any error exits 255, which makes git abort
// the bisect: an exit of 1 or 2 would be taken for "bad".
constexpr int kStepGood = 0;
constexpr int kStepBad = 1;
constexpr int kStepSkip = 125;
constexpr int kStepAbort = 255;

struct StepArgs {
  std::string dir;
  std::string kernel;
  std::string name;
  std::string cmdline;
  bool cmdline_given = false;
  std::string initrd;
};

int Abort(const Error& e) {
  (void)Fail(e);
  return kStepAbort;
}

int ExecuteStep(const StepArgs& a, const std::vector<std::string>& extras) {
  if (!extras.empty()) {
    return Abort(
        UsageError(fmt::format("bisect step: '{}' is not an argument here (see "
                               "`kstacklab bisect step --help`)",
                               EscapeControl(extras[0]))));
  }
  if (a.dir.empty() || a.kernel.empty()) {
    return Abort(UsageError(
        "give the bisect's directory and the candidate's image: kstacklab bisect step DIR "
        "--kernel IMAGE [--name NAME] [--cmdline CMDLINE]"));
  }
  const std::string dir = campaign::CampaignDirPath(a.dir);
  // Nothing is written (not even the lock) into a directory that is not a bisect's.
  struct stat sb {};
  if (lstat((dir + "/" + campaign::kBisectStateFile).c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    return Abort(UsageError(fmt::format(
        "bisect step: '{}' holds no {}: give the directory of a bisect whose ends were measured "
        "(kstacklab bisect PLAN --dir DIR)",
        EscapeControl(dir), campaign::kBisectStateFile)));
  }
  DirLock lock;
  if (Status taken = lock.Take(dir); !taken.ok()) return Abort(taken.error());
  auto s = campaign::LoadBisectState(dir);
  if (!s.ok()) return Abort(s.error());
  if (s->range) s->plan = EndsOnly(s->plan);  // a step needs the ends, built with them
  if (Status st = campaign::CheckPlan(s->plan); !st.ok()) return Abort(st.error());
  if (Status st = campaign::CheckPlanFilesUnchanged(s->plan); !st.ok()) return Abort(st.error());
  campaign::Profile candidate = s->plan.profiles.front();
  candidate.kernel = a.kernel;
  candidate.name = a.name.empty() ? "candidate" : a.name;
  if (a.cmdline_given) candidate.cmdline = a.cmdline;
  if (!a.initrd.empty()) candidate.initrd = a.initrd;
  candidate.release.clear();
  candidate.config.clear();
  candidate.kernel_size = 0;
  candidate.kernel_mtime = 0;
  StatusLine progress;
  campaign::RunnerHooks hooks = TerminalHooks("bisect step", progress);
  StopSignals signals;
  campaign::CampaignStatus status = campaign::CampaignStatus::kRunning;
  auto step =
      campaign::RunCandidateStep(dir, *s, candidate, Factory(), g_campaign_stop, hooks, &status);
  progress.Clear();
  if (!step.ok()) return Abort(step.error());
  if (status == campaign::CampaignStatus::kInterrupted) {
    Warn(
        fmt::format("interrupted: the step's state is kept in {}/{}; the same command "
                    "continues it",
                    dir, step->dir));
    return 128 + (g_campaign_signal != 0 ? g_campaign_signal : SIGINT);
  }
  if (step->verdict.empty()) {
    return Abort(RuntimeError(
        fmt::format("the step's campaign {}/{} stopped ({}); the same command continues it", dir,
                    step->dir, campaign::CampaignStatusName(status))));
  }
  const std::string line =
      fmt::format("{}: {} after {} boots: theta {:.3f} {} against the ends {} and {}; exit {}\n",
                  candidate.name, step->verdict, step->boots, step->interval.theta,
                  step->interval.bounded
                      ? fmt::format("[{:.3f}, {:.3f}]", step->interval.low, step->interval.high)
                      : std::string("unbounded"),
                  s->plan.profiles.front().name, s->plan.profiles.back().name,
                  step->verdict == "good"  ? kStepGood
                  : step->verdict == "bad" ? kStepBad
                                           : kStepSkip);
  if (PrintStdout(line) != 0) return kStepAbort;
  return step->verdict == "good" ? kStepGood : step->verdict == "bad" ? kStepBad : kStepSkip;
}

}  // namespace

Runner SetupBisectCommand(CLI::App& sub) {
  auto a = std::make_shared<BisectArgs>();
  sub.add_option("plan", a->positional,
                 "PLAN.yaml: a campaign plan whose profiles are the kernels, oldest first, or "
                 "whose kernels are a git range to build");
  sub.add_option("--dir", a->dir, "New (or empty) bisect directory");
  sub.add_option("--resume", a->resume, "Continue the bisect in DIR");
  sub.add_option("--report", a->report, "Print the report of the bisect in DIR");
  sub.add_option("--row", a->row,
                 "The question: a row of the run, as `show` names it (e.g. 'syscall/getppid "
                 "[raw]')");
  sub.add_option("--metric", a->metric, "The row's metric (mean, p50, p99, ...)")
      ->capture_default_str()
      ->each([a](const std::string&) { a->metric_given = true; });
  sub.add_option("--strength", a->strength,
                 "The question: a strength fact of entropy --kernel (distinct, shannon_bits, "
                 "min_entropy_bits)");
  sub.add_option("--alpha", a->alpha, "The chance of a wrong step (default 0.01)");
  sub.add_option("--min-blocks", a->min_blocks, "The first look, in blocks (default 3)");
  sub.add_option("--max-blocks", a->max_blocks,
                 "The last look: a step undecided then is a skip (default 24)");
  auto st = std::make_shared<StepArgs>();
  CLI::App* step = sub.add_subcommand(
      "step",
      "Judge one candidate image against the established ends of a bisect DIR, for `git bisect "
      "run`: exit 0 good, 1 bad, 125 undecided (skip), 255 on any error (git aborts)");
  step->allow_extras();
  step->add_option("dir", st->dir, "The bisect's directory (its ends established)");
  step->add_option("--kernel", st->kernel, "The candidate's image (e.g. arch/x86/boot/bzImage)");
  step->add_option("--name", st->name,
                   "The candidate's name (e.g. the commit id); its campaign is DIR/candidate-NAME");
  step->add_option("--cmdline", st->cmdline,
                   "The candidate's kernel arguments (default: the good end's)")
      ->each([st](const std::string&) { st->cmdline_given = true; });
  step->add_option("--initrd", st->initrd, "An extra initramfs for the candidate");
  return [a, st, step] {
    if (step->parsed()) return ExecuteStep(*st, step->remaining());
    return Execute(*a);
  };
}

}  // namespace kstacklab::cli
