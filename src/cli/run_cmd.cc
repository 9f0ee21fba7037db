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
#include "run_fields.h"
#include "run_support.h"

namespace kstacklab::cli {
namespace {

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
    const std::string table = report::RenderSummary(out.result);
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
  for (const workloads::WorkloadDef& w : valid.rows) {
    rows.labels.push_back(BenchmarkLabel(w.Key()));
    rows.names.push_back(w.name);
  }
  return rows;
}

}  // namespace kstacklab::cli
