// The run library: one measurement of the running kernel, from a plan to a stamped result
// (DESIGN.md "Data flow"; the command `kstacklab run` is its glue, campaigns and remote engines
// call it too). The flow is linear:
//
//   RunPlan --ValidatePlan--> ValidPlan --Run(guard, hooks)--> RunOutcome --WriteResult--> file
//
//  * ValidatePlan checks the whole plan — counts, label, selection, params, the A/B knob spec,
//    the size of the result, where the result goes — and touches nothing on the machine; its
//    errors are UsageErrors (exit 2).
//  * Run measures: it restores what a killed A/B run left changed, pins the CPU, switches the
//    scheduling class, calibrates the timer, captures the environment, opens and holds the A/B
//    knob, and only then makes the first timed call; every check that needs the machine (the
//    CPU is allowed, the sysctl exists and takes each value) happens before that call.
//    Interleaved order: repetition r of every row before r+1 of any, alternating direction; with
//    a knob, ABBA over its values.
//  * Everything Run changes on the machine is restored by the RunGuard on every path: the CPU
//    affinity and the scheduling class when Run returns (the write after it runs unpinned); a
//    sysctl when the A/B ends, on error, and from the guard's handler on any signal that ends
//    the process (the original value written back before it dies; SIGKILL: the recovery file,
//    include/kstacklab/knobs/knobs.h).
//
// Units: counts are calls or repetitions, times ns. Messages name values, never a command-line
// flag: a caller words them with its own names for the plan's fields (PlanNames; the CLI passes
// its flags). Nothing here prints: warnings, progress and session starts go to RunHooks.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/knobs/knobs.h"
#include "kstacklab/results/results.h"
#include "kstacklab/sampler/sampler.h"
#include "kstacklab/workloads/workload.h"

namespace kstacklab::run {

// Bounds of a plan (ValidatePlan). A result file holds ResultLimits::kMaxRepetitions per row;
// a whole run at most kMaxRunRepetitions (about 450 bytes of JSON each: 45 MB of the 64 MiB a
// reader takes, room left for the histograms).
struct RunLimits {
  static constexpr uint64_t kMaxIterations = ResultLimits::kMaxIterations;
  static constexpr uint64_t kMaxRepetitions = ResultLimits::kMaxRepetitions;
  static constexpr uint64_t kMaxSessions = 100;
  static constexpr uint64_t kMaxRunRepetitions = 100000;
  static constexpr double kMinStallThresholdNs = 1;
  static constexpr double kMaxStallThresholdNs = 1e10;
};
static_assert(RunLimits::kMaxRunRepetitions * 450 < ResultLimits::kMaxFileBytes * 3 / 4);

enum class SchedClass { kNormal, kFifo };

// What to measure, how, and where the result goes. Defaults are `kstacklab run`'s.
struct RunPlan {
  // What: the union of the suites' rows and the rows a glob matches (neither: kDefaultSuite),
  // with the KEY=VALUE settings applied (workload.h SelectWorkloads, ApplyRunParams).
  std::vector<std::string> suites;
  std::vector<std::string> benches;
  std::vector<std::string> params;
  // How.
  uint64_t iterations = 50000;  // timed calls per repetition, 1..kMaxIterations
  uint64_t repetitions = 60;    // per session, 1..kMaxRepetitions
  uint64_t warmup = 10000;      // untimed calls before each repetition, 0..kMaxIterations
  int cpu = -1;                 // the CPU to pin to; -1: the one Run starts on
  sampler::TimingMode timing = sampler::TimingMode::kPerCall;
  SchedClass sched = SchedClass::kNormal;  // kFifo needs CAP_SYS_NICE; without it, a warning
  int sessions = 1;  // fresh processes, each measuring `repetitions` (1..kMaxSessions)
  double stall_threshold_ns =
      sampler::kDefaultStallThresholdNs;  // > it: a host stall (1 ns .. 10 s)
  std::vector<std::string> ab;            // the A/B knob (knobs.h AbSpec form); at most one
  // Where. `label` "" = DefaultLabel(); `output` nullopt = the default name
  // (kstacklab-LABEL-TIME.json in the working directory, never replacing a file), "-" = stdout.
  std::string label;
  std::optional<std::string> output;
  bool record_in_store = true;  // the caller records it (store.h); checked here
  std::string store;            // "" = DefaultStorePath()
  // >= 0: this process is session K of a parent's run (RunHooks::session_command): it measures
  // here, records nothing in the store, and its environment warnings are shown by session 0 only.
  int session = -1;
};

// How the caller names each field of the plan in messages ("{repetitions} 60000 x {sessions} 2
// is more than ..."): the CLI passes its flags, others keep these defaults.
struct PlanNames {
  std::string suite = "suite", bench = "bench", param = "param";
  std::string iterations = "iterations", repetitions = "repetitions", warmup = "warmup";
  std::string sessions = "sessions", stall_threshold = "stall threshold";
  std::string cpu = "cpu", sched = "sched", ab = "ab";
  std::string label = "label", output = "output", store = "store", no_store = "no store";
};

// A plan that passed ValidatePlan, with its defaults resolved.
struct ValidPlan {
  RunPlan plan;                              // label set; output set (the default name, when none)
  PlanNames names;                           // what Run's messages call the fields
  std::vector<workloads::WorkloadDef> rows;  // selected, params applied (unavailable ones kept)
  std::optional<knobs::AbSpec> ab;           // the parsed knob spec
  std::string default_stem;                  // the default name without ".json" ("" when given)
  int default_number = 1;                    // 1: STEM.json; N > 1: STEM-N.json
  std::string StorePath() const;             // plan.store, or DefaultStorePath()
};

// Checks the whole plan without changing anything (the output's directory is probed with a file
// created and removed): every failure is a UsageError naming the value and the fix, worded with
// `names`. Out-of-range counts, repetitions x sessions over a file's limit, a label a reader
// would refuse, an output that cannot be written or is the store, a store location that cannot
// hold one, an unknown suite/glob/param, more than one or a malformed knob spec, a sessioned
// A/B, and a run of more than kMaxRunRepetitions repetitions over all rows, values and sessions.
Expected<ValidPlan> ValidatePlan(const RunPlan& plan, const PlanNames& names = PlanNames{});

// The default label: the kernel release (uname -r), "run" if unknown.
std::string DefaultLabel();

// The CPUs this process may run on, e.g. "0-1" ("unknown" when it cannot be read).
std::string AllowedCpus();

// The one guard of a run, one per process at a time (CHECKed). From construction to destruction
// it owns SIGINT, SIGTERM and SIGHUP (a stop request: the run ends after the current chunk of
// calls, keeping completed repetitions; SIGHUP is left ignored when it was, under nohup) and
// ignores SIGPIPE (a reader that goes away fails the write with EPIPE instead of killing the run
// before its file is written). It holds every change Run makes to the machine and restores them:
// RestoreMachine() (Run calls it before returning) and the destructor put the CPU affinity, the
// scheduling class and a held sysctl back; a signal that ends the process (SIGQUIT, SIGSEGV,
// SIGABRT, ... — every one whose default action is to end it and that is not ignored) first
// writes a held sysctl's original value back (async-signal-safe), then runs the previous handler
// or the default action. The affinity and scheduling class are the process's own and end with
// it. The destructor reinstates the previous signal handlers.
class RunGuard {
 public:
  RunGuard();
  ~RunGuard();
  RunGuard(const RunGuard&) = delete;
  RunGuard& operator=(const RunGuard&) = delete;

  // The stop request, and the signal that made it (0: none).
  bool stop_requested() const;
  int stop_signal() const;
  const std::atomic<bool>* stop_flag() const;

  // Pins the calling thread to `cpu`. Not in the allowed set -> UsageError naming the CPU and
  // the allowed ones; a failed call -> RuntimeError. The first pin's mask is the one restored.
  Status PinCpu(int cpu);
  // SCHED_FIFO priority 1; not permitted -> RuntimeError with the reason, nothing changed.
  Status EnableFifo();
  // Holds a machine knob (a sysctl): knobs::ScopedKnob::Begin (its lock, the recovery file), then
  // the signal-time restore of its original value. At most one at a time (CHECKed).
  Status HoldKnob(knobs::Knob& knob);
  // Sets the held knob and reads it back (ScopedKnob::Set).
  Status SetKnob(const std::string& value);
  // The held knob's original value ("" when none is held).
  std::string KnobOriginal() const;
  // Writes the held knob's original back and lets it go (its recovery file is removed; kept
  // when the write fails, for `recover`). Ok when none is held.
  Status RestoreKnob();
  // Restores the CPU affinity and the scheduling class (idempotent). RestoreKnob is separate:
  // a knob's restore can fail, and Run reports that failure with the result.
  void RestoreMachine();

 private:
  struct Held;
  std::unique_ptr<Held> held_;
};

// What Run reports while it works. Every member may be empty.
struct RunHooks {
  // A warning, once, when it arises (environment, skipped rows, knobs): one line, no prefix.
  std::function<void(const std::string&)> warn;
  // Progress of the measurement: fraction done in [0, 1], seconds elapsed, the row measured.
  std::function<void(double fraction, double elapsed_s, const std::string& row)> progress;
  // A session (0-based) of `sessions` is starting (sessions > 1 only).
  std::function<void(int session, int sessions)> session_started;
  // sessions > 1: the command line (argv[0] an executable's path) that measures session `k` of
  // `plan` in a fresh process and writes its result document on stdout (RunPlan::session = k,
  // output "-"). Required then: without it Run returns a RuntimeError before measuring.
  std::function<std::vector<std::string>(const RunPlan& plan, int session)> session_command;
};

// A run's end: the stamped result (version, time, label, environment, timer, RunContext).
struct RunOutcome {
  // partial when stopped (RunGuard::stop_requested), when a session ended early, or on a
  // mid-run failure; rows that completed no repetition are dropped.
  RunResult result;
  // A runtime failure after something was measured (a knob that could not be set mid-run, or
  // not restored): the result keeps what was measured; the caller reports the failure.
  std::optional<Error> failure;
  // Stopped before any repetition completed: there is nothing to write.
  bool stopped_before_measuring() const { return result.partial && result.benchmarks.empty(); }
};

// Measures the plan (the module comment says in what order). Errors before the first timed call
// (a CPU not allowed, a knob that does not exist or refuses a value, a row whose setup fails, no
// session_command for sessions > 1) return an Error and leave the machine as it was; a stop
// request or a mid-run failure returns the outcome with what was measured.
Expected<RunOutcome> Run(const ValidPlan& plan, RunGuard& guard, const RunHooks& hooks);

// Writes the result document where the plan says: plan.output through WriteFileAtomic ("-" =
// stdout), or the default name created exclusively, taking STEM-2.json, STEM-3.json, ... when
// another run took it meanwhile. Returns the path written; errors as WriteFileAtomic's.
Expected<std::string> WriteResult(const ValidPlan& plan, const RunResult& result);

}  // namespace kstacklab::run
