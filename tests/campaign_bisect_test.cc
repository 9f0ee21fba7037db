// kstacklab bisect's driver (campaign/bisect.h) with a scripted engine whose kernels carry a
// planted step: the first bad kernel found, A/A ends stopped, a candidate half-way left undecided,
// an interrupted bisect resumed without redoing a boot, the state and git log on disk. The
// git-range form over a real repository whose "make" is a script: each kernel built once in a
// worktree of its own, a failed or hanging build skipped, the user's checkout untouched.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "kstacklab/campaign/bisect.h"
#include "kstacklab/campaign/git_range.h"
#include "kstacklab/campaign/process.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/report/bisect_progress.h"
#include "kstacklab/report/campaign_progress.h"
#include "kstacklab/results/result_reader.h"
#include "kstacklab/results/results.h"
#include "test_support.h"

namespace kstacklab::campaign {
namespace {

namespace fs = std::filesystem;

// Hooks with the words RunBisect and RunCampaign require, the command line's
// (report/bisect_progress.h, report/campaign_progress.h).
BisectHooks Worded() {
  BisectHooks h;
  h.runner.stop_text = report::CampaignStopText;
  h.outcome_text = report::BisectOutcomeText;
  return h;
}

class TempDir : public testing_support::TempDir {
 public:
  TempDir() : testing_support::TempDir("kstacklab-bisect-test") {}
};

// A guest whose row "sim/a" (and strength "distinct") is `level(profile)` times (1 + noise).
class PlantedEngine : public Engine {
 public:
  PlantedEngine(std::function<double(const std::string&)> level, double noise, uint64_t seed)
      : level_(std::move(level)), noise_(noise), rng_(seed) {}
  std::atomic<bool>* raise_on_call = nullptr;
  int raise_at = -1;
  int* boots = nullptr;  // counts every boot made, across engines

  Status Check() override { return OkStatus(); }
  Status Prepare() override { return OkStatus(); }
  GuestReport Boot(const GuestJob& job, const std::atomic<bool>&) override {
    if (boots != nullptr) ++*boots;
    ++calls_;
    GuestReport g;
    if (raise_on_call != nullptr && calls_ == raise_at) {
      raise_on_call->store(true);
      g.interrupted = true;
      return g;
    }
    const Profile& p = *job.profile;
    std::normal_distribution<double> e(0, 1);
    const double v = level_(p.name) * (1 + noise_ * e(rng_));
    (void)WriteFileAtomic(job.console_path, "console of " + p.name);
    g.completed = true;
    g.facts = {"tcg", "scripted", true};
    g.files["uname"] = "6.1.0\n";
    g.files["cmdline"] = "console=ttyS0 " + p.cmdline + "\n";
    g.files["run.rc"] = "0\n";
    g.files["sysctl.log"] = "";
    RunResult r;
    r.tool_version = "test";
    r.created = "2026-12-03T12:00:00Z";
    r.label = p.name;
    r.timer = {"fake", 1e9, 10, true, 1.0};
    r.environment = {{"kernel", {{"release", "6.1.0"}}}};
    BenchmarkResult b;
    b.name = "sim/a";
    b.timing = "loop";
    for (double d : {-0.5, 0.5}) {
      Repetition rep;
      rep.iterations = 1000;
      rep.metrics["mean"] = v + d;
      b.repetitions.push_back(rep);
    }
    r.benchmarks.push_back(std::move(b));
    g.files["result.json"] = ResultToJson(r);
    if (job.strength) {
      g.files["entropy.rc"] = "0\n";
      g.files["entropy.json"] = Json{
          {"entropy",
           {{"samples", 1000},
            {"distinct", std::round(v)},
            {"shannon_bits", 1.0},
            {"min_entropy_bits", 1.0}}},
          {"environment",
           {{"design", "kernel"}}}}.dump();
    }
    return g;
  }
  BootFacts Facts() const override { return {"tcg", "scripted", true}; }

 private:
  std::function<double(const std::string&)> level_;
  double noise_;
  std::mt19937_64 rng_;
  int calls_ = 0;
};

CampaignPlan Kernels(size_t n) {
  CampaignPlan p;
  p.seed = 11;
  p.seed_given = true;
  p.run_args = {"--bench", "sim/a"};
  for (size_t i = 0; i < n; ++i) {
    Profile k{fmt::format("k{}", i), "/k"};
    k.cmdline = fmt::format("commit={}", i);
    p.profiles.push_back(k);
  }
  return p;
}

size_t IndexOf(const std::string& name) { return std::stoul(name.substr(1)); }

struct Outcome {
  BisectState state;
  std::vector<std::string> notes;
  int boots = 0;
};

Outcome Bisect(const std::string& dir, size_t n, std::function<double(const std::string&)> level,
               double noise, BisectQuestion q = {"sim/a", "mean", ""},
               stats::BisectRule rule = {}) {
  Outcome o;
  auto s = CreateBisect(dir, Kernels(n), q, rule, "test");
  EXPECT_TRUE(s.ok()) << s.error().message;
  if (!s.ok()) return o;
  uint64_t seed = 1;
  EngineFactory make = [&](const CampaignPlan&, const std::string&) {
    auto e = std::make_unique<PlantedEngine>(level, noise, seed++);
    e->boots = &o.boots;
    return e;
  };
  std::atomic<bool> stop{false};
  BisectHooks hooks = Worded();
  hooks.note = [&](const BisectNote& n) { o.notes.push_back(report::BisectNoteText(n)); };
  const Status st = RunBisect(dir, *s, make, stop, hooks);
  EXPECT_TRUE(st.ok()) << st.error().message;
  o.state = std::move(*s);
  return o;
}

TEST(BisectDriver, FindsThePlantedFirstBadKernelInLog2Steps) {
  TempDir t;
  // 8 kernels, k5 the first bad one: a 5 % step under 1 % per-boot noise.
  const Outcome o = Bisect(
      t.path() + "/b", 8, [](const std::string& k) { return IndexOf(k) >= 5 ? 105.0 : 100.0; },
      0.01);
  const BisectState& s = o.state;
  EXPECT_EQ(s.status, CampaignStatus::kComplete);
  EXPECT_EQ(s.ends.verdict, "established");
  EXPECT_EQ(s.result, "first bad kernel: k5 (last good: k4)");
  // Kernels 1..6 lie between the ends: log2(8) = 3 steps, each decided.
  ASSERT_EQ(s.steps.size(), 3u);
  for (const BisectStep& step : s.steps) {
    EXPECT_EQ(step.verdict, step.kernel >= 5 ? "bad" : "good") << step.kernel;
    EXPECT_TRUE(step.interval.bounded);
    EXPECT_GE(step.boots, 9u);  // 3 blocks of 3 boots at least
    EXPECT_EQ(step.boots % 3, 0u);
  }
  // Every boot made is one of a campaign's: the ends' and the steps'.
  uint64_t recorded = s.ends.boots;
  for (const BisectStep& step : s.steps) recorded += step.boots;
  EXPECT_EQ(recorded, static_cast<uint64_t>(o.boots));
  // On disk: the state reads back the same, the git log names the first bad kernel.
  auto loaded = LoadBisectState(t.path() + "/b");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(DumpJson(BisectStateToJson(*loaded)), DumpJson(BisectStateToJson(s)));
  auto log = ReadWholeFile(t.path() + "/b/bisect.log");
  ASSERT_TRUE(log.ok());
  EXPECT_NE(log->find("git bisect bad k7\n"), std::string::npos) << *log;
  EXPECT_NE(log->find("git bisect good k0\n"), std::string::npos) << *log;
  EXPECT_NE(log->find("# first bad commit: [k5]"), std::string::npos) << *log;
  // The report: every step and the evidence rows.
  const std::string report = RenderBisectReport(t.path() + "/b", s);
  for (const char* want : {"good end", "last good", "first bad", "bad end", "k4", "k5"}) {
    EXPECT_NE(report.find(want), std::string::npos) << want << "\n" << report;
  }
  // One line per decision: the ends, then each step.
  size_t decided = 0;
  for (const std::string& n : o.notes) decided += n.find("boots, theta") != std::string::npos;
  EXPECT_EQ(decided, 3u);
}

TEST(BisectDriver, AaEndsStopWithNoRegressionAndNoStep) {
  TempDir t;
  stats::BisectRule rule;
  rule.max_blocks = rule.max_end_blocks = 8;
  const Outcome o = Bisect(
      t.path() + "/b", 6, [](const std::string&) { return 100.0; }, 0.01, {"sim/a", "mean", ""},
      rule);
  EXPECT_EQ(o.state.status, CampaignStatus::kComplete);
  EXPECT_EQ(o.state.ends.verdict, "no-regression");
  EXPECT_TRUE(o.state.steps.empty());
  EXPECT_EQ(o.state.ends.boots, 16u);  // every block of the ends: 8 x 2
  EXPECT_NE(o.state.result.find("no regression between the ends"), std::string::npos);
}

// `bisect --report` reprints the run's figures from bisect.json: a figure above 1000 (a TCG
// boot's mean in ns, its wide interval) reads back exactly, so both print the same lines.
TEST(BisectDriver, TheReportFromDiskPrintsTheRunsFiguresDigitForDigit) {
  TempDir t;
  stats::BisectRule rule;
  rule.max_blocks = rule.max_end_blocks = 3;
  const Outcome o = Bisect(
      t.path() + "/b", 4, [](const std::string&) { return 1234.56789; }, 0.4, {"sim/a", "mean", ""},
      rule);
  ASSERT_EQ(o.state.ends.verdict, "no-regression");
  EXPECT_GT(std::abs(o.state.ends.judgement.low),
            100.0);  // wide enough that 6 digits would cut decimals
  auto loaded = LoadBisectState(t.path() + "/b");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->ends.judgement.low, o.state.ends.judgement.low);
  EXPECT_EQ(loaded->ends.judgement.high, o.state.ends.judgement.high);
  EXPECT_EQ(loaded->ends.judgement.difference, o.state.ends.judgement.difference);
  EXPECT_EQ(RenderBisectReport(t.path() + "/b", *loaded),
            RenderBisectReport(t.path() + "/b", o.state));
}

TEST(BisectDriver, ACandidateHalfWayIsUndecidedAndSkipped) {
  TempDir t;
  stats::BisectRule rule;
  rule.max_blocks = 8;
  // k3 of 0..6 is half-way between the ends; k4.. are bad.
  const Outcome o = Bisect(
      t.path() + "/b", 7,
      [](const std::string& k) {
        const size_t i = IndexOf(k);
        return i < 3 ? 100.0 : i == 3 ? 102.5 : 105.0;
      },
      0.005, {"sim/a", "mean", ""}, rule);
  const BisectState& s = o.state;
  ASSERT_FALSE(s.steps.empty());
  EXPECT_EQ(s.steps[0].kernel, 3u);  // the middle of 1..5
  EXPECT_EQ(s.steps[0].verdict, "undecided");
  EXPECT_EQ(s.steps[0].boots, 24u);  // it ran to max_blocks
  // The search goes on around the skip, and the answer says what it cannot tell.
  EXPECT_EQ(s.status, CampaignStatus::kComplete);
  EXPECT_NE(s.result.find("one of k3, k4"), std::string::npos) << s.result;
  auto log = ReadWholeFile(t.path() + "/b/bisect.log");
  ASSERT_TRUE(log.ok());
  EXPECT_NE(log->find("git bisect skip k3\n"), std::string::npos) << *log;
}

TEST(BisectDriver, ACandidateThatDoesNotBootIsSkippedWithoutBurningItsBlocks) {
  TempDir t;
  const std::string dir = t.path() + "/b";
  auto s = CreateBisect(dir, Kernels(8), {"sim/a", "mean", ""}, {}, "test");
  ASSERT_TRUE(s.ok());
  auto level = [](const std::string& k) { return IndexOf(k) >= 5 ? 105.0 : 100.0; };
  uint64_t seed = 1;
  EngineFactory make = [&](const CampaignPlan&, const std::string&) -> std::unique_ptr<Engine> {
    class Panicking : public PlantedEngine {
     public:
      using PlantedEngine::PlantedEngine;
      GuestReport Boot(const GuestJob& job, const std::atomic<bool>& stop) override {
        if (job.profile->name != "k3") return PlantedEngine::Boot(job, stop);
        GuestReport g;
        g.failure = "Kernel panic - not syncing: planted";
        return g;
      }
    };
    return std::make_unique<Panicking>(level, 0.01, seed++);
  };
  std::atomic<bool> stop{false};
  ASSERT_TRUE(RunBisect(dir, *s, make, stop, Worded()).ok());
  ASSERT_FALSE(s->steps.empty());
  EXPECT_EQ(s->steps[0].kernel, 3u);
  EXPECT_EQ(s->steps[0].verdict, "undecided");
  EXPECT_LE(s->steps[0].boots, 6u);  // stopped once k3 failed twice, not after 24 blocks
  EXPECT_EQ(s->result, "first bad kernel: k5 (last good: k4)");
}

TEST(BisectDriver, AStrengthFactIsAQuestion) {
  TempDir t;
  stats::BisectRule rule;
  rule.min_blocks = 2;
  // Offsets off (1 distinct) for k0..k2, on (about 250) from k3.
  const Outcome o = Bisect(
      t.path() + "/b", 8, [](const std::string& k) { return IndexOf(k) >= 3 ? 250.0 : 1.0; }, 0.02,
      {"", "mean", "distinct"}, rule);
  EXPECT_EQ(o.state.result, "first bad kernel: k3 (last good: k2)");
  EXPECT_EQ(o.state.steps.size(), 3u);
}

TEST(BisectDriver, AnInterruptedBisectResumesWithoutRedoingABoot) {
  TempDir t;
  auto level = [](const std::string& k) { return IndexOf(k) >= 5 ? 105.0 : 100.0; };
  // The same bisect uninterrupted, for the boots it needs.
  const Outcome whole = Bisect(t.path() + "/whole", 8, level, 0.01);
  ASSERT_EQ(whole.state.status, CampaignStatus::kComplete);

  const std::string dir = t.path() + "/b";
  auto s = CreateBisect(dir, Kernels(8), {"sim/a", "mean", ""}, {}, "test");
  ASSERT_TRUE(s.ok());
  std::atomic<bool> stop{false};
  int boots = 0;
  uint64_t seed = 1;
  int engines = 0;
  EngineFactory make = [&](const CampaignPlan&, const std::string&) {
    auto e = std::make_unique<PlantedEngine>(level, 0.01, seed++);
    e->boots = &boots;
    // A signal during the 4th boot of the second campaign (the first step).
    if (++engines == 2) {
      e->raise_on_call = &stop;
      e->raise_at = 4;
    }
    return e;
  };
  ASSERT_TRUE(RunBisect(dir, *s, make, stop, Worded()).ok());
  EXPECT_EQ(s->status, CampaignStatus::kInterrupted);
  ASSERT_EQ(s->steps.size(), 1u);
  EXPECT_EQ(s->steps[0].verdict, "");
  // Resumed from disk, as --resume does; the interrupted boot is made again, no other.
  auto resumed = LoadBisectState(dir);
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  stop.store(false);
  seed = 2;  // the step's campaign gets the engine seed it had
  ASSERT_TRUE(RunBisect(dir, *resumed, make, stop, Worded()).ok());
  EXPECT_EQ(resumed->status, CampaignStatus::kComplete);
  EXPECT_EQ(resumed->result, whole.state.result);
  uint64_t recorded = resumed->ends.boots;
  for (const BisectStep& step : resumed->steps) recorded += step.boots;
  EXPECT_EQ(static_cast<uint64_t>(boots), recorded + 1) << "only the interrupted boot is redone";
}

TEST(BisectDriver, ADamagedOrForeignStateIsRefused) {
  TempDir t;
  const Outcome o = Bisect(
      t.path() + "/b", 8, [](const std::string& k) { return IndexOf(k) >= 5 ? 105.0 : 100.0; },
      0.01);
  const Json good = BisectStateToJson(o.state);
  struct Case {
    const char* what;
    std::function<void(Json&)> edit;
  };
  const Case cases[] = {
      {"schema", [](Json& j) { j["schema"] = "kstacklab-campaign/1"; }},
      {"unknown key", [](Json& j) { j["extra"] = 1; }},
      {"step of another kernel", [](Json& j) { j["steps"][0]["kernel"] = 0; }},
      {"step dir", [](Json& j) { j["steps"][0]["dir"] = "../x"; }},
      {"verdict", [](Json& j) { j["steps"][0]["verdict"] = "maybe"; }},
      {"status", [](Json& j) { j["status"] = "sideways"; }},
      {"question",
       [](Json& j) {
         j["question"] = {{"row", "sim/a"}, {"strength", "distinct"}};
       }},
      {"rule", [](Json& j) { j["rule"]["min_blocks"] = 1; }},
      {"plan", [](Json& j) { j["plan"]["profiles"] = Json::array(); }},
      {"type", [](Json& j) { j["steps"] = "x"; }},
      {"range without its keys",
       [](Json& j) {
         j["range"] = {{"tree", "/x"}};
       }},
  };
  for (const Case& c : cases) {
    Json j = good;
    c.edit(j);
    auto s = BisectStateFromJson(j, "bisect.json");
    EXPECT_FALSE(s.ok()) << c.what;
    if (!s.ok()) {
      EXPECT_EQ(s.error().exit_code, kExitUsage) << c.what;
      EXPECT_NE(s.error().message.find("bisect.json"), std::string::npos) << s.error().message;
    }
  }
  EXPECT_TRUE(BisectStateFromJson(good, "bisect.json").ok());
}

TEST(BisectDriver, APlanAndQuestionAreCheckedBeforeABoot) {
  stats::BisectRule rule;
  EXPECT_FALSE(CheckBisectPlan(Kernels(1), rule).ok());
  EXPECT_TRUE(CheckBisectPlan(Kernels(2), rule).ok());  // the ends alone, for bisect step
  EXPECT_TRUE(CheckBisectPlan(Kernels(3), rule).ok());
  rule.min_blocks = 1;
  EXPECT_FALSE(CheckBisectPlan(Kernels(3), rule).ok());
  rule = {};
  rule.alpha = 0.5;
  EXPECT_FALSE(CheckBisectPlan(Kernels(3), rule).ok());
  EXPECT_FALSE(CheckBisectQuestion({"", "mean", ""}).ok());               // no question
  EXPECT_FALSE(CheckBisectQuestion({"sim/a", "mean", "distinct"}).ok());  // two
  EXPECT_FALSE(CheckBisectQuestion({"sim/a", "median", ""}).ok());        // not a metric
  EXPECT_FALSE(CheckBisectQuestion({"", "mean", "bits"}).ok());           // not a fact
  EXPECT_TRUE(CheckBisectQuestion({"sim/a", "p99", ""}).ok());
  EXPECT_TRUE(CheckBisectQuestion({"", "mean", "min_entropy_bits"}).ok());
}

// ---- the git-range form ------------------------------------------------------------------------

// `git -C DIR ARGS...`: its standard output; a failure fails the test.
std::string Git(const std::string& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {
      "git", "-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.org"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunProcess(argv, 60);
  EXPECT_TRUE(r.ok() && r->exit_code == 0)
      << fmt::format("{}: {}", fmt::join(argv, " "), r.ok() ? r->out + r->err : r.error().message);
  return r.ok() ? r->out : std::string();
}

// A repository standing for a kernel tree, commits c0..c7: `level` is the kernel's level (105 from
// c5 on, 100 before) and build.sh its "make": it logs each run's commit in the file given as its
// argument, fails where `broken` exists, hangs where `hang` exists, else writes out/image (the
// level, then the commit id). The user's checkout is left dirty: a tracked file changed, a file
// staged, a file untracked.
struct GitTree {
  std::string path;
  std::vector<std::string> commits;  // full ids, c0 first
  std::string builds;                // one line per build run: its commit

  GitTree(const std::string& root, const std::set<int>& broken, const std::set<int>& hang)
      : path(root + "/linux"), builds(root + "/builds") {
    fs::create_directories(path);
    Git(path, {"init", "-q"});
    EXPECT_TRUE(WriteFileAtomic(path + "/build.sh",
                                "#!/bin/sh\n"
                                "git rev-parse HEAD >>\"$1\"\n"
                                "[ -e broken ] && { echo 'error: broken' >&2; exit 2; }\n"
                                "[ -e hang ] && sleep 600\n"
                                "mkdir -p out && { cat level; git rev-parse HEAD; } >out/image\n")
                    .ok());
    for (int i = 0; i < 8; ++i) {
      EXPECT_TRUE(WriteFileAtomic(path + "/level", i >= 5 ? "105\n" : "100\n").ok());
      for (const auto& [file, set] : {std::pair{"broken", &broken}, std::pair{"hang", &hang}}) {
        std::error_code ec;
        if (set->count(i) != 0) {
          EXPECT_TRUE(WriteFileAtomic(path + "/" + file, "").ok());
        } else {
          fs::remove(path + "/" + file, ec);
        }
      }
      Git(path, {"add", "-A"});
      Git(path, {"commit", "-q", "--allow-empty", "-m", fmt::format("c{}", i)});
      commits.push_back(Trim(Git(path, {"rev-parse", "HEAD"})));
    }
    EXPECT_TRUE(WriteFileAtomic(path + "/level", "999\n").ok());
    EXPECT_TRUE(WriteFileAtomic(path + "/staged", "x\n").ok());
    Git(path, {"add", "staged"});
    EXPECT_TRUE(WriteFileAtomic(path + "/untracked", "y\n").ok());
  }

  // What the user sees of the checkout: HEAD, its branch, the status of index and working tree,
  // the worktrees.
  std::string Checkout() const {
    return Git(path, {"rev-parse", "HEAD"}) + Git(path, {"symbolic-ref", "HEAD"}) +
           Git(path, {"status", "--porcelain"}) + Git(path, {"worktree", "list", "--porcelain"});
  }

  GitRange Range(double build_timeout_s = 30) const {
    GitRange r;
    r.tree = path;
    r.good = commits.front();
    r.bad = commits.back();
    r.command = {"sh", "build.sh", builds};
    r.image = "out/image";
    r.cmdline = "quiet";
    r.build_timeout_s = build_timeout_s;
    EXPECT_TRUE(ResolveGitRange(r).ok());
    return r;
  }

  // The commits each build ran for, in order.
  std::vector<std::string> Built() const {
    auto text = ReadWholeFile(builds);
    return text.ok() ? Split(*text, '\n') : std::vector<std::string>{};
  }
};

// A kernel's level as its image says (the first line), checking the image is its own commit's.
double ImageLevel(const Profile& p) {
  auto text = ReadWholeFile(p.kernel);
  EXPECT_TRUE(text.ok()) << p.kernel;
  if (!text.ok()) return 0;
  const std::vector<std::string> lines = Split(*text, '\n');
  EXPECT_EQ(lines.size(), 2u) << *text;
  EXPECT_EQ(lines.size() == 2 ? lines[1].substr(0, 12) : "", p.name) << p.kernel;
  return std::stod(lines.at(0));
}

// An engine that boots each kernel's image: its level is read from the image file.
EngineFactory ImageEngines(int* boots, uint64_t* seed, std::atomic<bool>* raise = nullptr,
                           int raise_engine = -1) {
  auto engines = std::make_shared<int>(0);
  return [=](const CampaignPlan& plan, const std::string&) {
    std::map<std::string, double> levels;
    for (const Profile& p : plan.profiles) levels[p.name] = ImageLevel(p);
    auto e = std::make_unique<PlantedEngine>(
        [levels](const std::string& name) { return levels.at(name); }, 0.01, (*seed)++);
    e->boots = boots;
    if (++*engines == raise_engine) {
      e->raise_on_call = raise;
      e->raise_at = 4;
    }
    return e;
  };
}

TEST(BisectGitRange, BuildsEachKernelOnceAndSkipsFailedAndHangingBuilds) {
  TempDir t;
  // c3's build fails and c2's hangs: c3 is the first candidate, c2 the next.
  GitTree tree(t.path(), {3}, {2});
  const std::string user_view = tree.Checkout();
  const GitRange range = tree.Range(/*build_timeout_s=*/3);
  ASSERT_EQ(range.commits.size(), 8u);
  EXPECT_EQ(range.commits, tree.commits);
  const std::string dir = t.path() + "/b";
  auto s = CreateBisect(dir, Kernels(2), {"sim/a", "mean", ""}, {}, "test", range);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->plan.profiles.size(), 8u);
  EXPECT_EQ(s->plan.profiles[5].name, tree.commits[5].substr(0, 12));
  int boots = 0;
  uint64_t seed = 1;
  std::vector<std::string> notes;
  std::set<std::string> checked;
  BisectHooks hooks = Worded();
  hooks.note = [&](const BisectNote& n) { notes.push_back(report::BisectNoteText(n)); };
  const ImageCheck check = [&](const CampaignPlan&, Profile& k) {
    checked.insert(k.name);
    return OkStatus();
  };
  std::atomic<bool> stop{false};
  const Status st = RunBisect(dir, *s, ImageEngines(&boots, &seed), stop, hooks, check);
  ASSERT_TRUE(st.ok()) << st.error().message;
  const auto name = [&](int i) { return tree.commits[i].substr(0, 12); };
  EXPECT_EQ(s->result, fmt::format("first bad kernel: {} (last good: {})", name(5), name(4)));
  ASSERT_EQ(s->steps.size(), 4u);
  EXPECT_EQ(s->steps[0].kernel, 3u);
  EXPECT_EQ(s->steps[0].verdict, "undecided");
  EXPECT_EQ(s->steps[0].boots, 0u);
  EXPECT_NE(s->steps[0].build_failure.find("exited with status 2"), std::string::npos)
      << s->steps[0].build_failure;
  EXPECT_NE(s->steps[0].build_failure.find(dir + "/images/" + tree.commits[3] + "/build.log"),
            std::string::npos)
      << s->steps[0].build_failure;
  EXPECT_EQ(s->steps[1].kernel, 2u);
  EXPECT_EQ(s->steps[1].verdict, "undecided");
  EXPECT_NE(s->steps[1].build_failure.find("exceeded its deadline of 3 s"), std::string::npos)
      << s->steps[1].build_failure;
  EXPECT_EQ(s->steps[2].verdict, "good");
  EXPECT_EQ(s->steps[3].verdict, "bad");
  // Each kernel the bisect needed was built once, no other: the ends, then each candidate.
  const std::vector<std::string> want = {tree.commits[0], tree.commits[7], tree.commits[3],
                                         tree.commits[2], tree.commits[4], tree.commits[5]};
  EXPECT_EQ(tree.Built(), want);
  EXPECT_EQ(checked, (std::set<std::string>{name(0), name(7), name(4), name(5)}));
  size_t building = 0;
  for (const std::string& n : notes) building += n.rfind("building ", 0) == 0;
  EXPECT_EQ(building, 6u);
  // The cache: each built image and every build's log; the worktrees are gone.
  auto log = ReadWholeFile(GitBuildLogPath(dir, tree.commits[3]));
  ASSERT_TRUE(log.ok());
  EXPECT_NE(log->find("error: broken"), std::string::npos) << *log;
  EXPECT_TRUE(fs::is_regular_file(GitImagePath(dir, range, tree.commits[4])));
  EXPECT_FALSE(fs::exists(GitImagePath(dir, range, tree.commits[3])));
  EXPECT_FALSE(fs::exists(GitImagePath(dir, range, tree.commits[6])));
  EXPECT_TRUE(fs::is_empty(dir + "/worktrees"));
  // The user's checkout: HEAD, branch, index, working tree and worktrees as they were.
  EXPECT_EQ(tree.Checkout(), user_view);
  // The git log skips the kernels that did not build; the state reads back the same.
  auto glog = ReadWholeFile(dir + "/bisect.log");
  ASSERT_TRUE(glog.ok());
  EXPECT_NE(glog->find("git bisect skip " + name(3) + "\n"), std::string::npos) << *glog;
  EXPECT_NE(glog->find("# first bad commit: [" + name(5) + "]"), std::string::npos) << *glog;
  auto loaded = LoadBisectState(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(DumpJson(BisectStateToJson(*loaded)), DumpJson(BisectStateToJson(*s)));
  EXPECT_EQ(loaded->plan.profiles.size(), 8u);
  EXPECT_NE(RenderBisectReport(dir, *s).find("skip: its build failed"), std::string::npos);
}

TEST(BisectGitRange, AResumedBisectRebuildsNothingInTheCache) {
  TempDir t;
  GitTree tree(t.path(), {3}, {});
  const GitRange range = tree.Range();
  const std::string dir = t.path() + "/b";
  auto s = CreateBisect(dir, Kernels(2), {"sim/a", "mean", ""}, {}, "test", range);
  ASSERT_TRUE(s.ok()) << s.error().message;
  int boots = 0;
  uint64_t seed = 1;
  std::atomic<bool> stop{false};
  // A signal during the 4th boot of the second campaign: the step of c2 (after c3's failed build).
  ASSERT_TRUE(RunBisect(dir, *s, ImageEngines(&boots, &seed, &stop, 2), stop, Worded()).ok());
  ASSERT_EQ(s->status, CampaignStatus::kInterrupted);
  const size_t built = tree.Built().size();
  EXPECT_EQ(built, 4u);  // c0, c7, c3 (failed), c2
  auto resumed = LoadBisectState(dir);
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  stop.store(false);
  ASSERT_TRUE(RunBisect(dir, *resumed, ImageEngines(&boots, &seed), stop, Worded()).ok());
  EXPECT_EQ(resumed->status, CampaignStatus::kComplete);
  EXPECT_EQ(resumed->result,
            fmt::format("first bad kernel: {} (last good: {})", tree.commits[5].substr(0, 12),
                        tree.commits[4].substr(0, 12)));
  // Only the kernels the resumed part needed for the first time were built: c4 and c5.
  const std::vector<std::string> all = tree.Built();
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size()) << "a rebuild";
  EXPECT_EQ(all.size(), built + 2);
}

TEST(BisectGitRange, AnEndThatDoesNotBuildStopsTheBisect) {
  TempDir t;
  GitTree tree(t.path(), {0}, {});
  const std::string dir = t.path() + "/b";
  auto s = CreateBisect(dir, Kernels(2), {"sim/a", "mean", ""}, {}, "test", tree.Range());
  ASSERT_TRUE(s.ok()) << s.error().message;
  int boots = 0;
  uint64_t seed = 1;
  std::atomic<bool> stop{false};
  const Status st = RunBisect(dir, *s, ImageEngines(&boots, &seed), stop, Worded());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().exit_code, kExitRuntime);
  EXPECT_NE(st.error().message.find("the good end"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find(GitBuildLogPath(dir, tree.commits[0])), std::string::npos)
      << st.error().message;
  EXPECT_EQ(s->status, CampaignStatus::kStopped);
  EXPECT_EQ(boots, 0);
}

TEST(BisectGitRange, ARangeIsCheckedByGitBeforeABuild) {
  TempDir t;
  GitTree tree(t.path(), {}, {});
  // A side branch from c2, merged into a line of its own.
  Git(tree.path, {"branch", "side", tree.commits[2]});
  Git(tree.path, {"worktree", "add", "-q", t.path() + "/side", "side"});
  Git(t.path() + "/side", {"commit", "-q", "--allow-empty", "-m", "s1"});
  const std::string side = Trim(Git(t.path() + "/side", {"rev-parse", "HEAD"}));
  Git(t.path() + "/side", {"merge", "-q", "--no-edit", "--no-ff", tree.commits[4]});
  const std::string merged = Trim(Git(t.path() + "/side", {"rev-parse", "HEAD"}));
  struct Case {
    std::string what, tree, good, bad, want;
  };
  const Case cases[] = {
      {"not a repository", t.path(), "HEAD", "HEAD", "is not a git repository"},
      {"unknown commit", tree.path, "v9.9", tree.commits[7], "kernels good 'v9.9' is not a commit"},
      {"same commit", tree.path, tree.commits[3], tree.commits[3], "are the same commit"},
      {"not an ancestor", tree.path, tree.commits[5], tree.commits[2], "is not an ancestor"},
      {"off the first-parent line", tree.path, tree.commits[4], merged, "first-parent line"},
  };
  for (const Case& c : cases) {
    GitRange r = tree.Range();
    r.tree = c.tree;
    r.good = c.good;
    r.bad = c.bad;
    const Status st = ResolveGitRange(r);
    ASSERT_FALSE(st.ok()) << c.what;
    EXPECT_EQ(st.error().exit_code, kExitUsage) << c.what;
    EXPECT_NE(st.error().message.find(c.want), std::string::npos) << st.error().message;
    EXPECT_EQ(st.error().message.find('\n'), std::string::npos) << st.error().message;
  }
  // A merge's first parent is on the line: c2..merged is s1 and the merge, after c2.
  GitRange r = tree.Range();
  r.good = tree.commits[2];
  r.bad = merged;
  ASSERT_TRUE(ResolveGitRange(r).ok());
  EXPECT_EQ(r.commits, (std::vector<std::string>{tree.commits[2], side, merged}));
  GitRange bad_image = tree.Range();
  bad_image.image = "../vmlinuz";
  EXPECT_FALSE(CheckGitRangeValues(bad_image).ok());
  bad_image.image = "/boot/vmlinuz";
  EXPECT_FALSE(CheckGitRangeValues(bad_image).ok());
}

}  // namespace
}  // namespace kstacklab::campaign
