// The run library: the interleaved runner, the guard (signals, restore of affinity and sysctls),
// the A/B of a knob, the plan's validation, and one small real run through the entry point.
#include "kstacklab/run/run.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fakes.h"
#include "interleave.h"
#include "kstacklab/knobs/knobs.h"

namespace kstacklab::run {
namespace {

namespace fs = std::filesystem;
using fakes::FakeClock;
using fakes::FakeRow;
using fakes::FakeSysctl;
using fakes::ModelRow;
using fakes::Noop;
using fakes::ReadText;
using fakes::Script;
using knobs::AbSpec;
using knobs::OpenKnob;
using knobs::ParseAbSpec;

// A run of `repetitions` x 10 calls, no warm-up.
RunOptions TinyRun(int repetitions) {
  RunOptions opt;
  opt.repetitions = repetitions;
  opt.sampler.iterations = 10;
  opt.sampler.warmup = 0;
  opt.sampler.chunk = 10;
  return opt;
}

// RunAb of `rows` under the knob `spec_text` opened for it, for `repetitions` x 10 calls under a
// guard of its own; the knob is kept to read it afterwards.
struct AbRun {
  std::unique_ptr<knobs::Knob> knob;
  Expected<AbOutcome> out = RuntimeError("not run");
};
AbRun RunAbOf(const std::vector<workloads::WorkloadDef>& rows, const std::string& spec_text,
              int repetitions) {
  AbRun run;
  const AbSpec spec = *ParseAbSpec(spec_text);
  auto k = OpenKnob(spec);
  if (!k.ok()) {
    run.out = k.error();
    return run;
  }
  run.knob = std::move(*k);
  RunGuard guard;
  run.out =
      RunAb(rows, TinyRun(repetitions), sampler::ClockParams{}, guard, nullptr, spec, *run.knob);
  return run;
}

// --- the interleaved runner ----------------------------------------------------------------

TEST(RoundOrder, AlternatesDirection) {
  EXPECT_EQ(RoundOrder(2, 0), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(RoundOrder(2, 1), (std::vector<size_t>{1, 0}));
  EXPECT_EQ(RoundOrder(3, 2), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(RoundOrder(3, 3), (std::vector<size_t>{2, 1, 0}));
  EXPECT_TRUE(RoundOrder(0, 1).empty());
}

TEST(Runner, InterleavedRepetitionsAndSession) {
  Script a{{10}}, b{{20}};
  RunOptions opt;
  opt.repetitions = 3;
  opt.session = 2;
  opt.sampler.iterations = 50;
  opt.sampler.warmup = 0;
  opt.sampler.chunk = 16;
  std::vector<std::string> order;
  std::vector<workloads::WorkloadDef> rows = {FakeRow("a", &a), FakeRow("b", &b)};
  rows[0].baseline = true;
  auto r = RunWorkloads(rows, opt, sampler::ClockParams{1e9, 3}, nullptr,
                        [&](double, double, const std::string& row) { order.push_back(row); });
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->benchmarks.size(), 2u);
  EXPECT_EQ(r->benchmarks[1].variant, "b");
  EXPECT_TRUE(r->benchmarks[0].baseline);  // copied from the row
  EXPECT_FALSE(r->benchmarks[1].baseline);
  EXPECT_EQ(r->benchmarks[0].repetitions.size(), 3u);
  EXPECT_EQ(r->benchmarks[1].repetitions[2].session, 2);
  EXPECT_DOUBLE_EQ(r->benchmarks[1].repetitions[0].metrics.at("mean"), 20.0);
  // Repetition r of every row before r+1 of any, the direction alternating (RoundOrder).
  std::vector<std::string> expect = {
      "fake/call:a", "fake/call:b", "fake/call:b", "fake/call:a", "fake/call:a", "fake/call:b", ""};
  EXPECT_EQ(order, expect);
  EXPECT_FALSE(r->partial);
}

// A machine that slows down steadily (every call costs 1 ns more than the one before, whoever
// makes it): two identical rows must come out alike. In a fixed order the second row would pay
// for the first's calls in every round (here 400 ns more per call); in RoundOrder each row's
// calls sit at the same mean time over every two repetitions, so the means are equal.
uint64_t g_drift_calls = 0;
void DriftingCall(void*) { FakeClock::now += 1000 + g_drift_calls++; }

TEST(Runner, LinearDriftHitsIdenticalRowsAlike) {
  g_drift_calls = 0;
  std::vector<workloads::WorkloadDef> rows(2);
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].name = "fake/drift";
    rows[i].variant = std::string(i == 0 ? "a" : "b");  // not = "a": GCC 12 -Wrestrict (bug 105651)
    rows[i].setup = []() -> Expected<std::shared_ptr<void>> { return std::shared_ptr<void>(); };
    rows[i].percall = &sampler::TimePerCall<FakeClock, DriftingCall>;
    rows[i].loop = &sampler::TimeLoop<FakeClock, DriftingCall>;
  }
  RunOptions opt;
  opt.repetitions = 4;
  opt.sampler.iterations = 400;
  opt.sampler.warmup = 0;
  opt.sampler.chunk = 64;
  auto r =
      RunWorkloads(rows, opt, sampler::ClockParams{1e9, FakeClock::kReadTicks}, nullptr, nullptr);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(g_drift_calls, 4u * 2u * 400u);
  auto mean_of = [](const BenchmarkResult& b) {
    double sum = 0;
    for (const Repetition& rep : b.repetitions) sum += rep.metrics.at("mean");
    return sum / static_cast<double>(b.repetitions.size());
  };
  // Calls 0..3199 cost 1000..4199 ns: the mean over all is 2599.5 ns, and each row gets it.
  EXPECT_DOUBLE_EQ(mean_of(r->benchmarks[0]), 2599.5);
  EXPECT_DOUBLE_EQ(mean_of(r->benchmarks[1]), 2599.5);
}

TEST(Runner, SetupFailureNamesTheRowBeforeMeasuring) {
  workloads::WorkloadDef w;
  w.name = "fake/broken";
  w.setup = []() -> Expected<std::shared_ptr<void>> { return RuntimeError("returned -ENOSYS"); };
  RunOptions opt;
  auto r = RunWorkloads({w}, opt, sampler::ClockParams{1e9, 0}, nullptr, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "fake/broken: returned -ENOSYS");
}

TEST(Runner, StopGivesPartialResultWithCompletedRepetitions) {
  Script a{{10}};
  RunOptions opt;
  opt.repetitions = 5;
  opt.sampler.iterations = 10;
  opt.sampler.warmup = 0;
  opt.sampler.chunk = 16;
  std::atomic<bool> stop{false};
  int seen = 0;
  auto r = RunWorkloads({FakeRow("", &a)}, opt, sampler::ClockParams{1e9, 0}, &stop,
                        [&](double, double, const std::string&) {
                          if (++seen == 3) stop = true;  // during the third repetition
                        });
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->partial);
  EXPECT_EQ(r->benchmarks[0].repetitions.size(), 2u);
}

// --- the guard ---------------------------------------------------------------------------------

bool SameAffinity(const cpu_set_t& a) {
  cpu_set_t now;
  sched_getaffinity(0, sizeof now, &now);
  return CPU_EQUAL(&a, &now);
}

TEST(RunGuard, RejectsCpuOutsideTheAllowedSet) {
  RunGuard guard;
  Status st = guard.PinCpu(100000);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().exit_code, kExitUsage);
  EXPECT_NE(st.error().message.find("allowed"), std::string::npos);
  // A library message names the value, never a command-line flag.
  EXPECT_NE(st.error().message.find("CPU 100000"), std::string::npos) << st.error().message;
  EXPECT_EQ(st.error().message.find("--"), std::string::npos) << st.error().message;
}

TEST(RunGuard, RestoresAffinityWhenAskedAndOnDestruction) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  {
    RunGuard guard;
    ASSERT_TRUE(guard.PinCpu(sched_getcpu()).ok());
    cpu_set_t during;
    sched_getaffinity(0, sizeof during, &during);
    EXPECT_EQ(CPU_COUNT(&during), 1);
    guard.RestoreMachine();
    EXPECT_TRUE(SameAffinity(before));
    ASSERT_TRUE(guard.PinCpu(sched_getcpu()).ok());
  }
  EXPECT_TRUE(SameAffinity(before));
}

// SIGINT, SIGTERM and SIGHUP are a stop request while the guard lives, and no longer after it;
// SIGPIPE is ignored meanwhile.
TEST(RunGuard, StopSignalsRaiseTheFlagAndTheOldHandlersComeBack) {
  struct sigaction before {};
  sigaction(SIGTERM, nullptr, &before);
  {
    RunGuard guard;
    EXPECT_FALSE(guard.stop_requested());
    EXPECT_EQ(guard.stop_signal(), 0);
    ::raise(SIGTERM);
    EXPECT_TRUE(guard.stop_requested());
    EXPECT_TRUE(guard.stop_flag()->load());
    EXPECT_EQ(guard.stop_signal(), SIGTERM);
    struct sigaction pipe {};
    sigaction(SIGPIPE, nullptr, &pipe);
    EXPECT_EQ(pipe.sa_handler, SIG_IGN);
  }
  struct sigaction after {};
  sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  RunGuard again;  // one at a time, and a new one starts without a stop request
  EXPECT_FALSE(again.stop_requested());
}

// A stop signal while a sysctl is held writes its original back at once (the run then ends after
// the current chunk and restores it again).
TEST_F(FakeSysctl, StopSignalRestoresAHeldSysctlAtOnce) {
  auto k = OpenKnob(*ParseAbSpec("sysctl:kernel.stack_erasing=0,1"));
  ASSERT_TRUE(k.ok());
  RunGuard guard;
  ASSERT_TRUE(guard.HoldKnob(**k).ok());
  ASSERT_TRUE(guard.SetKnob("0").ok());
  EXPECT_EQ(Value(), "0\n");
  ::raise(SIGHUP);
  EXPECT_TRUE(guard.stop_requested());
  EXPECT_EQ(Value(), "1\n");
  EXPECT_TRUE(guard.RestoreKnob().ok());
  EXPECT_FALSE(fs::exists(Recovery()));
}

// A signal that ends the process (here SIGUSR1, and a crash alike): the handler writes the
// original back before the default action ends it. Run in a child process.
TEST_F(FakeSysctl, SignalThatEndsTheProcessRestoresTheSysctlFirst) {
  auto k = OpenKnob(*ParseAbSpec("sysctl:kernel.stack_erasing=0,1"));
  ASSERT_TRUE(k.ok());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    RunGuard guard;
    if (!guard.HoldKnob(**k).ok() || !guard.SetKnob("0").ok()) ::_exit(3);
    ::raise(SIGUSR1);
    ::_exit(4);  // not reached: SIGUSR1's default action ends the process
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGUSR1);
  EXPECT_EQ(Value(), "1\n");
  // The recovery file is still there (the process died): recovering is harmless.
  auto r = knobs::RecoverPending();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 1u);
  EXPECT_FALSE(fs::exists(Recovery()));
}

// --- the A/B of a knob -------------------------------------------------------------------------

// A row whose setup logs the knob's value: the A/B order as the workloads see it.
std::vector<std::string>* g_seen = nullptr;
std::string g_path;

TEST_F(FakeSysctl, RunAbInterleavesAndWritesOneVariantPerValue) {
  std::vector<std::string> seen;
  g_seen = &seen;
  g_path = (dir_ / "sys/kernel/stack_erasing").string();
  workloads::WorkloadDef w;
  w.name = "test/noop";
  w.setup = []() -> Expected<std::shared_ptr<void>> {
    g_seen->push_back(ReadText(g_path));
    return std::shared_ptr<void>();
  };
  w.percall = &sampler::TimePerCall<FakeClock, Noop>;
  w.loop = &sampler::TimeLoop<FakeClock, Noop>;
  workloads::WorkloadDef v = w;
  v.variant = "x";
  AbRun ab = RunAbOf({w, v}, "sysctl:kernel.stack_erasing=0,1", 4);
  ASSERT_TRUE(ab.out.ok()) << ab.out.error().message;
  const RunResult* r = &ab.out->result;
  EXPECT_FALSE(ab.out->failure);
  // Setup runs for both rows under each value: 0 1 | 1 0 | 0 1 | 1 0.
  const std::vector<std::string> want = {"0\n", "0\n", "1\n", "1\n", "1\n", "1\n", "0\n", "0\n",
                                         "0\n", "0\n", "1\n", "1\n", "1\n", "1\n", "0\n", "0\n"};
  EXPECT_EQ(seen, want);
  ASSERT_EQ(r->benchmarks.size(), 4u);
  // Each row keeps its own variant and carries the value as its knob; the file joins them.
  const std::vector<std::pair<std::string, std::string>> keys = {{"", "kernel.stack_erasing=0"},
                                                                 {"x", "kernel.stack_erasing=0"},
                                                                 {"", "kernel.stack_erasing=1"},
                                                                 {"x", "kernel.stack_erasing=1"}};
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(r->benchmarks[i].variant, keys[i].first) << i;
    EXPECT_EQ(r->benchmarks[i].knob, keys[i].second) << i;
  }
  const Json written = Json::parse(ResultToJson(*r));
  EXPECT_EQ(written["benchmarks"][1]["variant"], "x,kernel.stack_erasing=0");
  EXPECT_EQ(written["benchmarks"][2]["variant"], "kernel.stack_erasing=1");
  for (const BenchmarkResult& b : r->benchmarks) {
    EXPECT_EQ(b.repetitions.size(), 4u);
    EXPECT_EQ(b.histogram.count(), 40u);
  }
  EXPECT_FALSE(r->partial);
  EXPECT_EQ(Value(), "1\n");
  EXPECT_FALSE(fs::exists(Recovery()));
}

TEST_F(FakeSysctl, RunAbRestoresWhenARowFails) {
  workloads::WorkloadDef w;
  w.name = "test/fails";
  w.setup = []() -> Expected<std::shared_ptr<void>> { return RuntimeError("setup failed"); };
  w.percall = &sampler::TimePerCall<FakeClock, Noop>;
  w.loop = &sampler::TimeLoop<FakeClock, Noop>;
  RunOptions opt;
  opt.repetitions = 2;
  const AbSpec spec = *ParseAbSpec("sysctl:kernel.stack_erasing=0,1");
  auto k = OpenKnob(spec);
  ASSERT_TRUE(k.ok());
  RunGuard guard;
  auto r = RunAb({w}, opt, sampler::ClockParams{}, guard, nullptr, spec, **k);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(Value(), "1\n");
  EXPECT_FALSE(fs::exists(Recovery()));
}

TEST_F(FakeSysctl, RunAbStopsEarlyAndRestores) {
  workloads::WorkloadDef w;
  w.name = "test/noop";
  w.setup = []() -> Expected<std::shared_ptr<void>> { return std::shared_ptr<void>(); };
  w.percall = &sampler::TimePerCall<FakeClock, Noop>;
  w.loop = &sampler::TimeLoop<FakeClock, Noop>;
  RunOptions opt;
  opt.repetitions = 3;
  opt.sampler.iterations = 10;
  opt.sampler.chunk = 10;
  const AbSpec spec = *ParseAbSpec("sysctl:kernel.stack_erasing=0,1");
  auto k = OpenKnob(spec);
  ASSERT_TRUE(k.ok());
  RunGuard guard;
  ::raise(SIGINT);  // the guard's stop request, before the first repetition
  ASSERT_TRUE(guard.stop_requested());
  auto r = RunAb({w}, opt, sampler::ClockParams{}, guard, nullptr, spec, **k);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->result.partial);
  EXPECT_TRUE(r->result.benchmarks.empty());
  EXPECT_EQ(Value(), "1\n");
}

// The model knob in the A/B: the values' rows in ABBA order, one variant per value, and nothing
// written to the machine (no recovery file, the fake sysctl untouched).
TEST_F(FakeSysctl, RunAbWithAModelKnobInterleavesTheRows) {
  std::vector<std::string> seen;
  const Json empty = Json{{"handler", "empty"}};
  const std::vector<workloads::WorkloadDef> rows = {
      ModelRow("model/kstack", "off", empty, &seen),
      ModelRow("model/kstack", "percpu-prng", empty, &seen),
      ModelRow("model/kstack", "siphash", empty, &seen)};
  AbRun ab = RunAbOf(rows, "model:policy=off,percpu-prng", 4);
  ASSERT_TRUE(ab.out.ok()) << ab.out.error().message;
  const RunResult* r = &ab.out->result;
  const std::vector<std::string> want = {"off", "percpu-prng", "percpu-prng", "off",
                                         "off", "percpu-prng", "percpu-prng", "off"};
  EXPECT_EQ(seen, want);
  ASSERT_EQ(r->benchmarks.size(), 2u);
  EXPECT_EQ(r->benchmarks[0].variant, "off");
  EXPECT_TRUE(r->benchmarks[0].baseline);
  EXPECT_EQ(r->benchmarks[1].variant, "percpu-prng");
  EXPECT_FALSE(r->benchmarks[1].baseline);
  for (const BenchmarkResult& b : r->benchmarks) EXPECT_EQ(b.repetitions.size(), 4u);
  EXPECT_EQ(*ab.knob->Read(), "off");  // the last value set (repetition 3: percpu-prng, off)
  EXPECT_FALSE(fs::exists(Recovery()));
  EXPECT_EQ(Value(), "1\n");
}

// A row that caps its repetitions (a fork of 1 GiB) is measured in the first A/B repetitions
// only, as in a run without --ab: each A/B repetition counts, not just the one in progress.
TEST_F(FakeSysctl, RunAbHonoursARowsRepetitionCap) {
  std::vector<std::string> seen;
  const Json empty = Json{{"handler", "empty"}};
  std::vector<workloads::WorkloadDef> rows = {
      ModelRow("model/kstack", "off", empty, &seen),
      ModelRow("model/kstack", "percpu-prng", empty, &seen)};
  rows[1].max_repetitions = 2;
  AbRun ab = RunAbOf(rows, "model:policy=off,percpu-prng", 4);
  ASSERT_TRUE(ab.out.ok()) << ab.out.error().message;
  const RunResult* r = &ab.out->result;
  ASSERT_EQ(r->benchmarks.size(), 2u);
  EXPECT_EQ(r->benchmarks[0].repetitions.size(), 4u);
  EXPECT_EQ(r->benchmarks[1].repetitions.size(), 2u);
}

// MeasureRows: the selected rows a model knob does not take are named in one warning; with no
// row it takes, exit 2 before anything is measured.
TEST_F(FakeSysctl, MeasureRowsWarnsAboutRowsTheModelKnobDoesNotTake) {
  const Json empty = Json{{"handler", "empty"}};
  std::vector<std::string> seen;
  const std::vector<workloads::WorkloadDef> rows = {
      ModelRow("model/kstack", "off", empty, &seen),
      ModelRow("model/kstack", "percpu-prng", empty, &seen),
      ModelRow("model/rng", "prandom", Json::object(), &seen),
      ModelRow("model/rng", "siphash", Json::object(), &seen)};
  RunOptions opt = TinyRun(2);
  std::vector<std::string> warnings;
  RunHooks hooks;
  hooks.warn = [&](const std::string& w) { warnings.push_back(w); };
  const std::optional<AbSpec> spec = *ParseAbSpec("model:policy=off,percpu-prng");
  RunGuard guard;
  auto r = MeasureRows(spec, rows, opt, sampler::ClockParams{}, guard, hooks);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->result.benchmarks.size(), 2u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("2 selected rows"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("model/rng"), std::string::npos) << warnings[0];
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "prandom"), 0);
  seen.clear();
  auto none = MeasureRows(spec, {rows[2], rows[3]}, opt, sampler::ClockParams{}, guard, hooks);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().exit_code, kExitUsage);
  EXPECT_NE(none.error().message.find("select the model suite"), std::string::npos);
  EXPECT_TRUE(seen.empty());  // nothing set up, nothing measured
}

// --- the plan ----------------------------------------------------------------------------------

// A plan that writes nowhere and records nothing: only its own checks can fail.
RunPlan QuietPlan() {
  RunPlan p;
  p.benches = {"syscall/getpid:raw"};
  p.output = "/dev/null";
  p.record_in_store = false;
  return p;
}

TEST(ValidatePlan, ResolvesTheDefaults) {
  RunPlan p = QuietPlan();
  p.output.reset();
  auto v = ValidatePlan(p);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->plan.label, DefaultLabel());
  ASSERT_TRUE(v->plan.output.has_value());
  EXPECT_EQ(v->plan.output->rfind("kstacklab-", 0), 0u) << *v->plan.output;
  EXPECT_EQ(*v->plan.output, v->default_stem + ".json");
  ASSERT_EQ(v->rows.size(), 1u);
  EXPECT_EQ(v->rows[0].variant, "raw");
  EXPECT_FALSE(v->ab.has_value());
}

// Every check, with the library's own names and with a caller's: the message says the caller's,
// and the library's never names a flag.
TEST(ValidatePlan, EveryErrorNamesTheFieldAsTheCallerDoes) {
  struct Case {
    const char* what;
    void (*change)(RunPlan&);
    const char* library;  // in the message with the default names
    const char* caller;   // in the message with the caller's names
  };
  const Case cases[] = {
      {"iterations", [](RunPlan& p) { p.iterations = 0; }, "iterations 0 is out of range",
       "-I 0 is out of range"},
      {"reps x sessions", [](RunPlan& p) { p.repetitions = 60000, p.sessions = 2; },
       "repetitions 60000 x sessions 2 is more than", "-R 60000 x -S 2 is more than"},
      {"label", [](RunPlan& p) { p.label = "a\x01"; }, "label contains the control character",
       "-L contains the control character"},
      {"output", [](RunPlan& p) { p.output = ""; }, "output needs a file name",
       "-O needs a file name"},
      {"suite", [](RunPlan& p) { p.suites = {"nosuch"}; }, "suite: no suite 'nosuch'",
       "-U: no suite 'nosuch'"},
      {"bench", [](RunPlan& p) { p.benches = {"nosuch/*"}; }, "bench: pattern 'nosuch/*'",
       "-B: pattern 'nosuch/*'"},
      {"param", [](RunPlan& p) { p.params = {"nosuch=1"}; }, "param nosuch=1: unknown key",
       "-P nosuch=1: unknown key"},
      {"size", [](RunPlan& p) { p.benches.clear(), p.suites = {"model"}, p.repetitions = 100000; },
       "lower repetitions (a repetition can hold more iterations), or split the run by "
       "suite/bench",
       "lower -R (a repetition can hold more -I), or split the run by -U/-B"},
      {"two knobs",
       [](RunPlan& p) {
         p.ab = {"model:policy=off,siphash", "model:strategy=generic,nt"};
       },
       "ab: one A/B knob per run, got 2", "-A: one A/B knob per run, got 2"},
      {"knob and sessions", [](RunPlan& p) { p.ab = {"model:policy=off,siphash"}, p.sessions = 2; },
       "ab and sessions 2 exclude each other", "-A and -S 2 exclude each other"},
  };
  PlanNames caller;
  caller.iterations = "-I", caller.repetitions = "-R", caller.sessions = "-S";
  caller.label = "-L", caller.output = "-O", caller.suite = "-U", caller.bench = "-B";
  caller.param = "-P", caller.ab = "-A";
  for (const Case& c : cases) {
    RunPlan p = QuietPlan();
    c.change(p);
    auto lib = ValidatePlan(p);
    ASSERT_FALSE(lib.ok()) << c.what;
    EXPECT_EQ(lib.error().exit_code, kExitUsage) << c.what;
    EXPECT_NE(lib.error().message.find(c.library), std::string::npos)
        << c.what << ": " << lib.error().message;
    EXPECT_EQ(lib.error().message.find("--"), std::string::npos) << lib.error().message;
    auto named = ValidatePlan(p, caller);
    ASSERT_FALSE(named.ok()) << c.what;
    EXPECT_NE(named.error().message.find(c.caller), std::string::npos)
        << c.what << ": " << named.error().message;
  }
}

TEST(ValidatePlan, ParsesTheKnobAndRefusesAMalformedOne) {
  RunPlan p = QuietPlan();
  p.suites = {"model"};
  p.benches.clear();
  p.ab = {"model:policy=off,percpu-prng"};
  auto v = ValidatePlan(p);
  ASSERT_TRUE(v.ok()) << v.error().message;
  ASSERT_TRUE(v->ab.has_value());
  EXPECT_EQ(v->ab->values, (std::vector<std::string>{"off", "percpu-prng"}));
  p.ab = {"nosuch"};
  auto bad = ValidatePlan(p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("expected KIND:NAME=V1,V2"), std::string::npos);
}

// --- the entry point ---------------------------------------------------------------------------

// A small real run: the result stamped with how it was made, the machine as it was.
TEST(Run, MeasuresAndStampsAndRestoresTheAffinity) {
  RunPlan p = QuietPlan();
  p.iterations = 200;
  p.repetitions = 2;
  p.warmup = 0;
  p.label = "unit";
  auto v = ValidatePlan(p);
  ASSERT_TRUE(v.ok()) << v.error().message;
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  RunGuard guard;
  std::vector<std::string> warnings;
  double last_fraction = -1;
  RunHooks hooks;
  hooks.warn = [&](const std::string& w) { warnings.push_back(w); };
  hooks.progress = [&](double f, double, const std::string&) { last_fraction = f; };
  auto out = run::Run(*v, guard, hooks);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(SameAffinity(before));
  EXPECT_FALSE(out->failure);
  const RunResult& r = out->result;
  EXPECT_FALSE(r.partial);
  EXPECT_EQ(r.label, "unit");
  EXPECT_TRUE(IsUtcTimestamp(r.created));
  EXPECT_GT(r.timer.freq_hz, 0);
  EXPECT_TRUE(r.environment.is_object() && !r.environment.empty());
  ASSERT_EQ(r.benchmarks.size(), 1u);
  EXPECT_EQ(r.benchmarks[0].repetitions.size(), 2u);
  EXPECT_EQ(r.run.iterations, 200u);
  EXPECT_EQ(r.run.repetitions, 2u);
  EXPECT_EQ(r.run.sessions, 1);
  EXPECT_EQ(r.run.timing, "percall");
  EXPECT_EQ(r.run.benches, (std::vector<std::string>{"syscall/getpid:raw"}));
  EXPECT_EQ(r.run.order, "interleaved by repetition, alternating direction");
  EXPECT_EQ(r.run.warnings, warnings);  // each warning shown once, and kept in the file
  EXPECT_EQ(last_fraction, 1.0);
}

TEST(Run, SessionsNeedTheirCommandBeforeAnythingIsMeasured) {
  RunPlan p = QuietPlan();
  p.sessions = 2;
  auto v = ValidatePlan(p);
  ASSERT_TRUE(v.ok()) << v.error().message;
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  RunGuard guard;
  auto out = run::Run(*v, guard, RunHooks{});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().exit_code, kExitRuntime);
  EXPECT_TRUE(SameAffinity(before));
}

}  // namespace
}  // namespace kstacklab::run
