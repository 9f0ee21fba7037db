// `kstacklab run`: glue of the run library (include/kstacklab/run/run.h) — parse the flags into a
// RunPlan, validate it, run it under the guard, write the file, print the summary, record the
// run in the store.
#include <fmt/format.h>
#include <signal.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cli_util.h"
#include "command.h"
#include "kstacklab/common/text.h"
#include "kstacklab/report/summary.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/run/run.h"
#include "kstacklab/workloads/workload.h"
#include "run_support.h"

namespace kstacklab::cli {
namespace {

// The flags as given. Counts arrive as text and go through ParseCount (CLI11 2.1 accepts "-5"
// and wraps).
struct RunFlags {
  std::vector<std::string> suites;
  std::vector<std::string> benches;
  std::string iterations = "50000";
  std::string repetitions = "60";
  std::string warmup = "10000";
  std::string cpu;  // "" = the CPU we start on
  std::string sessions = "1";
  std::string stall_threshold;  // "" = the default
  std::string timing = "percall";
  std::string sched = "normal";
  std::string label;
  std::string output;
  CLI::Option* output_option = nullptr;  // -o given (an empty name is then an error)
  std::string store;
  bool no_store = false;
  int internal_session = -1;        // >= 0: this process is session K of a parent run
  bool internal_validate = false;   // check everything, measure nothing
  std::vector<std::string> ab;      // --ab KIND:NAME=V1,V2 (knobs.h)
  std::vector<std::string> params;  // --param KEY=VALUE (WorkloadDef::run_params)
};

// The flags' names for the library's messages.
const run::PlanNames& FlagNames() {
  static const run::PlanNames k{.suite = "--suite",
                                .bench = "--bench",
                                .param = "--param",
                                .iterations = "--iterations",
                                .repetitions = "--repetitions",
                                .warmup = "--warmup",
                                .sessions = "--sessions",
                                .stall_threshold = "--stall-threshold",
                                .cpu = "--cpu",
                                .sched = "--sched",
                                .ab = "--ab",
                                .label = "--label",
                                .output = "-o",
                                .store = "--store",
                                .no_store = "--no-store"};
  return k;
}

void AddRunFlags(CLI::App& sub, RunFlags* f) {
  sub.add_option("--suite", f->suites,
                 "Suite to run (repeatable; default: syscall; see `kstacklab list`)");
  sub.add_option("--bench", f->benches,
                 "Benchmark glob, matched against name or name:variant (repeatable)");
  sub.add_option("--iterations", f->iterations,
                 "Timed calls per repetition (the lists' runs: 10000000 x 1 repetition)")
      ->capture_default_str();
  sub.add_option("--repetitions", f->repetitions,
                 "Repetitions per benchmark (the statistical samples)")
      ->capture_default_str();
  sub.add_option("--warmup", f->warmup, "Untimed calls before each repetition")
      ->capture_default_str();
  sub.add_option("--cpu", f->cpu, "CPU to pin to (default: the one we start on)");
  sub.add_option("--stall-threshold", f->stall_threshold,
                 "Count a call above this as a host stall (e.g. 10us, 500ns, 1ms; 1ns to 10s)")
      ->type_name("DURATION")
      ->default_str("10us");
  sub.add_option("--timing", f->timing,
                 "percall: time every call (tails); loop: time the batch (mean only)")
      ->check(CLI::IsMember({"percall", "loop"}))
      ->capture_default_str();
  sub.add_option("--sched", f->sched,
                 "Scheduling class while measuring: normal or fifo (needs root)")
      ->check(CLI::IsMember({"normal", "fifo"}))
      ->capture_default_str();
  sub.add_option("--sessions", f->sessions,
                 "Run the repetitions in this many fresh processes (each runs --repetitions)")
      ->capture_default_str();
  sub.add_option("--label", f->label,
                 "Name of the configuration measured (default: kernel release)");
  f->output_option = sub.add_option(
      "-o,--output", f->output, "Result file ('-' = stdout; default: kstacklab-LABEL-TIME.json)");
  CLI::Option* store = AddStoreOption(sub, &f->store);
  sub.add_flag("--no-store", f->no_store, "Do not record the result in the store")->excludes(store);
  sub.add_option("--param", f->params,
                 "KEY=VALUE setting of the rows that take it (repeatable): size=256M for micromm "
                 "(the mapping, a multiple of 2 MiB; default 1G)");
  sub.add_option("--ab", f->ab,
                 "Interleaved A/B of a knob, e.g. sysctl:kernel.stack_erasing=0,1, "
                 "model:policy=off,percpu-prng, model:strategy=generic,rep-stos: one variant per "
                 "value, a sysctl's original always restored (docs/ab.md)")
      ->excludes(sub.get_option("--sessions"));
  sub.add_option("--internal-session", f->internal_session)->group("");  // hidden: session worker
  // hidden: the arguments checked as a run checks them, nothing measured (CheckRunArguments does
  // the same in process; this is for another kstacklab binary, e.g. on the machine a plan runs on)
  sub.add_flag("--internal-validate", f->internal_validate)->group("");
}

// The plan the flags describe; a count or duration that does not parse names its flag.
Expected<run::RunPlan> PlanFromFlags(const RunFlags& f) {
  using Limits = run::RunLimits;
  run::RunPlan p;
  p.suites = f.suites;
  p.benches = f.benches;
  p.params = f.params;
  KSTACKLAB_ASSIGN_OR_RETURN(p.iterations,
                             ParseCount(f.iterations, "--iterations", 1, Limits::kMaxIterations));
  KSTACKLAB_ASSIGN_OR_RETURN(
      p.repetitions, ParseCount(f.repetitions, "--repetitions", 1, Limits::kMaxRepetitions));
  KSTACKLAB_ASSIGN_OR_RETURN(p.warmup, ParseCount(f.warmup, "--warmup", 0, Limits::kMaxIterations));
  uint64_t sessions = 0;
  KSTACKLAB_ASSIGN_OR_RETURN(sessions,
                             ParseCount(f.sessions, "--sessions", 1, Limits::kMaxSessions));
  p.sessions = static_cast<int>(sessions);
  if (!f.stall_threshold.empty()) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        p.stall_threshold_ns,
        ParseDurationNs(f.stall_threshold, "--stall-threshold", /*bare_seconds=*/false,
                        Limits::kMinStallThresholdNs, Limits::kMaxStallThresholdNs, "10us"));
  }
  if (!f.cpu.empty()) {
    uint64_t cpu = 0;
    KSTACKLAB_ASSIGN_OR_RETURN(cpu, ParseCount(f.cpu, "--cpu", 0, CPU_SETSIZE - 1));
    p.cpu = static_cast<int>(cpu);
  }
  p.timing = f.timing == "loop" ? TimingMode::kLoop : TimingMode::kPerCall;
  p.sched = f.sched == "fifo" ? run::SchedClass::kFifo : run::SchedClass::kNormal;
  p.ab = f.ab;
  p.label = f.label;
  if (f.output_option != nullptr && f.output_option->count() > 0) p.output = f.output;
  p.record_in_store = !f.no_store;
  p.store = f.store;
  p.session = f.internal_session;
  return p;
}

// The command line of session K: the same run, one session, result on stdout, no store.
std::vector<std::string> SessionArgv(const run::RunPlan& p, int session) {
  std::vector<std::string> args = {"/proc/self/exe",
                                   "run",
                                   "--iterations",
                                   std::to_string(p.iterations),
                                   "--repetitions",
                                   std::to_string(p.repetitions),
                                   "--warmup",
                                   std::to_string(p.warmup),
                                   "--timing",
                                   p.timing == TimingMode::kLoop ? "loop" : "percall",
                                   "--stall-threshold",
                                   fmt::format("{}ns", p.stall_threshold_ns),
                                   "--sched",
                                   p.sched == run::SchedClass::kFifo ? "fifo" : "normal",
                                   "--cpu",
                                   std::to_string(p.cpu),
                                   "--label",
                                   p.label,
                                   "--no-store",
                                   "--internal-session",
                                   std::to_string(session),
                                   "-o",
                                   "-"};
  for (const auto& s : p.suites) args.insert(args.end(), {"--suite", s});
  for (const auto& b : p.benches) args.insert(args.end(), {"--bench", b});
  for (const auto& kv : p.params) args.insert(args.end(), {"--param", kv});
  return args;
}

// Exit code of a run stopped by a signal.
int SignalExit(const run::RunGuard& guard) {
  return 128 + (guard.stop_signal() != 0 ? guard.stop_signal() : SIGINT);
}

// Writes the file; a parent also prints the summary and records the run in the store — even
// when the file cannot be written (a full disk), so the measurement is not lost: the store and
// the printed summary keep it, and the error says where. A run the store did not take exits 1
// once its file is written (a failed or interrupted run keeps its own exit code and warns). A
// session worker writes its document on stdout and says nothing else.
int Publish(const run::ValidPlan& plan, const run::RunOutcome& out, const run::RunGuard& guard) {
  const run::RunPlan& p = plan.plan;
  const bool child = p.session >= 0;
  std::optional<Error> not_recorded;  // the store did not take the run (its file did)
  const Expected<std::string> written = run::WriteResult(plan, out.result);
  if (child && !written.ok()) return Fail(written.error());
  if (!child) {
    const std::string table = RenderSummary(out.result);
    int printed = kExitOk;  // a failed stdout exits 1, after the file and the store are done
    if (*p.output == "-") {
      std::fputs(table.c_str(), stderr);
    } else {
      printed = PrintStdout(table);
      if (written.ok()) {
        std::fprintf(stderr, "kstacklab: wrote %s\n", EscapeControl(*written).c_str());
      }
    }
    std::error_code ec;
    const bool importable =
        written.ok() && *written != "-" && std::filesystem::is_regular_file(*written, ec);
    std::optional<int64_t> id;
    if (p.record_in_store) {
      auto recorded = RecordRunInStore(out.result, p.store, importable ? *written : "");
      if (recorded.ok()) {
        id = *recorded;
      } else {
        not_recorded = recorded.error();
      }
    }
    if (!written.ok()) {
      if (not_recorded) Warn(not_recorded->message);
      Error e = written.error();
      e.message += id ? fmt::format(
                            "; the measurement is kept as store id {} (`kstacklab results "
                            "export {} -o FILE` writes the file)",
                            *id, *id)
                      : std::string("; the summary above is all that is left of the measurement");
      // A signal that cut the write short (SIGINT while a FIFO waits for its reader) ends the
      // run as a signal does: 128 + its number, not a runtime failure.
      if (guard.stop_requested()) e.exit_code = SignalExit(guard);
      return Fail(e);
    }
    if (printed != kExitOk) {
      if (not_recorded) Warn(not_recorded->message);
      return printed;
    }
  }
  // A failed or interrupted run exits as such; the store's failure is then a warning.
  if (not_recorded && !out.failure && !out.result.partial) return Fail(*not_recorded);
  if (not_recorded) Warn(not_recorded->message);
  if (out.failure) {
    return Fail(RuntimeError(fmt::format("{}; the file holds the repetitions measured before{}",
                                         out.failure->message,
                                         out.result.partial ? " (\"partial\": true)" : "")));
  }
  if (out.result.partial) {
    if (!child) {
      Warn("interrupted: the file holds only the completed repetitions (\"partial\": true)");
    }
    return SignalExit(guard);
  }
  return kExitOk;
}

int Execute(const RunFlags& f) {
  auto plan = PlanFromFlags(f);
  if (!plan.ok()) return Fail(plan.error());
  auto valid = run::ValidatePlan(*plan, FlagNames());
  if (!valid.ok()) return Fail(valid.error());
  if (f.internal_validate) return kExitOk;
  const bool child = valid->plan.session >= 0;
  const bool tty = StderrIsTty();
  run::RunGuard guard;
  StatusLine status(tty && !child);  // the progress line: "[ 42%] ETA 12s  ROW"
  run::RunHooks hooks;
  hooks.warn = Warn;
  hooks.progress = [&status](double fraction, double elapsed, const std::string& row) {
    status.Show(ProgressText(fraction, elapsed, row));
  };
  hooks.session_started = [&status](int session, int sessions) {
    if (status.terminal()) status.Note(fmt::format("session {}/{}", session + 1, sessions));
  };
  hooks.session_command = SessionArgv;
  auto out = run::Run(*valid, guard, hooks);
  status.Clear();
  if (!out.ok()) return Fail(out.error());
  if (out->stopped_before_measuring()) {
    if (!child) Warn("interrupted before the first repetition completed: nothing was written");
    return SignalExit(guard);
  }
  return Publish(*valid, *out, guard);
}

}  // namespace

Runner SetupRunCommand(CLI::App& sub) {
  auto f = std::make_shared<RunFlags>();
  AddRunFlags(sub, f.get());
  return [f] { return Execute(*f); };
}

namespace {

// `run_args` parsed as `kstacklab run RUN_ARGS` parses them and the plan they make validated; the
// output and the store are the caller's (the guest's result goes where the campaign says).
Expected<run::ValidPlan> ValidRunArguments(const std::vector<std::string>& run_args) {
  CLI::App app{"kstacklab"};
  RunFlags f;
  AddRunFlags(*app.add_subcommand("run"), &f);
  StripLiteralMarks(app);
  std::vector<std::string> args = {"kstacklab", "run"};
  args.insert(args.end(), run_args.begin(), run_args.end());
  std::exception_ptr request;
  std::optional<std::string> error = ParseArgs(app, args, &request);
  if (!error && request) error = "they ask for help or the version, not a measurement";
  if (!error) {
    auto plan = PlanFromFlags(f);
    if (plan.ok()) {
      plan->output = "/dev/null";
      plan->record_in_store = false;
    }
    auto valid =
        plan.ok() ? run::ValidatePlan(*plan, FlagNames()) : Expected<run::ValidPlan>(plan.error());
    if (valid.ok()) return valid;
    error = MessageLine(valid.error().message);
  }
  return UsageError(
      fmt::format("the run arguments do not parse as `kstacklab run` arguments: {}", *error));
}

}  // namespace

Status CheckRunArguments(const std::vector<std::string>& run_args) {
  auto valid = ValidRunArguments(run_args);
  if (!valid.ok()) return valid.error();
  return OkStatus();
}

Expected<RunRows> RunArgumentRows(const std::vector<std::string>& run_args) {
  run::ValidPlan valid;
  KSTACKLAB_ASSIGN_OR_RETURN(valid, ValidRunArguments(run_args));
  RunRows rows;
  rows.ab = valid.ab.has_value();
  for (const WorkloadDef& w : valid.rows) {
    rows.labels.push_back(BenchmarkLabel(w.name, ParamsText(w.params), w.variant));
    rows.names.push_back(w.name);
  }
  return rows;
}

}  // namespace kstacklab::cli
