#include "kstacklab/campaign/bisect.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/results/repetition.h"
#include "kstacklab/results/result_reader.h"
#include "kstacklab/results/results.h"
#include "kstacklab/stats/stats.h"

namespace kstacklab::campaign {

namespace {

// A bisect state is a short file: the plan (bounded by kMaxPlanJsonBytes), a git range's commits
// (each a quoted id of 64 hex digits at most) and one small record per step.
constexpr size_t kMaxBisectStateBytes =
    kMaxPlanJsonBytes + GitRangeLimits::kMaxCommits * 72 + (size_t{1} << 20);

// Every figure at full precision: `bisect --report` reprints the run's lines from this file, and
// a figure rounded here (6 significant digits) printed differently once it passed 1000.
Json Num(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
double NumOf(const Json& j) { return j.is_number() ? j.get<double>() : std::nan(""); }

std::string StepDirName(size_t n, const std::string& kernel) {
  return fmt::format("step-{}-{}", n, kernel);
}

// The campaign of two or three of the bisect's kernels: the plan's settings, boots = the rule's
// last look, no target, a seed of its own.
CampaignPlan CampaignOf(const BisectState& s, const std::vector<size_t>& kernels, uint64_t boots,
                        uint64_t seed_offset) {
  CampaignPlan p = s.plan;
  p.profiles.clear();
  for (size_t k : kernels) p.profiles.push_back(s.plan.profiles[k]);
  p.boots = boots;
  p.target.reset();
  p.randomised = true;
  p.seed = s.plan.seed + seed_offset;
  p.seed_given = true;
  p.strength = s.plan.strength || s.question.IsStrength();
  return p;
}

// The blocks whose boots of every profile of `names` were accepted, as values in that order.
Expected<std::vector<std::vector<double>>> CompleteBlocks(const std::string& dir,
                                                          const CampaignState& st,
                                                          const BisectQuestion& q) {
  std::vector<std::vector<double>> out;
  for (uint64_t block = 1; block <= st.blocks.size(); ++block) {
    std::vector<double> values;
    for (const Profile& p : st.plan.profiles) {
      const Boot* b = st.Find(p.name, block);
      if (b == nullptr || b->status != BootStatus::kAccepted) break;
      double v = 0;
      KSTACKLAB_ASSIGN_OR_RETURN(v, BisectBootValue(dir, *b, q));
      values.push_back(v);
    }
    if (values.size() == st.plan.profiles.size()) out.push_back(std::move(values));
  }
  return out;
}

std::vector<std::pair<double, double>> EndPairs(const std::vector<std::vector<double>>& blocks) {
  std::vector<std::pair<double, double>> pairs;
  for (const auto& b : blocks) pairs.emplace_back(b[0], b[1]);
  return pairs;
}

std::vector<stats::BisectBlock> StepBlocks(const std::vector<std::vector<double>>& blocks) {
  std::vector<stats::BisectBlock> out;
  for (const auto& b : blocks) out.push_back({b[0], b[1], b[2]});
  return out;
}

uint64_t BootsMade(const CampaignState& st) {
  uint64_t n = 0;
  for (const Boot& b : st.boots) n += b.status != BootStatus::kPending;
  return n;
}

std::string Fixed(double v, int digits = 3) {
  return std::isfinite(v) ? fmt::format("{:.{}f}", v, digits) : std::string("-");
}

std::string IntervalText(const stats::ThetaInterval& i) {
  if (!i.bounded) return "unbounded";
  return fmt::format("[{}, {}]", Fixed(i.low), Fixed(i.high));
}

// After a block of the ends' (`ends`) or a step's campaign in `cdir`: the stop reason when the
// rule has decided, or when one kernel's boots keep failing (two at least, more than it had
// accepted: no verdict is coming, and a kernel that does not boot is a skip), else "".
std::function<Expected<std::string>(const CampaignState&, uint64_t)> RuleHook(
    const std::string& cdir, const BisectState& s, bool ends) {
  return [cdir, &s, ends](const CampaignState& st, uint64_t) -> Expected<std::string> {
    for (const Profile& p : st.plan.profiles) {
      const size_t failed = st.Failed(p.name), accepted = st.Accepted(p.name);
      if (failed >= 2 && failed > accepted) {
        return fmt::format("boots keep failing: {} of {}'s boots failed, {} accepted; no verdict",
                           failed, p.name, accepted);
      }
    }
    std::vector<std::vector<double>> blocks;
    KSTACKLAB_ASSIGN_OR_RETURN(blocks, CompleteBlocks(cdir, st, s.question));
    if (ends) {
      const stats::EndsJudgement j = stats::JudgeEnds(EndPairs(blocks), s.rule);
      if (j.verdict != stats::EndsVerdict::kEstablished) return std::string();
      return fmt::format("the ends differ after {} blocks", j.blocks);
    }
    const stats::StepJudgement j = stats::JudgeStep(StepBlocks(blocks), s.rule);
    if (j.verdict != stats::StepVerdict::kGood && j.verdict != stats::StepVerdict::kBad) {
      return std::string();
    }
    return fmt::format("{} after {} blocks", stats::StepVerdictName(j.verdict), blocks.size());
  };
}

// The verdict of a step's campaign that has ended: the rule read at its last complete block.
Expected<stats::StepJudgement> FinalStepJudgement(const std::string& cdir, const CampaignState& st,
                                                  const BisectState& s) {
  std::vector<std::vector<double>> blocks;
  KSTACKLAB_ASSIGN_OR_RETURN(blocks, CompleteBlocks(cdir, st, s.question));
  stats::BisectRule final_rule = s.rule;
  final_rule.max_blocks = std::max<size_t>(blocks.size(), final_rule.min_blocks);
  return stats::JudgeStep(StepBlocks(blocks), final_rule);
}

const char* VerdictWord(stats::StepVerdict v) {
  return v == stats::StepVerdict::kGood  ? "good"
         : v == stats::StepVerdict::kBad ? "bad"
                                         : "undecided";
}

// Runs (or resumes) the campaign in `cdir` with `plan`; the caller's hooks plus `after_block`.
Expected<CampaignState> RunOne(const std::string& cdir, const CampaignPlan& plan,
                               const std::string& source, const EngineFactory& make_engine,
                               const std::atomic<bool>& stop, const RunnerHooks& hooks) {
  CampaignState st;
  struct stat sb {};
  if (lstat((cdir + "/" + kStateFile).c_str(), &sb) == 0) {
    KSTACKLAB_ASSIGN_OR_RETURN(st, LoadState(cdir));
  } else {
    KSTACKLAB_ASSIGN_OR_RETURN(st, CreateCampaign(cdir, plan, source));
  }
  if (st.status == CampaignStatus::kComplete) return st;
  std::unique_ptr<Engine> engine = make_engine(st.plan, cdir + "/.work");
  KSTACKLAB_RETURN_IF_ERROR(engine->Check());
  KSTACKLAB_RETURN_IF_ERROR(RunCampaign(cdir, st, *engine, stop, hooks));
  return st;
}

}  // namespace

std::string BisectQuestion::Describe() const {
  return IsStrength() ? "strength " + strength : row + " " + metric;
}

const std::vector<std::string>& BisectStrengthFacts() {
  static const std::vector<std::string> k = {"distinct", "shannon_bits", "min_entropy_bits"};
  return k;
}

Status CheckBisectFact(const std::string& fact) {
  const auto& facts = BisectStrengthFacts();
  if (std::find(facts.begin(), facts.end(), fact) != facts.end()) return OkStatus();
  return UsageError(
      fmt::format("'{}' is not a strength fact; give distinct, shannon_bits or min_entropy_bits",
                  EscapeControl(fact)));
}

Status CheckBisectMetric(const std::string& metric) {
  const auto& metrics = MetricNames();
  if (std::find(metrics.begin(), metrics.end(), metric) != metrics.end()) return OkStatus();
  return UsageError(fmt::format("'{}' is not a metric; give one of {}", EscapeControl(metric),
                                fmt::join(metrics, ", ")));
}

Status CheckBisectRow(const std::string& row) {
  if (!row.empty() && row.size() <= CampaignLimits::kMaxTextBytes &&
      row.find('\n') == std::string::npos) {
    return OkStatus();
  }
  return UsageError(
      "the row is not a row name; give it as `show` prints it, e.g. 'syscall/getppid [raw]'");
}

Status CheckBisectQuestion(const BisectQuestion& q) {
  if (q.IsStrength() == !q.row.empty()) {
    return UsageError(
        "the question is a row of the run (with its metric) or a strength fact (distinct, "
        "shannon_bits or min_entropy_bits), one of them");
  }
  if (q.IsStrength()) return CheckBisectFact(q.strength);
  KSTACKLAB_RETURN_IF_ERROR(CheckBisectMetric(q.metric));
  return CheckBisectRow(q.row);
}

stats::BisectSearch BisectState::Search() const {
  stats::BisectSearch search(plan.profiles.size());
  for (const BisectStep& step : steps) {
    if (step.verdict == "good") search.Record(step.kernel, stats::StepVerdict::kGood);
    if (step.verdict == "bad") search.Record(step.kernel, stats::StepVerdict::kBad);
    if (step.verdict == "undecided") search.Record(step.kernel, stats::StepVerdict::kUndecided);
  }
  return search;
}

// ---- the state file
// ------------------------------------------------------------------------------

Json BisectStateToJson(const BisectState& s) {
  Json steps = Json::array();
  for (const BisectStep& st : s.steps) {
    Json& step = steps.emplace_back(
        Json{{"kernel", st.kernel},
             {"name", s.plan.profiles.at(st.kernel).name},
             {"dir", st.dir},
             {"verdict", st.verdict},
             {"theta", Num(st.interval.theta)},
             {"low", st.interval.bounded ? Num(st.interval.low) : Json(nullptr)},
             {"high", st.interval.bounded ? Num(st.interval.high) : Json(nullptr)},
             {"blocks", st.interval.blocks},
             {"boots", st.boots},
             {"seconds", Num(st.seconds)}});
    if (!st.build_failure.empty()) step["build_failure"] = st.build_failure;
  }
  // A git range's kernels are made again from its commits: only the ends are kept as profiles.
  CampaignPlan stored = s.plan;
  if (s.range) stored.profiles = {s.plan.profiles.front(), s.plan.profiles.back()};
  const stats::EndsJudgement& e = s.ends.judgement;
  Json question = s.question.IsStrength()
                      ? Json{{"strength", s.question.strength}}
                      : Json{{"row", s.question.row}, {"metric", s.question.metric}};
  Json j{{"schema", s.schema},
         {"tool_version", s.tool_version},
         {"created", s.created},
         {"updated", s.updated},
         {"source", s.source},
         {"question", std::move(question)},
         {"rule",
          {{"alpha", s.rule.alpha},
           {"min_blocks", s.rule.min_blocks},
           {"max_blocks", s.rule.max_blocks},
           {"max_end_blocks", s.rule.max_end_blocks}}},
         {"plan", PlanToJson(stored)},
         {"ends",
          {{"dir", "ends"},
           {"verdict", s.ends.verdict},
           {"difference", Num(e.difference)},
           {"low", Num(e.low)},
           {"high", Num(e.high)},
           {"blocks", e.blocks},
           {"good_mean", Num(s.ends.good_mean)},
           {"bad_mean", Num(s.ends.bad_mean)},
           {"boots", s.ends.boots},
           {"seconds", Num(s.ends.seconds)}}},
         {"steps", std::move(steps)},
         {"status", CampaignStatusName(s.status)},
         {"result", s.result}};
  if (s.range) j["range"] = GitRangeToJson(*s.range);
  return j;
}

namespace {

// campaign.json's "ends" object (throws Json::exception on a wrong form).
BisectEnds EndsFromJson(const Json& e) {
  KnownJsonKeys(e,
                {"dir", "verdict", "difference", "low", "high", "blocks", "good_mean", "bad_mean",
                 "boots", "seconds"},
                "the ends");
  BisectEnds ends;
  ends.verdict = e.at("verdict").get<std::string>();
  ends.judgement.difference = NumOf(e.at("difference"));
  ends.judgement.low = NumOf(e.at("low"));
  ends.judgement.high = NumOf(e.at("high"));
  ends.judgement.blocks = e.at("blocks").get<size_t>();
  ends.good_mean = NumOf(e.at("good_mean"));
  ends.bad_mean = NumOf(e.at("bad_mean"));
  ends.boots = e.at("boots").get<uint64_t>();
  ends.seconds = NumOf(e.at("seconds"));
  return ends;
}

// bisect.json's git range, when it has one: the plan's kernels made again from its commits, in
// the bisect directory of `path` (throws Json::exception on a wrong form).
Status RangeFromJson(const Json& j, const std::string& path, BisectState& s) {
  if (!j.contains("range")) return OkStatus();
  KSTACKLAB_ASSIGN_OR_RETURN(s.range, GitRangeFromJson(j.at("range")));
  s.plan.profiles = GitRangeKernels(std::filesystem::path(path).parent_path(), *s.range);
  return OkStatus();
}

}  // namespace

Expected<BisectState> BisectStateFromJson(const Json& j, const std::string& path) {
  const std::string shown = EscapeControl(path);
  BisectState s;
  try {
    KnownJsonKeys(j,
                  {"schema", "tool_version", "created", "updated", "source", "question", "rule",
                   "plan", "range", "ends", "steps", "status", "result"},
                  "the bisect state");
    s.schema = j.at("schema").get<std::string>();
    if (s.schema != kBisectSchema) {
      return UsageError(fmt::format("'{}' is not a kstacklab bisect state (schema '{}', not {})",
                                    shown, EscapeControl(s.schema), kBisectSchema));
    }
    s.tool_version = j.at("tool_version").get<std::string>();
    s.created = j.at("created").get<std::string>();
    s.updated = j.at("updated").get<std::string>();
    s.source = j.at("source").get<std::string>();
    const Json& q = j.at("question");
    KnownJsonKeys(q, {"row", "metric", "strength"}, "the question");
    s.question.row = q.value("row", std::string());
    s.question.metric = q.value("metric", std::string("mean"));
    s.question.strength = q.value("strength", std::string());
    const Json& r = j.at("rule");
    KnownJsonKeys(r, {"alpha", "min_blocks", "max_blocks", "max_end_blocks"}, "the rule");
    s.rule.alpha = r.at("alpha").get<double>();
    s.rule.min_blocks = r.at("min_blocks").get<size_t>();
    s.rule.max_blocks = r.at("max_blocks").get<size_t>();
    s.rule.max_end_blocks = r.at("max_end_blocks").get<size_t>();
    auto plan = PlanFromJson(j.at("plan"));
    if (!plan.ok()) {
      return UsageError(fmt::format("'{}': {}", shown, plan.error().message));
    }
    s.plan = std::move(*plan);
    if (Status st = RangeFromJson(j, path, s); !st.ok()) {
      return UsageError(fmt::format("'{}': {}", shown, st.error().message));
    }
    s.ends = EndsFromJson(j.at("ends"));
    for (const Json& st : j.at("steps")) {
      KnownJsonKeys(st,
                    {"kernel", "name", "dir", "verdict", "theta", "low", "high", "blocks", "boots",
                     "seconds", "build_failure"},
                    "a step");
      BisectStep step;
      step.kernel = st.at("kernel").get<size_t>();
      step.dir = st.at("dir").get<std::string>();
      step.verdict = st.at("verdict").get<std::string>();
      step.interval.theta = NumOf(st.at("theta"));
      step.interval.low = NumOf(st.at("low"));
      step.interval.high = NumOf(st.at("high"));
      step.interval.bounded = st.at("low").is_number() && st.at("high").is_number();
      step.interval.blocks = st.at("blocks").get<size_t>();
      step.boots = st.at("boots").get<uint64_t>();
      step.seconds = NumOf(st.at("seconds"));
      step.build_failure = st.value("build_failure", std::string());
      if (step.kernel == 0 || step.kernel + 1 >= s.plan.profiles.size() ||
          step.dir != StepDirName(s.steps.size() + 1, s.plan.profiles[step.kernel].name) ||
          (step.verdict != "" && step.verdict != "good" && step.verdict != "bad" &&
           step.verdict != "undecided")) {
        return UsageError(
            fmt::format("'{}': step {} is not a step of this bisect", shown, s.steps.size() + 1));
      }
      s.steps.push_back(std::move(step));
    }
    KSTACKLAB_ASSIGN_OR_RETURN(
        s.status, RecordedCampaignStatus(j.at("status"), fmt::format("'{}'", shown), "bisect"));
    s.result = j.at("result").get<std::string>();
  } catch (const Json::exception& ex) {
    return UsageError(
        fmt::format("'{}' is a damaged bisect state ({}); restore it from a "
                    "backup or start the bisect anew in another directory",
                    shown, ex.what()));
  }
  if (Status st = CheckBisectPlan(s.plan, s.rule); !st.ok()) {
    return UsageError(fmt::format("'{}': {}", shown, st.error().message));
  }
  if (Status st = CheckBisectQuestion(s.question); !st.ok()) {
    return UsageError(fmt::format("'{}': {}", shown, st.error().message));
  }
  return s;
}

Status SaveBisectState(const std::string& dir, BisectState& s) {
  s.updated = UtcTimestamp();
  KSTACKLAB_RETURN_IF_ERROR(
      WriteFileAtomic(dir + "/" + kBisectStateFile, DumpJson(BisectStateToJson(s)) + "\n"));
  return WriteFileAtomic(dir + "/" + kBisectLogFile, BisectGitLog(s));
}

Expected<BisectState> LoadBisectState(const std::string& dir) {
  const std::string path = dir + "/" + kBisectStateFile;
  std::string text;
  KSTACKLAB_ASSIGN_OR_RETURN(text, ReadRegularFile(path, kMaxBisectStateBytes));
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return UsageError(fmt::format("'{}' is not JSON: a damaged bisect state", EscapeControl(path)));
  }
  return BisectStateFromJson(j, path);
}

Status CheckBisectPlan(const CampaignPlan& plan, const stats::BisectRule& rule) {
  if (plan.profiles.size() < 2) {
    return UsageError(fmt::format(
        "a bisect needs two kernels at least, oldest first: the good end, the candidates, the bad "
        "end (two: the ends alone, for `kstacklab bisect step`); the plan has {}",
        plan.profiles.size()));
  }
  if (!(rule.alpha > 0 && rule.alpha <= 0.2)) {
    return UsageError(
        fmt::format("alpha {:g} is out of range; give a value in (0, 0.2], e.g. "
                    "0.01 (the chance of a wrong step)",
                    rule.alpha));
  }
  if (rule.min_blocks < 2 || rule.max_blocks < rule.min_blocks ||
      rule.max_end_blocks < rule.min_blocks || rule.max_blocks > CampaignLimits::kMaxBoots ||
      rule.max_end_blocks > CampaignLimits::kMaxBoots) {
    return UsageError(fmt::format(
        "the blocks per step are out of range: give 2 <= the first look <= the last look <= {} "
        "(now {} and {})",
        CampaignLimits::kMaxBoots, rule.min_blocks, rule.max_blocks));
  }
  return OkStatus();
}

std::vector<Profile> GitRangeKernels(const std::string& dir, const GitRange& range) {
  std::error_code ec;
  const std::string root = std::filesystem::absolute(dir, ec).lexically_normal().string();
  std::vector<Profile> out;
  out.reserve(range.commits.size());
  for (const std::string& commit : range.commits) {
    Profile p{GitKernelName(commit), GitImagePath(root, range, commit)};
    p.cmdline = range.cmdline;
    p.initrd = range.initrd;
    out.push_back(std::move(p));
  }
  return out;
}

Expected<BisectState> CreateBisect(const std::string& given, const CampaignPlan& given_plan,
                                   const BisectQuestion& question, const stats::BisectRule& rule,
                                   const std::string& source,
                                   const std::optional<GitRange>& range) {
  CampaignPlan plan = given_plan;
  if (range) plan.profiles = GitRangeKernels(CampaignDirPath(given), *range);
  KSTACKLAB_RETURN_IF_ERROR(CheckBisectPlan(plan, rule));
  KSTACKLAB_RETURN_IF_ERROR(CheckBisectQuestion(question));
  KSTACKLAB_RETURN_IF_ERROR(CheckNewCampaignDir(given));
  const std::string dir = CampaignDirPath(given);
  BisectState s;
  s.tool_version = KSTACKLAB_VERSION;
  s.created = UtcTimestamp();
  s.source = source;
  s.plan = plan;
  s.range = range;
  // Stored as a campaign plan is (PlanFromJson wants a count): the most any campaign boots.
  s.plan.boots = std::max<uint64_t>(rule.max_blocks, rule.max_end_blocks);
  s.plan.target.reset();
  s.question = question;
  s.rule = rule;
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return RuntimeError(fmt::format("cannot create '{}': {}", EscapeControl(dir), strerror(errno)));
  }
  KSTACKLAB_RETURN_IF_ERROR(SaveBisectState(dir, s));
  return s;
}

Expected<double> BisectBootValue(const std::string& dir, const Boot& boot,
                                 const BisectQuestion& q) {
  const std::string what = fmt::format("boot {} of {}", boot.index, boot.profile);
  if (q.IsStrength()) {
    const Json v = boot.strength.is_object() ? boot.strength.value(q.strength, Json()) : Json();
    if (!v.is_number()) {
      return UsageError(fmt::format(
          "{} has no strength {} (the guest's offsets report lacks it{}); the question cannot be "
          "answered on this kernel",
          what, q.strength,
          boot.strength.is_object() && boot.strength.contains("error")
              ? ": " + boot.strength["error"].get<std::string>()
              : std::string()));
    }
    return v.get<double>();
  }
  const std::string path = dir + "/" + boot.file;
  std::string text;
  KSTACKLAB_ASSIGN_OR_RETURN(text, ReadRegularFile(path, ResultLimits::kMaxFileBytes));
  RunResult r;
  KSTACKLAB_ASSIGN_OR_RETURN(r, ResultFromJson(text, path));
  for (const BenchmarkResult& b : r.benchmarks) {
    if (BenchmarkLabel(b.Key()) != q.row) continue;
    double sum = 0;
    size_t n = 0;
    for (const Repetition& rep : b.repetitions) {
      auto it = rep.metrics.find(q.metric);
      if (it == rep.metrics.end() || !std::isfinite(it->second)) continue;
      sum += it->second;
      ++n;
    }
    if (n == 0) {
      return UsageError(fmt::format("{}: row '{}' has no {} (loop-mode rows carry the mean only)",
                                    what, EscapeControl(q.row), q.metric));
    }
    return sum / static_cast<double>(n);
  }
  return UsageError(
      fmt::format("{}: its result has no row '{}'; give a row the run measures, "
                  "as `kstacklab show {}` names it",
                  what, EscapeControl(q.row), EscapeControl(path)));
}

// ---- the driver
// ----------------------------------------------------------------------------------

namespace {

// A campaign of the bisect that did not end (interrupted, stopped): the bisect stops with its
// status for --resume. True when it did.
Expected<bool> Halted(const std::string& dir, BisectState& s, const CampaignState& st) {
  if (st.status == CampaignStatus::kComplete) return false;
  s.status = st.status == CampaignStatus::kInterrupted ? CampaignStatus::kInterrupted
                                                       : CampaignStatus::kStopped;
  s.result = st.stop_reason;
  KSTACKLAB_RETURN_IF_ERROR(SaveBisectState(dir, s));
  return true;
}

// The git-range form: kernel k's image built (or found in the cache) and checked. "" when it is
// ready (and always in the list form); else why it is not, with its build log. *interrupted when
// `stop` cut its build short.
Expected<std::string> ReadyKernel(const std::string& dir, BisectState& s, size_t k,
                                  const std::atomic<bool>& stop, const BisectHooks& hooks,
                                  const ImageCheck& check, bool* interrupted) {
  if (!s.range) return std::string();
  const std::string& commit = s.range->commits.at(k);
  GitBuild b;
  const auto building = [&hooks](const KernelBuilding& k) {
    if (hooks.note) hooks.note(k);
  };
  KSTACKLAB_ASSIGN_OR_RETURN(b, BuildGitKernel(dir, *s.range, commit, stop, building));
  if (b.interrupted) {
    *interrupted = true;
    return std::string();
  }
  if (b.failure.empty() && check) {
    Profile p = s.plan.profiles[k];
    if (Status st = check(s.plan, p); !st.ok()) {
      b.failure = "its image is not one to boot: " + st.error().message;
    } else {
      s.plan.profiles[k] = std::move(p);
    }
  }
  if (b.failure.empty()) return std::string();
  return fmt::format("{}; its build log: {}", b.failure, GitBuildLogPath(dir, commit));
}

// A build stopped by a signal: the bisect is recorded interrupted (resumable); false, as the
// callers return when the bisect cannot go on.
Expected<bool> StopForInterruptedBuild(const std::string& dir, BisectState& s) {
  s.status = CampaignStatus::kInterrupted;
  s.result = "interrupted during a build";
  KSTACKLAB_RETURN_IF_ERROR(SaveBisectState(dir, s));
  return false;
}

// The git-range form: both ends' images ready. False when interrupted (the state saved so);
// a RuntimeError naming the build log when an end has none (the bisect stopped).
Expected<bool> ReadyEnds(const std::string& dir, BisectState& s, const std::atomic<bool>& stop,
                         const BisectHooks& hooks, const ImageCheck& check) {
  const size_t last = s.plan.profiles.size() - 1;
  for (const size_t k : {size_t{0}, last}) {
    bool interrupted = false;
    std::string failure;
    KSTACKLAB_ASSIGN_OR_RETURN(failure, ReadyKernel(dir, s, k, stop, hooks, check, &interrupted));
    if (interrupted) {
      return StopForInterruptedBuild(dir, s);
    }
    if (!failure.empty()) {
      s.status = CampaignStatus::kStopped;
      s.result = fmt::format("the {} end {} has no image: {}", k == 0 ? "good" : "bad",
                             s.plan.profiles[k].name, failure);
      KSTACKLAB_RETURN_IF_ERROR(SaveBisectState(dir, s));
      return RuntimeError(s.result);
    }
  }
  return true;
}

// The ends' figures and verdict from their ended campaign's complete blocks.
void RecordEnds(const std::vector<std::vector<double>>& blocks, const CampaignState& st,
                BisectState& s) {
  stats::BisectRule final_rule = s.rule;
  // Read the last blocks at the rule's last look even when failed boots left fewer.
  final_rule.max_end_blocks = std::max<size_t>(blocks.size(), final_rule.min_blocks);
  s.ends.judgement = stats::JudgeEnds(EndPairs(blocks), final_rule);
  double g = 0, b = 0;
  for (const auto& blk : blocks) {
    g += blk[0];
    b += blk[1];
  }
  s.ends.good_mean = blocks.empty() ? std::nan("") : g / static_cast<double>(blocks.size());
  s.ends.bad_mean = blocks.empty() ? std::nan("") : b / static_cast<double>(blocks.size());
  s.ends.boots = BootsMade(st);
  s.ends.seconds = st.boot_seconds;
  s.ends.verdict = s.ends.judgement.verdict == stats::EndsVerdict::kEstablished ? "established"
                                                                                : "no-regression";
}

// The ends, booted until their difference is established (DIR/ends). Saves the state; false when
// the bisect ends or stops there.
Expected<bool> RunEnds(const std::string& dir, BisectState& s, const EngineFactory& make_engine,
                       const std::atomic<bool>& stop, const BisectHooks& hooks) {
  const size_t last = s.plan.profiles.size() - 1;
  const std::string& good = s.plan.profiles[0].name;
  const std::string& bad = s.plan.profiles[last].name;
  const std::string cdir = dir + "/ends";
  RunnerHooks h = hooks.runner;
  h.after_block = RuleHook(cdir, s, true);
  if (hooks.note) hooks.note(EndsMeasuring{good, bad, s.rule.max_end_blocks});
  CampaignState st;
  KSTACKLAB_ASSIGN_OR_RETURN(st, RunOne(cdir, CampaignOf(s, {0, last}, s.rule.max_end_blocks, 0),
                                        s.source, make_engine, stop, h));
  bool halted = false;
  KSTACKLAB_ASSIGN_OR_RETURN(halted, Halted(dir, s, st));
  if (halted) return false;
  if (st.stop_reason.rfind("boots keep failing", 0) == 0) {
    // Without the ends there is no bisect: stopped for the user to look, not "no regression".
    s.status = CampaignStatus::kStopped;
    s.result = fmt::format("the ends' {}; their console logs are in {}", st.stop_reason, cdir);
    KSTACKLAB_RETURN_IF_ERROR(SaveBisectState(dir, s));
    return false;
  }
  std::vector<std::vector<double>> blocks;
  KSTACKLAB_ASSIGN_OR_RETURN(blocks, CompleteBlocks(cdir, st, s.question));
  RecordEnds(blocks, st, s);
  const stats::EndsJudgement& j = s.ends.judgement;
  const bool established = s.ends.verdict == "established";
  if (hooks.note) {
    hooks.note(EndsMeasured{good, s.ends.good_mean, bad, s.ends.bad_mean, j.difference, j.low,
                            j.high, j.blocks, established});
  }
  if (!established) {
    s.status = CampaignStatus::kComplete;
    s.result =
        fmt::format("no regression between the ends: {} and {} do not differ in {} after {} blocks",
                    good, bad, s.question.Describe(), j.blocks);
  }
  KSTACKLAB_RETURN_IF_ERROR(SaveBisectState(dir, s));
  return established;
}

// The outcome of a search that has ended.
BisectOutcome Outcome(const std::string& dir, const BisectState& s) {
  BisectOutcome o;
  if (s.plan.profiles.size() == 2) {
    o.ends_only = true;
    o.dir = dir;
    return o;
  }
  const stats::BisectSearch search = s.Search();
  for (size_t k : search.FirstBadRange()) o.first_bad.push_back(s.plan.profiles[k].name);
  o.last_good = s.plan.profiles[search.low()].name;
  return o;
}

// Runs (or resumes) the last step: its candidate's image made ready (the git-range form: a build
// that fails makes the step undecided, without a boot), then its campaign, then its verdict.
// Saves the state; false when the bisect halted there (interrupted, stopped).
Expected<bool> RunLastStep(const std::string& dir, BisectState& s, const EngineFactory& make_engine,
                           const std::atomic<bool>& stop, const BisectHooks& hooks,
                           const ImageCheck& check) {
  auto say = [&hooks](const BisectNote& note) {
    if (hooks.note) hooks.note(note);
  };
  const size_t last = s.plan.profiles.size() - 1;
  const size_t number = s.steps.size();
  const std::string cdir = dir + "/" + s.steps.back().dir;
  const size_t kernel = s.steps.back().kernel;
  const std::string name = s.plan.profiles[kernel].name;
  const stats::BisectSearch search = s.Search();
  say(StepStarting{number, name, s.plan.profiles[search.low()].name,
                   s.plan.profiles[search.high()].name, s.rule.max_blocks});
  bool interrupted = false;
  std::string failure;
  KSTACKLAB_ASSIGN_OR_RETURN(failure,
                             ReadyKernel(dir, s, kernel, stop, hooks, check, &interrupted));
  BisectStep& step = s.steps.back();
  if (interrupted) {
    return StopForInterruptedBuild(dir, s);
  }
  if (!failure.empty()) {
    step.verdict = "undecided";
    step.interval.theta = std::nan("");
    step.build_failure = failure;
    say(StepSkipped{number, name, failure});
    KSTACKLAB_RETURN_IF_ERROR(SaveBisectState(dir, s));
    return true;
  }
  RunnerHooks h = hooks.runner;
  h.after_block = RuleHook(cdir, s, false);
  CampaignState st;
  KSTACKLAB_ASSIGN_OR_RETURN(
      st, RunOne(cdir, CampaignOf(s, {0, kernel, last}, s.rule.max_blocks, number), s.source,
                 make_engine, stop, h));
  bool halted = false;
  KSTACKLAB_ASSIGN_OR_RETURN(halted, Halted(dir, s, st));
  if (halted) return false;
  stats::StepJudgement j;
  KSTACKLAB_ASSIGN_OR_RETURN(j, FinalStepJudgement(cdir, st, s));
  step.interval = j.interval;
  step.verdict = VerdictWord(j.verdict);
  step.boots = BootsMade(st);
  step.seconds = st.boot_seconds;
  say(StepJudged{number, name, step.boots, step.interval, j.verdict});
  KSTACKLAB_RETURN_IF_ERROR(SaveBisectState(dir, s));
  return true;
}

}  // namespace

Status RunBisect(const std::string& dir, BisectState& s, const EngineFactory& make_engine,
                 const std::atomic<bool>& stop, const BisectHooks& hooks,
                 const ImageCheck& check_image) {
  KSTACKLAB_CHECK(hooks.outcome_text != nullptr);
  s.status = CampaignStatus::kRunning;
  KSTACKLAB_RETURN_IF_ERROR(SaveBisectState(dir, s));
  if (s.range) {
    bool ready = false;
    KSTACKLAB_ASSIGN_OR_RETURN(ready, ReadyEnds(dir, s, stop, hooks, check_image));
    if (!ready) return OkStatus();
  }
  if (s.ends.verdict.empty()) {
    bool go_on = false;
    KSTACKLAB_ASSIGN_OR_RETURN(go_on, RunEnds(dir, s, make_engine, stop, hooks));
    if (!go_on) return OkStatus();
  }
  if (s.ends.verdict != "established") {
    s.status = CampaignStatus::kComplete;
    return SaveBisectState(dir, s);
  }
  // The steps.
  for (;;) {
    if (s.steps.empty() || !s.steps.back().verdict.empty()) {
      const std::optional<size_t> next = s.Search().Next();
      if (!next) break;
      BisectStep step;
      step.kernel = *next;
      step.dir = StepDirName(s.steps.size() + 1, s.plan.profiles[*next].name);
      s.steps.push_back(step);
      KSTACKLAB_RETURN_IF_ERROR(SaveBisectState(dir, s));
    }
    bool go_on = false;
    KSTACKLAB_ASSIGN_OR_RETURN(go_on, RunLastStep(dir, s, make_engine, stop, hooks, check_image));
    if (!go_on) return OkStatus();
  }
  const BisectOutcome outcome = Outcome(dir, s);
  s.result = hooks.outcome_text(outcome);
  s.status = CampaignStatus::kComplete;
  if (hooks.note) hooks.note(outcome);
  return SaveBisectState(dir, s);
}

Expected<BisectStep> RunCandidateStep(const std::string& dir, const BisectState& s,
                                      const Profile& candidate, const EngineFactory& make_engine,
                                      const std::atomic<bool>& stop, const RunnerHooks& hooks,
                                      CampaignStatus* status) {
  if (s.ends.verdict != "established") {
    return UsageError(fmt::format(
        "the ends of '{}' are {}: a step needs ends whose difference is established; measure "
        "them first (a bisect of the two ends in that directory)",
        EscapeControl(dir), s.ends.verdict.empty() ? "not measured yet" : "not different"));
  }
  const Profile& good = s.plan.profiles.front();
  const Profile& bad = s.plan.profiles.back();
  if (candidate.name == good.name || candidate.name == bad.name) {
    return UsageError(fmt::format(
        "the candidate's name '{}' is an end's; give it a name of its own, e.g. the commit id",
        EscapeControl(candidate.name)));
  }
  BisectState with = s;
  with.plan.profiles = {good, candidate, bad};
  CampaignPlan plan = CampaignOf(with, {0, 1, 2}, s.rule.max_blocks, 1000);
  KSTACKLAB_RETURN_IF_ERROR(CheckPlan(plan));
  const std::string cdir = dir + "/candidate-" + candidate.name;
  RunnerHooks h = hooks;
  h.after_block = RuleHook(cdir, with, false);
  CampaignState st;
  KSTACKLAB_ASSIGN_OR_RETURN(st, RunOne(cdir, plan, s.source, make_engine, stop, h));
  BisectStep step;
  step.dir = "candidate-" + candidate.name;
  step.boots = BootsMade(st);
  step.seconds = st.boot_seconds;
  *status = st.status;
  if (st.status != CampaignStatus::kComplete) return step;
  stats::StepJudgement j;
  KSTACKLAB_ASSIGN_OR_RETURN(j, FinalStepJudgement(cdir, st, with));
  step.interval = j.interval;
  step.verdict = VerdictWord(j.verdict);
  return step;
}

std::string BisectGitLog(const BisectState& s) {
  const auto& p = s.plan.profiles;
  std::string out = fmt::format(
      "# kstacklab bisect: {}; kernels named by their profile names (commits, for git bisect "
      "replay)\ngit bisect start\n# bad: [{}]\ngit bisect bad {}\n# good: [{}]\ngit bisect good "
      "{}\n",
      s.question.Describe(), p.back().name, p.back().name, p.front().name, p.front().name);
  for (const BisectStep& step : s.steps) {
    if (step.verdict.empty()) break;
    const std::string& name = p[step.kernel].name;
    const char* word = step.verdict == "undecided" ? "skip" : step.verdict.c_str();
    out += fmt::format("# {}: [{}] theta {} {}\ngit bisect {} {}\n", word, name,
                       Fixed(step.interval.theta), IntervalText(step.interval), word, name);
  }
  if (s.status == CampaignStatus::kComplete && s.ends.verdict == "established") {
    const std::vector<size_t> range = s.Search().FirstBadRange();
    if (range.size() == 1) out += fmt::format("# first bad commit: [{}]\n", p[range[0]].name);
  }
  return out;
}

namespace {

// The evidence of an ended bisect: good end, last good, first bad (when one), bad end, each with
// its boots over every campaign of the bisect, its mean and 95 % interval, and its change from
// the good end.
std::string Evidence(const std::string& dir, const BisectState& s) {
  const auto& p = s.plan.profiles;
  std::string out;
  // The evidence: each kernel's boots over the bisect (the ends from every campaign).
  const stats::BisectSearch search = s.Search();
  const std::vector<size_t> range = search.FirstBadRange();
  std::vector<size_t> shown = {0};
  if (search.low() != 0) shown.push_back(search.low());
  if (range.size() == 1 && range[0] != p.size() - 1) shown.push_back(range[0]);
  shown.push_back(p.size() - 1);
  std::vector<std::vector<double>> values(p.size());
  std::vector<std::string> dirs = {"ends"};
  for (const BisectStep& st : s.steps) dirs.push_back(st.dir);
  for (const std::string& d : dirs) {
    const std::string cdir = fmt::format("{}/{}", dir, d);
    auto st = LoadState(cdir);
    if (!st.ok()) continue;
    for (const Boot& b : st->boots) {
      if (b.status != BootStatus::kAccepted) continue;
      auto v = BisectBootValue(cdir, b, s.question);
      if (!v.ok()) continue;
      for (size_t k = 0; k < p.size(); ++k) {
        if (p[k].name == b.profile) values[k].push_back(*v);
      }
    }
  }
  out += fmt::format("\n{:<12} {:<24} {:>6} {:>14} {:>22}\n", "", "kernel", "boots", "mean",
                     "95 % CI");
  const double base = values[0].empty() ? std::nan("") : stats::Mean(values[0]);
  for (size_t k : shown) {
    const char* role = k == 0              ? "good end"
                       : k == p.size() - 1 ? "bad end"
                       : k == search.low() ? "last good"
                                           : "first bad";
    const std::vector<double>& v = values[k];
    const double m = v.empty() ? std::nan("") : stats::Mean(v);
    std::string ci = "-";
    if (v.size() >= 2) {
      const double half = stats::StudentTQuantile(0.975, static_cast<double>(v.size() - 1)) *
                          stats::StdDev(v) / std::sqrt(static_cast<double>(v.size()));
      ci = fmt::format("[{}, {}]", Fixed(m - half), Fixed(m + half));
    }
    const std::string pct = k == 0 || !std::isfinite(base) || base == 0
                                ? std::string()
                                : fmt::format(" ({:+.2f} %)", 100 * (m - base) / base);
    out += fmt::format("{:<12} {:<24} {:>6} {:>14} {:>22}{}\n", role, p[k].name, v.size(), Fixed(m),
                       ci, pct);
  }
  return out;
}

}  // namespace

std::string RenderBisectReport(const std::string& dir, const BisectState& s) {
  const auto& p = s.plan.profiles;
  std::string out = fmt::format(
      "bisect of {} kernels, {} .. {}; question: {}{}\n"
      "rule: theta = (candidate - good) / (bad - good), paired Fieller interval at alpha {:g} per "
      "step over the looks {}; good below 1/2, bad above, a step undecided at {} blocks is a "
      "skip\n",
      p.size(), p.front().name, p.back().name, s.question.Describe(),
      s.question.IsStrength() ? " (the kernel's offsets, read in each boot)"
                              : " (per boot: the mean over the row's repetitions)",
      s.rule.alpha, fmt::join(s.rule.Looks(s.rule.max_blocks), ","), s.rule.max_blocks);
  if (s.range) {
    out += fmt::format(
        "kernels: the first-parent line of {} from {} to {} ({} commits), each built by `{}` "
        "into {}/images\n",
        s.range->tree, s.range->good, s.range->bad, s.range->commits.size(),
        fmt::join(s.range->command, " "), dir);
  }
  const stats::EndsJudgement& e = s.ends.judgement;
  if (s.ends.verdict.empty()) {
    out += "ends: being measured\n";
  } else {
    out += fmt::format(
        "ends: {} {} vs {} {}; difference {} [{}, {}] after {} blocks ({} boots): {}\n",
        p.front().name, Fixed(s.ends.good_mean), p.back().name, Fixed(s.ends.bad_mean),
        Fixed(e.difference), Fixed(e.low), Fixed(e.high), e.blocks, s.ends.boots, s.ends.verdict);
  }
  if (!s.steps.empty()) {
    out += fmt::format("{:<5} {:<24} {:>6} {:>8} {:<22} {}\n", "step", "kernel", "boots", "theta",
                       "interval", "verdict");
  }
  uint64_t boots = s.ends.boots;
  double seconds = s.ends.seconds;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const BisectStep& st = s.steps[i];
    boots += st.boots;
    seconds += st.seconds;
    out +=
        fmt::format("{:<5} {:<24} {:>6} {:>8} {:<22} {}\n", i + 1, p[st.kernel].name,
                    st.verdict.empty() ? "-" : std::to_string(st.boots), Fixed(st.interval.theta),
                    st.verdict.empty() ? "" : IntervalText(st.interval),
                    st.verdict.empty()          ? "running"
                    : !st.build_failure.empty() ? "undecided (skip: its build failed)"
                    : st.verdict == "undecided" ? "undecided (skip)"
                                                : st.verdict);
  }
  if (s.status == CampaignStatus::kComplete && s.ends.verdict == "established" && p.size() > 2) {
    out += Evidence(dir, s);
  }
  out += fmt::format("\n{}: {} boots, {:.0f} s of boots; git bisect log: {}/{}\n",
                     s.status == CampaignStatus::kComplete
                         ? s.result
                         : fmt::format("status {}", CampaignStatusName(s.status)),
                     boots, seconds, dir, kBisectLogFile);
  return out;
}

}  // namespace kstacklab::campaign
