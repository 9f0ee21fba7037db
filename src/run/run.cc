// run::Run, the entry point of the run library (include/kstacklab/run/run.h): the machine prepared,
// the rows measured here (with a knob's A/B) or in sessions, the result stamped.
#include "kstacklab/run/run.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "interleave.h"
#include "kstacklab/knobs/knobs.h"
#include "kstacklab/sysinfo/sysinfo.h"
#include "kstacklab/timing/timing.h"
#include "sessions.h"

namespace kstacklab::run {
namespace {

void WarnVia(const RunHooks& hooks, const std::string& message) {
  if (hooks.warn) hooks.warn(message);
}

void WarnAll(const RunHooks& hooks, const std::vector<std::string>& messages) {
  for (const std::string& m : messages) WarnVia(hooks, m);
}

// The environment, with its warnings (each "message; remedy") appended to `warnings`.
Json CaptureRunEnvironment(std::vector<std::string>* warnings) {
  Json env = sysinfo::CaptureEnvironment(sysinfo::SysinfoOptionsFromEnvironment());
  for (const sysinfo::EnvWarning& w : sysinfo::EnvironmentWarnings(env)) {
    warnings->push_back(fmt::format("{}; {}", w.message, w.remedy));
  }
  return env;
}

RunOptions OptionsOf(const RunPlan& p) {
  RunOptions opt;
  opt.repetitions = static_cast<int>(p.repetitions);
  opt.session = std::max(p.session, 0);
  opt.sampler.iterations = p.iterations;
  opt.sampler.warmup = p.warmup;
  opt.sampler.mode = p.timing;
  opt.sampler.chunk = std::min<uint64_t>(p.iterations, sampler::kDefaultChunk);
  opt.sampler.stall_threshold_ns = p.stall_threshold_ns;
  return opt;
}

// A knob a killed run left changed is restored first (one warning per knob); while another live
// run holds the recovery file, an A/B refuses to start and a plain run says it is disturbed.
Status RecoverKnobs(bool ab, const RunHooks& hooks) {
  if (knobs::RecoveryInUse()) {
    if (ab) {
      return UsageError(knobs::RecoveryInUseMessage() +
                        "; wait for it to finish before an A/B of your own");
    }
    WarnVia(hooks, knobs::RecoveryInUseMessage() +
                       ": this run measures the machine with that knob changed, and disturbs "
                       "that run's measurement");
    return OkStatus();
  }
  auto recovered = knobs::RecoverPending();
  if (!recovered.ok()) return recovered.error();
  for (const std::string& line : *recovered) {
    WarnVia(hooks, fmt::format("a previous run was killed with a knob changed: {}", line));
  }
  return OkStatus();
}

// One process measuring: calibrate, capture the environment, run the rows (with the knob).
// Warnings so far are shown here, except by a session other than the first (the first shows
// the environment's for all of them).
Expected<RunOutcome> MeasureHere(const ValidPlan& plan, RunGuard& guard, const RunHooks& hooks,
                                 std::vector<std::string>* warnings) {
  auto cal = timing::Calibrate();
  if (!cal.ok()) return cal.error();
  std::vector<workloads::WorkloadDef> rows = plan.rows;
  for (auto& note : workloads::DropUnavailable(&rows))
    warnings->push_back(std::move(note));  // no THP, PKU
  const sampler::ClockParams clock{cal->freq_hz, cal->overhead_ticks};
  Json environment = CaptureRunEnvironment(warnings);
  if (plan.plan.session <= 0) WarnAll(hooks, *warnings);
  AbOutcome measured;
  KSTACKLAB_ASSIGN_OR_RETURN(measured,
                             MeasureRows(plan.ab, rows, OptionsOf(plan.plan), clock, guard, hooks));
  RunOutcome out{std::move(measured.result), std::move(measured.failure)};
  out.result.environment = std::move(environment);
  out.result.timer =
      TimerInfo{cal->source, cal->freq_hz, cal->overhead_ns, cal->invariant, cal->resolution_ns};
  if (guard.stop_requested()) out.result.partial = true;
  return out;
}

// The parent of a sessioned run: one fresh process per session (each pins and calibrates
// itself), merged. The first session's environment and timer stand for the run; its warnings
// join the parent's. Stopped before the first repetition completed: an empty result.
Expected<RunOutcome> MeasureSessions(const RunPlan& plan, RunGuard& guard, const RunHooks& hooks,
                                     std::vector<std::string>* warnings) {
  if (!hooks.session_command) {
    return RuntimeError("a run in several sessions needs the command that measures one session");
  }
  RunOutcome out;
  RunResult& result = out.result;
  for (int s = 0; s < plan.sessions && !guard.stop_requested(); ++s) {
    if (hooks.session_started) hooks.session_started(s, plan.sessions);
    auto r = RunSession(hooks.session_command(plan, s), s, guard);
    if (!r.ok()) {
      if (guard.stop_requested() && s > 0) break;
      if (guard.stop_requested()) {
        result = RunResult();
        result.partial = true;
        return out;
      }
      return r.error();
    }
    if (s == 0) {
      // The first session showed its environment warnings itself; keep them for the file.
      WarnAll(hooks, *warnings);
      result = std::move(*r);
      warnings->insert(warnings->end(), result.run.warnings.begin(), result.run.warnings.end());
    } else {
      KSTACKLAB_RETURN_IF_ERROR(MergeSession(result, *r));
    }
    if (result.partial) break;
  }
  result.partial = result.partial || guard.stop_requested();
  return out;
}

// The run's own record: version, time, label and how it was run (RunContext).
void Stamp(const RunPlan& p, const PlanNames& n, std::vector<std::string> warnings,
           RunResult* result) {
  result->tool_version = KSTACKLAB_VERSION;
  result->created = UtcTimestamp();
  result->label = p.label;
  RunContext c;
  c.iterations = p.iterations;
  c.repetitions = p.repetitions;
  c.warmup = p.warmup;
  c.cpu = p.cpu;
  c.timing = p.timing == sampler::TimingMode::kLoop ? "loop" : "percall";
  c.sched = p.sched == SchedClass::kFifo ? "fifo" : "normal";
  c.sessions = p.sessions;
  c.suites = p.suites;
  c.benches = p.benches;
  c.order = p.ab.empty() ? std::string("interleaved by repetition, alternating direction")
                         : fmt::format(
                               "ABBA by repetition over the {} values, the rows within a value "
                               "alternating direction too",
                               n.ab);
  c.stall_threshold_ns = p.stall_threshold_ns;
  c.params = p.params;
  c.ab = p.ab;
  c.warnings = std::move(warnings);
  result->run = std::move(c);
}

// Puts the CPU affinity and the scheduling class back on every path out of Run: the write that
// follows a run is not pinned (a FIFO output waits for its reader).
class MachineRestore {
 public:
  explicit MachineRestore(RunGuard& guard) : guard_(guard) {}
  ~MachineRestore() { guard_.RestoreMachine(); }
  MachineRestore(const MachineRestore&) = delete;
  MachineRestore& operator=(const MachineRestore&) = delete;

 private:
  RunGuard& guard_;
};

}  // namespace

Expected<AbOutcome> MeasureRows(const std::optional<knobs::AbSpec>& ab,
                                const std::vector<workloads::WorkloadDef>& rows,
                                const RunOptions& opt, const sampler::ClockParams& clock,
                                RunGuard& guard, const RunHooks& hooks) {
  KSTACKLAB_RETURN_IF_ERROR(RecoverKnobs(ab.has_value(), hooks));
  if (!ab) {
    AbOutcome out;
    KSTACKLAB_ASSIGN_OR_RETURN(out.result,
                               RunWorkloads(rows, opt, clock, guard.stop_flag(), hooks.progress));
    return out;
  }
  const knobs::AbSpec& spec = *ab;
  auto knob = knobs::OpenKnob(spec);
  if (!knob.ok()) return knob.error();
  std::vector<workloads::WorkloadDef> taken;
  std::vector<std::string> left;  // names of the rows the knob does not take, once each
  size_t left_rows = 0;
  for (const workloads::WorkloadDef& w : rows) {
    if ((*knob)->Takes(w)) {
      taken.push_back(w);
      continue;
    }
    ++left_rows;
    if (std::find(left.begin(), left.end(), w.name) == left.end()) left.push_back(w.name);
  }
  if (left_rows != 0 && !taken.empty()) {
    WarnVia(hooks,
            fmt::format("knob {}: {} selected row{} the knob does not apply to {} not measured: {}",
                        spec.text, left_rows, left_rows == 1 ? "" : "s",
                        left_rows == 1 ? "is" : "are", fmt::join(left, ", ")));
  }
  return RunAb(taken, opt, clock, guard, hooks.progress, spec, **knob);
}

Expected<RunOutcome> Run(const ValidPlan& valid, RunGuard& guard, const RunHooks& hooks) {
  RunPlan plan = valid.plan;
  const PlanNames& n = valid.names;
  if (plan.cpu < 0) plan.cpu = sched_getcpu();
  MachineRestore restore(guard);
  if (Status st = guard.PinCpu(plan.cpu); !st.ok()) {
    Error e = st.error();
    e.message = fmt::format("{} {}: {}", n.cpu, plan.cpu, e.message);
    return e;
  }
  std::vector<std::string> warnings;
  if (plan.sched == SchedClass::kFifo) {
    if (Status st = guard.EnableFifo(); !st.ok()) {
      warnings.push_back(fmt::format(
          "{}; running with the normal scheduler (run as root or grant CAP_SYS_NICE for {} fifo)",
          st.error().message, n.sched));
    }
  }
  RunOutcome out;
  if (plan.sessions > 1 && plan.session < 0) {
    KSTACKLAB_ASSIGN_OR_RETURN(out, MeasureSessions(plan, guard, hooks, &warnings));
  } else {
    KSTACKLAB_ASSIGN_OR_RETURN(out, MeasureHere(valid, guard, hooks, &warnings));
  }
  guard.RestoreMachine();
  Stamp(plan, n, std::move(warnings), &out.result);
  if (out.result.partial) {
    // A row that completed no repetition is refused by every reader.
    std::erase_if(out.result.benchmarks,
                  [](const BenchmarkResult& b) { return b.repetitions.empty(); });
  }
  return out;
}

}  // namespace kstacklab::run
