// `kstacklab attack NAME …`: the attacks on the bit-exact models (DESIGN.md job 4).
// One subcommand per attack (the table below); each validates its flags, runs the experiment in
// analysis/ and prints the report through report/ (table by default, --format json).
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attack_live.h"
#include "cli_util.h"
#include "command.h"
#include "kstacklab/analysis/attack.h"
#include "kstacklab/report/attack_report.h"
#include "kstacklab/timing/timing.h"

namespace kstacklab::cli {
namespace {

Expected<uint64_t> ParseRange(const std::string& text, const std::string& flag, uint64_t lo,
                              uint64_t hi) {
  auto v = ParseUnsigned(text, flag);
  if (!v.ok()) return v.error();
  if (*v < lo || *v > hi) {
    return UsageError(fmt::format("{} {} is out of range; give {}..{}", flag, text, lo, hi));
  }
  return *v;
}

struct Common {
  std::string format = "grid";
  std::string seed = "1";
};

void AddAllowLong(CLI::App& sub, bool& allow_long) {
  sub.add_flag("--allow-long", allow_long,
               "run even when the estimated work is beyond the bound (60 s or 512 MiB; "
               "docs/strength.md \"Limits\")");
}

void AddCommon(CLI::App& sub, Common& c) {
  sub.add_option("--format", c.format, kGridOrJsonHelp)->capture_default_str();
  sub.add_option("--seed", c.seed, "seed of every random choice (reproducible runs)")
      ->capture_default_str();
}

Status CheckFormat(const Common& c) { return CheckGridOrJson(c.format); }

// The model attacks' work bound (analysis::EstimateXCost, docs/strength.md "Limits"): refused
// beyond it unless --allow-long, with the estimate and what to reduce.
Status CheckCost(const analysis::AttackCost& cost, bool allow_long, std::string_view attack,
                 std::string_view reduce) {
  if (allow_long || analysis::WithinAttackBounds(cost)) return OkStatus();
  return UsageError(
      fmt::format("attack {}: the requested work is estimated at {}, beyond the bound of {:g} s "
                  "and {:g} MiB; reduce {}, or give --allow-long to run it anyway",
                  attack, analysis::DescribeAttackCost(cost), analysis::kAttackSecondsBound,
                  analysis::kAttackBytesBound / (1024 * 1024), reduce));
}

// --live runs on the kernel, not on the model: the model's flags do not apply there (they would
// be ignored, and the report would claim a seed it never used). The first one given is named.
Status RejectModelFlags(const CLI::App& sub, std::initializer_list<const char*> flags,
                        std::string_view attack) {
  for (const char* flag : flags) {
    if (sub.count(flag) > 0) {
      return UsageError(fmt::format(
          "{} does not apply to `attack {} --live` (it sets up the model simulation); remove it",
          flag, attack));
    }
  }
  return OkStatus();
}

int Print(const Expected<analysis::AttackReport>& report, const Common& c) {
  if (!report.ok()) return Fail(report.error());
  const std::string text =
      c.format == "json" ? report::RenderAttackJson(*report) : report::RenderAttackTable(*report);
  return PrintStdout(text);
}

// --- prng-recover ----------------------------------------------------------------------------

struct PrngFlags {
  Common common;
  std::vector<std::string> policies;
  std::vector<std::string> observations = {"12", "18", "19", "20", "24"};
  std::string predict = "1000";
  std::string gaps = "0";
  std::string trials = "10";
  std::string budget = "4000000";
  bool allow_long = false;
};

int RunPrng(const PrngFlags& f) {
  if (Status s = CheckFormat(f.common); !s.ok()) return Fail(s.error());
  auto seed = ParseUnsigned(f.common.seed, "--seed");
  auto predict = ParseRange(f.predict, "--predict", 1, 10'000'000);
  auto gaps = ParseRange(f.gaps, "--gaps", 0, 8);
  auto trials = ParseRange(f.trials, "--trials", 1, 100'000);
  auto budget = ParseRange(f.budget, "--search-budget", 1, 1'000'000'000);
  for (const Error* e :
       {seed.ok() ? nullptr : &seed.error(), predict.ok() ? nullptr : &predict.error(),
        gaps.ok() ? nullptr : &gaps.error(), trials.ok() ? nullptr : &trials.error(),
        budget.ok() ? nullptr : &budget.error()}) {
    if (e != nullptr) return Fail(*e);
  }
  const std::vector<std::string> known = analysis::PrngRecoverPolicies();
  std::vector<std::string> policies = f.policies;
  if (policies.empty()) policies = known;
  for (const std::string& p : policies) {
    bool found = false;
    for (const std::string& k : known) found = found || k == p;
    if (!found) {
      return Fail(
          UsageError(fmt::format("--policy {} is not supported by prng-recover; give one of: {}", p,
                                 fmt::join(known, ", "))));
    }
  }
  std::vector<uint64_t> ks;
  for (const std::string& k : f.observations) {
    auto v = ParseRange(k, "--observations", 1, 10'000);
    if (!v.ok()) return Fail(v.error());
    ks.push_back(*v);
  }
  std::vector<analysis::PrngRecoverOptions> runs;
  analysis::AttackCost cost;
  for (const std::string& p : policies) {
    for (uint64_t k : ks) {
      analysis::PrngRecoverOptions o;
      o.policy = p;
      o.observations = k;
      o.predict = *predict;
      o.gaps = *gaps;
      o.seed = *seed;
      o.trials = *trials;
      o.search_budget = *budget;
      const analysis::AttackCost c = analysis::EstimatePrngRecoverCost(o);
      cost.seconds += c.seconds;
      cost.bytes = std::max(cost.bytes, c.bytes);  // one run at a time
      runs.push_back(std::move(o));
    }
  }
  if (Status s = CheckCost(cost, f.allow_long, "prng-recover",
                           "--gaps, --search-budget, --trials, --observations or --policy");
      !s.ok()) {
    return Fail(s.error());
  }
  ProgressLine progress("attack prng-recover");
  analysis::AttackReport merged;
  for (size_t i = 0; i < runs.size(); ++i) {
    runs[i].progress = progress.Part(i, runs.size());
    auto r = analysis::RunPrngRecover(runs[i]);
    if (!r.ok()) return Fail(r.error());
    if (merged.rows.empty()) {
      merged = *r;
    } else {
      for (auto& row : r->rows) merged.rows.push_back(std::move(row));
    }
  }
  return Print(merged, f.common);
}

Runner SetupPrng(CLI::App& sub) {
  auto f = std::make_shared<PrngFlags>();
  sub.add_option("--policy", f->policies,
                 "design(s) attacked (repeatable; default all): " +
                     fmt::format("{}", fmt::join(analysis::PrngRecoverPolicies(), ", ")));
  sub.add_option("--observations", f->observations,
                 "consecutive offsets the attacker learns (repeatable: one row each)")
      ->capture_default_str();
  sub.add_option("--predict", f->predict, "later offsets predicted per trial")
      ->capture_default_str();
  sub.add_option("--gaps", f->gaps,
                 "up to G unseen outputs (unknown to the attacker) between two observations, "
                 "0..8; searched over gap patterns")
      ->capture_default_str();
  sub.add_option("--trials", f->trials, "independently seeded states per row")
      ->capture_default_str();
  sub.add_option("--search-budget", f->budget, "max search nodes per trial (gap search)")
      ->capture_default_str();
  AddCommon(sub, f->common);
  AddAllowLong(sub, f->allow_long);
  return [f] { return RunPrng(*f); };
}

// --- migration -------------------------------------------------------------------------------

struct MigrationFlags {
  Common common;
  std::vector<std::string> policies;
  std::string cpus = "2";
  std::string syscalls = "100000";
  std::string migrate_prob = "0.5";
  std::string user_migrate_prob = "0.5";
  std::string other_rate = "0.2";
  bool live = false;
  std::string rounds = "1000";
  bool allow_long = false;
};

int RunMigrationCmd(const MigrationFlags& f, const CLI::App& sub) {
  if (Status s = CheckFormat(f.common); !s.ok()) return Fail(s.error());
  if (f.live) {
    if (Status s =
            RejectModelFlags(sub,
                             {"--policy", "--cpus", "--syscalls", "--migrate-prob",
                              "--user-migrate-prob", "--other-rate", "--seed", "--allow-long"},
                             "migration");
        !s.ok()) {
      return Fail(s.error());
    }
    auto rounds = ParseRange(f.rounds, "--rounds", 10, 100'000);
    if (!rounds.ok()) return Fail(rounds.error());
    return Print(MigrationLiveReport(*rounds), f.common);
  }
  analysis::MigrationOptions o;
  auto seed = ParseUnsigned(f.common.seed, "--seed");
  if (!seed.ok()) return Fail(seed.error());
  auto cpus = ParseRange(f.cpus, "--cpus", 2, 1024);
  if (!cpus.ok()) return Fail(cpus.error());
  auto syscalls = ParseRange(f.syscalls, "--syscalls", 100, 100'000'000);
  if (!syscalls.ok()) return Fail(syscalls.error());
  auto prob = ParseNumber(f.migrate_prob, "--migrate-prob", "0.5", 0, 1);
  if (!prob.ok()) return Fail(prob.error());
  auto uprob = ParseNumber(f.user_migrate_prob, "--user-migrate-prob", "0.5", 0, 1);
  if (!uprob.ok()) return Fail(uprob.error());
  auto rate = ParseNumber(f.other_rate, "--other-rate", "50", 0, 100);
  if (!rate.ok()) return Fail(rate.error());
  const std::vector<std::string> known = analysis::MigrationPolicies();
  for (const std::string& p : f.policies) {
    bool found = false;
    for (const std::string& k : known) found = found || k == p;
    if (!found) {
      return Fail(
          UsageError(fmt::format("--policy {} is not supported by migration; give one of: {}", p,
                                 fmt::join(known, ", "))));
    }
  }
  o.policies = f.policies;
  o.seed = *seed;
  o.cpus = static_cast<int>(*cpus);
  o.syscalls = *syscalls;
  o.migrate_prob = *prob;
  o.user_migrate_prob = *uprob;
  o.other_rate = *rate;
  if (Status s = CheckCost(analysis::EstimateMigrationCost(o), f.allow_long, "migration",
                           "--syscalls, --cpus, --other-rate or --policy");
      !s.ok()) {
    return Fail(s.error());
  }
  ProgressLine progress("attack migration");
  o.progress = progress.Part(0, 1);
  return Print(analysis::RunMigration(o), f.common);
}

Runner SetupMigration(CLI::App& sub) {
  auto f = std::make_shared<MigrationFlags>();
  sub.add_option("--policy", f->policies,
                 "design(s) (repeatable; default all): " +
                     fmt::format("{}", fmt::join(analysis::MigrationPolicies(), ", ")));
  sub.add_option("--cpus", f->cpus, "simulated CPUs, 2..1024")->capture_default_str();
  sub.add_option("--syscalls", f->syscalls, "attacker syscalls, 100..100000000")
      ->capture_default_str();
  sub.add_option("--migrate-prob", f->migrate_prob,
                 "probability that the attacker is migrated during one of its syscalls, 0..1")
      ->capture_default_str();
  sub.add_option("--user-migrate-prob", f->user_migrate_prob,
                 "probability that it is moved to another CPU while in user mode after a syscall, "
                 "0..1")
      ->capture_default_str();
  sub.add_option("--other-rate", f->other_rate,
                 "mean syscalls of other tasks per CPU between two attacker syscalls, 0..100")
      ->capture_default_str();
  AddCommon(sub, f->common);
  CLI::Option* live = sub.add_flag("--live", f->live,
                                   "run it on the running kernel instead, with the BPF sampler as "
                                   "ground truth (root, 2 CPUs; docs/live.md)");
  sub.add_option("--rounds", f->rounds, "--live: forced migrations, 10..100000")
      ->capture_default_str()
      ->needs(live);
  AddAllowLong(sub, f->allow_long);
  return [f, &sub] { return RunMigrationCmd(*f, sub); };
}

// --- timer -----------------------------------------------------------------------------------

struct TimerFlags {
  Common common;
  std::vector<std::string> resolutions;
  std::vector<std::string> jitters = {"2", "20", "100"};
  std::string samples = "200000";
  bool measure = false;
  std::string measure_calls = "200000";
  bool live = false;
  bool allow_long = false;
};

int RunTimerCmd(const TimerFlags& f, const CLI::App& sub) {
  if (Status s = CheckFormat(f.common); !s.ok()) return Fail(s.error());
  if (f.live) {
    if (Status s = RejectModelFlags(sub,
                                    {"--resolution-hz", "--jitter-ns", "--measure",
                                     "--measure-calls", "--seed", "--allow-long"},
                                    "timer");
        !s.ok()) {
      return Fail(s.error());
    }
    auto calls = ParseRange(f.samples, "--samples", 1000, 250'000);
    if (!calls.ok()) return Fail(calls.error());
    return Print(TimerLiveReport(*calls), f.common);
  }
  analysis::TimerOptions o;
  auto seed = ParseUnsigned(f.common.seed, "--seed");
  if (!seed.ok()) return Fail(seed.error());
  auto samples = ParseRange(f.samples, "--samples", 1000, 100'000'000);
  if (!samples.ok()) return Fail(samples.error());
  auto calls = ParseRange(f.measure_calls, "--measure-calls", 1000, 100'000'000);
  if (!calls.ok()) return Fail(calls.error());
  bool want_tsc = f.resolutions.empty();
  for (const std::string& r : f.resolutions) {
    if (r == "tsc") {
      want_tsc = true;
      continue;
    }
    auto v = ParseNumber(r, "--resolution-hz", "24e6", 1e3, 1e11);
    if (!v.ok()) return Fail(v.error());
    o.resolutions_hz.push_back(*v);
  }
  if (f.resolutions.empty()) o.resolutions_hz = {24e6, 125e6, 1e9};
  for (const std::string& j : f.jitters) {
    auto v = ParseNumber(j, "--jitter-ns", "10", 0, 1e9);
    if (!v.ok()) return Fail(v.error());
    o.jitters_ns.push_back(*v);
  }
  o.seed = *seed;
  o.samples = *samples;
  if (want_tsc || f.measure) {
    auto cal = timing::Calibrate();
    if (!cal.ok()) return Fail(cal.error());
    o.tsc_hz = want_tsc ? cal->freq_hz : 0;
  }
  if (Status s = CheckCost(analysis::EstimateTimerCost(o, f.measure ? *calls : 0), f.allow_long,
                           "timer", "--samples, --measure-calls, --resolution-hz or --jitter-ns");
      !s.ok()) {
    return Fail(s.error());
  }
  ProgressLine progress("attack timer");
  o.progress = progress.Part(0, 1);
  if (f.measure) {
    auto m = analysis::MeasureSyscallJitter(*calls);
    if (!m.ok()) return Fail(WithFlag("--measure-calls", m.error()));
    o.measured = std::move(*m);
  }
  return Print(analysis::RunTimer(o), f.common);
}

Runner SetupTimer(CLI::App& sub) {
  auto f = std::make_shared<TimerFlags>();
  sub.add_option("--resolution-hz", f->resolutions,
                 "counter resolutions in Hz, or `tsc` for this machine's counter (repeatable; "
                 "default 24e6 125e6 1e9 tsc)");
  sub.add_option("--jitter-ns", f->jitters,
                 "standard deviation of the attacker's error in timing the kernel's counter read, "
                 "ns (repeatable)")
      ->capture_default_str();
  sub.add_option("--samples", f->samples, "simulated syscalls per row")->capture_default_str();
  CLI::Option* measure = sub.add_flag(
      "--measure", f->measure,
      "also measure that error here: per-call getpid(2) durations timed by the engine");
  sub.add_option("--measure-calls", f->measure_calls, "calls timed by --measure")
      ->capture_default_str()
      ->needs(measure);
  sub.add_flag("--live", f->live,
               "attack the running kernel instead, with the BPF sampler as ground truth (root; "
               "--samples = getpid calls, 1000..250000; docs/live.md)");
  AddCommon(sub, f->common);
  AddAllowLong(sub, f->allow_long);
  return [f, &sub] { return RunTimerCmd(*f, sub); };
}

// The attacks, one row each (STYLE.md rule 3).
struct AttackDef {
  const char* name;
  const char* summary;
  SetupFn setup;
};
const AttackDef kAttacks[] = {
    {"prng-recover",
     "recover the per-CPU LFSR113 state from leaked offsets (GF(2) solve), predict the next ones",
     SetupPrng},
    {"migration",
     "force migrations mid-syscall so a per-CPU offset is never updated; predict it (simulation)",
     SetupMigration},
    {"timer", "predict the counter-based (x86 rdtsc) offset by reading the same counter",
     SetupTimer},
};

}  // namespace

Runner SetupAttackCommand(CLI::App& sub) {
  sub.require_subcommand(1);
  auto runners = std::make_shared<std::vector<std::pair<CLI::App*, Runner>>>();
  for (const AttackDef& a : kAttacks) {
    CLI::App* s = sub.add_subcommand(a.name, a.summary);
    runners->emplace_back(s, a.setup(*s));
  }
  return [runners] {
    for (auto& [s, run] : *runners) {
      if (s->parsed()) return run();
    }
    return Fail(UsageError("attack: no attack named; give prng-recover, migration or timer"));
  };
}

}  // namespace kstacklab::cli
