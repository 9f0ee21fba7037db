// The run plan's options, one row each (run_fields.h).
#include "run_fields.h"

#include <fmt/format.h>
#include <sched.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli_util.h"
#include "kstacklab/common/text.h"

namespace kstacklab::cli {
namespace {

using Limits = run::RunLimits;
using Values = std::vector<std::string>;

enum class Kind {
  kList,    // repeatable: every value kept
  kValue,   // one value; `default_text` when not given
  kSwitch,  // no value: given or not
};

// One option of the run plan. `read` gets the given values (or the default), the name the flag's
// messages use and the plan; `to_child` appends what a session's child process is given for this
// field (nullptr: the child does not take it).
struct RunField {
  const char* flag;                   // CLI11 names: the long one last
  const char* message_name;           // the field's word in messages: its flag
  std::string run::PlanNames::*name;  // the field in PlanNames (nullptr: none)
  const char* help;
  Kind kind;
  const char* default_text;          // kValue's default, shown in --help (nullptr: none)
  std::vector<std::string> choices;  // kValue's allowed words (empty: any)
  const char* excludes;              // another row's message name it cannot go with
  Status (*read)(const Values& v, const std::string& flag, run::RunPlan& p);
  void (*to_child)(const run::RunPlan& p, int session, Values& argv);
  const char* shown_default = nullptr;  // --help's default where the plan's is not text
  const char* type_name = nullptr;      // --help's value word (nullptr: CLI11's)
  bool hidden = false;                  // an internal flag: not in --help
};

Status Count(const Values& v, const std::string& flag, uint64_t min, uint64_t max, uint64_t* out) {
  KSTACKLAB_ASSIGN_OR_RETURN(*out, ParseCount(v.front(), flag, min, max));
  return OkStatus();
}

void Pair(Values& argv, const char* flag, std::string value) {
  argv.emplace_back(flag);
  argv.push_back(std::move(value));
}

void Each(Values& argv, const char* flag, const Values& values) {
  for (const std::string& v : values) Pair(argv, flag, v);
}

// The rows, in --help's order.
const std::vector<RunField>& RunFields() {  // NOLINT(readability-function-size): a table of rows
  static const std::vector<RunField> k = {
      {"--suite",
       "--suite",
       &run::PlanNames::suite,
       "Suite to run (repeatable; default: syscall; see `kstacklab list`)",
       Kind::kList,
       nullptr,
       {},
       nullptr,
       [](const Values& v, const std::string&, run::RunPlan& p) -> Status {
         p.suites = v;
         return OkStatus();
       },
       [](const run::RunPlan& p, int, Values& argv) { Each(argv, "--suite", p.suites); }},
      {"--bench",
       "--bench",
       &run::PlanNames::bench,
       "Benchmark glob, matched against name or name:variant (repeatable)",
       Kind::kList,
       nullptr,
       {},
       nullptr,
       [](const Values& v, const std::string&, run::RunPlan& p) -> Status {
         p.benches = v;
         return OkStatus();
       },
       [](const run::RunPlan& p, int, Values& argv) { Each(argv, "--bench", p.benches); }},
      {"--iterations",
       "--iterations",
       &run::PlanNames::iterations,
       "Timed calls per repetition (the lists' runs: 10000000 x 1 repetition)",
       Kind::kValue,
       "50000",
       {},
       nullptr,
       [](const Values& v, const std::string& flag, run::RunPlan& p) -> Status {
         return Count(v, flag, 1, Limits::kMaxIterations, &p.iterations);
       },
       [](const run::RunPlan& p, int, Values& argv) {
         Pair(argv, "--iterations", std::to_string(p.iterations));
       }},
      {"--repetitions",
       "--repetitions",
       &run::PlanNames::repetitions,
       "Repetitions per benchmark (the statistical samples)",
       Kind::kValue,
       "60",
       {},
       nullptr,
       [](const Values& v, const std::string& flag, run::RunPlan& p) -> Status {
         return Count(v, flag, 1, Limits::kMaxRepetitions, &p.repetitions);
       },
       [](const run::RunPlan& p, int, Values& argv) {
         Pair(argv, "--repetitions", std::to_string(p.repetitions));
       }},
      {"--warmup",
       "--warmup",
       &run::PlanNames::warmup,
       "Untimed calls before each repetition",
       Kind::kValue,
       "10000",
       {},
       nullptr,
       [](const Values& v, const std::string& flag, run::RunPlan& p) -> Status {
         return Count(v, flag, 0, Limits::kMaxIterations, &p.warmup);
       },
       [](const run::RunPlan& p, int, Values& argv) {
         Pair(argv, "--warmup", std::to_string(p.warmup));
       }},
      {"--cpu",
       "--cpu",
       &run::PlanNames::cpu,
       "CPU to pin to (default: the one we start on)",
       Kind::kValue,
       nullptr,
       {},
       nullptr,
       [](const Values& v, const std::string& flag, run::RunPlan& p) -> Status {
         if (v.front().empty()) return OkStatus();  // the one we start on
         uint64_t cpu = 0;
         KSTACKLAB_RETURN_IF_ERROR(Count(v, flag, 0, CPU_SETSIZE - 1, &cpu));
         p.cpu = static_cast<int>(cpu);
         return OkStatus();
       },
       [](const run::RunPlan& p, int, Values& argv) {
         Pair(argv, "--cpu", std::to_string(p.cpu));
       }},
      {"--stall-threshold",
       "--stall-threshold",
       &run::PlanNames::stall_threshold,
       "Count a call above this as a host stall (e.g. 10us, 500ns, 1ms; 1ns to 10s)",
       Kind::kValue,
       nullptr,
       {},
       nullptr,
       [](const Values& v, const std::string& flag, run::RunPlan& p) -> Status {
         if (v.front().empty()) return OkStatus();  // the default
         KSTACKLAB_ASSIGN_OR_RETURN(p.stall_threshold_ns,
                                    ParseDurationNs(v.front(), flag, Limits::kMinStallThresholdNs,
                                                    Limits::kMaxStallThresholdNs, "10us"));
         return OkStatus();
       },
       [](const run::RunPlan& p, int, Values& argv) {
         Pair(argv, "--stall-threshold", fmt::format("{}ns", p.stall_threshold_ns));
       },
       "10us",
       "DURATION"},
      {"--timing",
       "--timing",
       nullptr,
       "percall: time every call (tails); loop: time the batch (mean only)",
       Kind::kValue,
       "percall",
       {"percall", "loop"},
       nullptr,
       [](const Values& v, const std::string&, run::RunPlan& p) -> Status {
         p.timing =
             v.front() == "loop" ? sampler::TimingMode::kLoop : sampler::TimingMode::kPerCall;
         return OkStatus();
       },
       [](const run::RunPlan& p, int, Values& argv) {
         Pair(argv, "--timing", p.timing == sampler::TimingMode::kLoop ? "loop" : "percall");
       }},
      {"--sched",
       "--sched",
       &run::PlanNames::sched,
       "Scheduling class while measuring: normal or fifo (needs root)",
       Kind::kValue,
       "normal",
       {"normal", "fifo"},
       nullptr,
       [](const Values& v, const std::string&, run::RunPlan& p) -> Status {
         p.sched = v.front() == "fifo" ? run::SchedClass::kFifo : run::SchedClass::kNormal;
         return OkStatus();
       },
       [](const run::RunPlan& p, int, Values& argv) {
         Pair(argv, "--sched", p.sched == run::SchedClass::kFifo ? "fifo" : "normal");
       }},
      {"--sessions",
       "--sessions",
       &run::PlanNames::sessions,
       "Run the repetitions in this many fresh processes (each runs --repetitions)",
       Kind::kValue,
       "1",
       {},
       nullptr,
       [](const Values& v, const std::string& flag, run::RunPlan& p) -> Status {
         uint64_t sessions = 0;
         KSTACKLAB_RETURN_IF_ERROR(Count(v, flag, 1, Limits::kMaxSessions, &sessions));
         p.sessions = static_cast<int>(sessions);
         return OkStatus();
       },
       nullptr},  // a child is one session
      {"--label",
       "--label",
       &run::PlanNames::label,
       "Name of the configuration measured (default: kernel release)",
       Kind::kValue,
       nullptr,
       {},
       nullptr,
       [](const Values& v, const std::string&, run::RunPlan& p) -> Status {
         p.label = v.front();
         return OkStatus();
       },
       [](const run::RunPlan& p, int, Values& argv) { Pair(argv, "--label", p.label); }},
      {"-o,--output",
       "-o",
       &run::PlanNames::output,
       "Result file ('-' = stdout; default: kstacklab-LABEL-TIME.json)",
       Kind::kValue,
       nullptr,
       {},
       nullptr,
       [](const Values& v, const std::string&, run::RunPlan& p) -> Status {
         p.output = v.front();
         return OkStatus();
       },
       nullptr},  // the child's result goes to its parent: "-o -", after --internal-session
      {"--store",
       "--store",
       &run::PlanNames::store,
       nullptr,
       Kind::kValue,
       nullptr,
       {},
       nullptr,
       [](const Values& v, const std::string&, run::RunPlan& p) -> Status {
         p.store = v.front();
         return OkStatus();
       },
       nullptr},  // the parent records the run
      {"--no-store",
       "--no-store",
       &run::PlanNames::no_store,
       "Do not record the result in the store",
       Kind::kSwitch,
       nullptr,
       {},
       "--store",
       [](const Values&, const std::string&, run::RunPlan& p) -> Status {
         p.record_in_store = false;
         return OkStatus();
       },
       [](const run::RunPlan&, int, Values& argv) { argv.emplace_back("--no-store"); }},
      {"--param",
       "--param",
       &run::PlanNames::param,
       "KEY=VALUE setting of the rows that take it (repeatable): size=256M for micromm "
       "(the mapping, a multiple of 2 MiB; default 1G)",
       Kind::kList,
       nullptr,
       {},
       nullptr,
       [](const Values& v, const std::string&, run::RunPlan& p) -> Status {
         p.params = v;
         return OkStatus();
       },
       [](const run::RunPlan& p, int, Values& argv) { Each(argv, "--param", p.params); }},
      {"--ab",
       "--ab",
       &run::PlanNames::ab,
       "Interleaved A/B of a knob, e.g. sysctl:kernel.stack_erasing=0,1, "
       "model:policy=off,percpu-prng, model:strategy=generic,rep-stos: one variant per "
       "value, a sysctl's original always restored (docs/ab.md)",
       Kind::kList,
       nullptr,
       {},
       "--sessions",
       [](const Values& v, const std::string&, run::RunPlan& p) -> Status {
         p.ab = v;
         return OkStatus();
       },
       nullptr},  // excludes --sessions
      // hidden: this process is session K of a parent's run (RunHooks::session_command)
      {"--internal-session",
       "--internal-session",
       nullptr,
       "",
       Kind::kValue,
       nullptr,
       {},
       nullptr,
       [](const Values& v, const std::string& flag, run::RunPlan& p) -> Status {
         uint64_t session = 0;
         KSTACKLAB_RETURN_IF_ERROR(Count(v, flag, 0, Limits::kMaxSessions - 1, &session));
         p.session = static_cast<int>(session);
         return OkStatus();
       },
       [](const run::RunPlan&, int session, Values& argv) {
         Pair(argv, "--internal-session", std::to_string(session));
         Pair(argv, "-o", "-");
       },
       nullptr,
       nullptr,
       true},
  };
  return k;
}

}  // namespace

void AddRunFlags(CLI::App& sub, RunFlags* f) {
  const auto& fields = RunFields();
  f->given.assign(fields.size(), {});
  f->options.assign(fields.size(), nullptr);
  for (size_t i = 0; i < fields.size(); ++i) {
    const RunField& r = fields[i];
    Values& slot = f->given[i];
    CLI::Option* o = nullptr;
    if (r.kind == Kind::kSwitch) {
      o = sub.add_flag(r.flag, r.help);
    } else if (r.name == &run::PlanNames::store) {
      slot.resize(1);
      o = AddStoreOption(sub, &slot.front());
    } else if (r.kind == Kind::kList) {
      o = sub.add_option(r.flag, slot, r.help);
    } else {
      slot.assign(1, r.default_text != nullptr ? r.default_text : "");
      o = sub.add_option(r.flag, slot.front(), r.help);
      if (r.default_text != nullptr) o->capture_default_str();
    }
    if (!r.choices.empty()) o->check(CLI::IsMember(r.choices));
    if (r.shown_default != nullptr) o->default_str(r.shown_default);
    if (r.type_name != nullptr) o->type_name(r.type_name);
    if (r.hidden) o->group("");
    f->options[i] = o;
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].excludes != nullptr) f->options[i]->excludes(sub.get_option(fields[i].excludes));
  }
  // hidden: the arguments checked as a run checks them, nothing measured (CheckRunArguments does
  // the same in process; this is for another kstacklab binary, e.g. on the machine a plan runs on)
  sub.add_flag("--internal-validate", f->internal_validate)->group("");
}

Expected<run::RunPlan> PlanFromFlags(const RunFlags& f) {
  const auto& fields = RunFields();
  run::RunPlan p;
  for (size_t i = 0; i < fields.size(); ++i) {
    const RunField& r = fields[i];
    const bool given = f.options[i] != nullptr && f.options[i]->count() > 0;
    // a value with a default is read either way; anything else only when given
    if (!given && (r.kind != Kind::kValue || r.default_text == nullptr)) continue;
    KSTACKLAB_RETURN_IF_ERROR(r.read(f.given[i], r.message_name, p));
  }
  return p;
}

const run::PlanNames& FlagNames() {
  static const run::PlanNames k = [] {
    run::PlanNames names;
    for (const RunField& r : RunFields()) {
      if (r.name != nullptr) names.*r.name = r.message_name;
    }
    return names;
  }();
  return k;
}

std::vector<std::string> SessionArgv(const run::RunPlan& p, int session) {
  Values argv = {"/proc/self/exe", "run"};
  for (const RunField& r : RunFields()) {
    if (r.to_child != nullptr) r.to_child(p, session, argv);
  }
  return argv;
}

}  // namespace kstacklab::cli
