// migration: "an attacker forced to migrate mid-syscall leaves the old CPU's offset unchanged,
// so knows the next one" (the per-CPU bug fixed by 37beb4256016). A deterministic, seeded
// simulation of CPUs, the attacker task and other tasks, whose scheduler drives the real policy
// objects of kstack/ (every row of the policy table, through its Simulate) with an injected cpu
// source (kstack::InjectedCpu): the cpu a step reads is where the simulation says the task runs
// at that moment.
//
// One attacker syscall: other tasks first run a random number of whole syscalls on each CPU
// (geometric, mean --other-rate per CPU); then the attacker enters on its CPU (entry step, the
// offset it learns through a leak), is migrated with probability --migrate-prob to another
// random CPU, and runs the exit step (the legacy "choose" step) there; back in user mode it is
// moved to another random CPU with probability --user-migrate-prob (no step runs then, so it can
// return to a CPU whose slot it left untouched). The attacker's strategy
// is the claim's, the same for every design: after a syscall it left by migration, the old
// CPU's offset is believed unchanged, so its next syscall there is predicted to reuse it; a CPU
// on which it ran an exit step is unknown (predicted by a fixed guess, 0).
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "attack_util.h"
#include "kstacklab/analysis/attack.h"
#include "kstacklab/analysis/entropy.h"
#include "kstacklab/kstack/policies.h"

namespace kstacklab::analysis {
namespace {

// The design under attack in the simulated world (its row's Simulate), or the uniform reference.
Expected<kstack::SimPolicy> Build(const std::string& name, std::span<const kstack::PolicyDef> table,
                                  const kstack::SimWorld& world) {
  if (name == "uniform") {
    auto u = std::make_shared<UniformSource>(*world.dice);
    kstack::SimPolicy s;
    s.entry = [u] { return kstack::KstackOffsetMax(u->Next()); };
    s.other_syscall = [] {};
    return s;
  }
  const kstack::PolicyDef* def = kstack::FindPolicy(name, table);
  if (def == nullptr)
    return UsageError(fmt::format("migration does not support policy '{}'", name));
  return def->simulate(world);
}

// One design's row; progress(done_before + syscalls so far, total) as it goes.
Expected<AttackRow> Simulate(const std::string& name, const MigrationOptions& o,
                             uint64_t done_before, uint64_t total) {
  Dice dice(o.seed);
  kstack::CpuScript script;
  uint64_t now = 0;  // simulated TSC ticks: the counter-fed designs' counter
  auto steps = Build(name, o.policy_table, {o.cpus, &script, &dice, &now});
  if (!steps.ok()) return steps.error();
  const auto cpus = static_cast<uint64_t>(o.cpus);
  std::vector<std::optional<uint32_t>> known(cpus);
  // counts[class][offset/16]: class = believed offset/16, or 64 = nothing known.
  std::vector<uint64_t> counts(size_t{65} * 64, 0);
  const double continue_p = o.other_rate / (1 + o.other_rate);  // geometric, mean other_rate
  int cur = 0;
  uint64_t migrations = 0;
  uint64_t guesses_right = 0;
  AttackRow row;
  row.design = name;
  for (uint64_t s = 0; s < o.syscalls; ++s) {
    if (o.progress && s % 4096 == 0) o.progress(done_before + s, total);
    for (uint64_t c = 0; c < cpus; ++c) {
      while (dice.Unit() < continue_p) {
        script.cpu = static_cast<int>(c);
        now += 300 + dice.Below(700);
        steps->other_syscall();
      }
    }
    script.cpu = cur;
    now += 300 + dice.Below(700);
    const std::optional<uint32_t> belief = known[static_cast<size_t>(cur)];
    const uint32_t offset = steps->entry();
    if (belief) {
      ++row.predicted;
      row.correct += *belief == offset ? 1 : 0;
    } else {
      guesses_right += offset == 0 ? 1 : 0;
    }
    ++counts[(belief ? *belief / 16 : 64) * 64 + offset / 16];
    const int from = cur;
    if (dice.Unit() < o.migrate_prob) {
      cur = static_cast<int>((static_cast<uint64_t>(from) + 1 + dice.Below(cpus - 1)) % cpus);
      ++migrations;
    }
    script.cpu = cur;
    now += 100 + dice.Below(200);
    if (steps->exit) steps->exit();
    if (cur != from) {
      known[static_cast<size_t>(from)] = offset;  // the claim: the old CPU's slot is untouched
    }
    known[static_cast<size_t>(cur)].reset();
    // Back in user mode the scheduler may move the task (load balancing, preemption at a
    // tick): no step runs, so every slot keeps its value.
    if (dice.Unit() < o.user_migrate_prob) {
      cur = static_cast<int>((static_cast<uint64_t>(cur) + 1 + dice.Below(cpus - 1)) % cpus);
    }
  }
  row.observations = o.syscalls;
  SetAccuracy(row);
  row.remaining_bits = ConditionalEntropyBits(counts, 64);
  const double overall =
      static_cast<double>(row.correct + guesses_right) / static_cast<double>(o.syscalls);
  row.verdict = PredictionVerdict(row.correct, row.predicted, kChanceAccuracy);
  AddEvidence(row, "predicted share",
              static_cast<double>(row.predicted) / static_cast<double>(o.syscalls));
  AddEvidence(row, "overall accuracy", overall);
  AddEvidence(row, "mid-syscall migrations", static_cast<double>(migrations));
  return row;
}

// The counter-fed rows (which use the simulation's clock as rdtsc()).
std::vector<std::string> CounterFedRows(std::span<const kstack::PolicyDef> table) {
  std::vector<std::string> names;
  for (const kstack::PolicyDef& p : table) {
    if (kstack::CounterFed(p.facts)) names.emplace_back(p.name);
  }
  return names;
}

}  // namespace

// ~15 ns per simulated step (an other-task syscall, a dice draw per CPU per attacker syscall),
// from runs of this project's machine; the issue that asked for the bound measured 10 ns.
constexpr double kMigrationSecondsPerStep = 15e-9;

AttackCost EstimateMigrationCost(const MigrationOptions& o) {
  const double designs = static_cast<double>(
      o.policies.empty() ? MigrationPolicies(o.policy_table).size() : o.policies.size());
  const double steps = designs * static_cast<double>(o.syscalls) *
                       (std::max(o.cpus, 0) * (1 + std::max(o.other_rate, 0.0)) + 2);
  AttackCost c;
  c.seconds = steps * kMigrationSecondsPerStep;
  // Per design: the belief per CPU, the design's per-CPU slots (cache lines), the counts.
  c.bytes = static_cast<double>(std::max(o.cpus, 0)) * (16 + 4 * 64) + 65.0 * 64 * 8;
  return c;
}

std::vector<std::string> MigrationPolicies(std::span<const kstack::PolicyDef> table) {
  std::vector<std::string> names;
  for (const kstack::PolicyDef& p : table) names.emplace_back(p.name);
  names.emplace_back("uniform");
  return names;
}

Expected<AttackReport> RunMigration(const MigrationOptions& o) {
  if (o.cpus < 2 || o.syscalls < 1 || !(o.migrate_prob >= 0 && o.migrate_prob <= 1) ||
      !(o.user_migrate_prob >= 0 && o.user_migrate_prob <= 1) || !(o.other_rate >= 0)) {
    return UsageError(
        "migration: cpus >= 2, syscalls >= 1, migrate_prob in [0, 1], other_rate >= 0");
  }
  std::vector<std::string> names =
      o.policies.empty() ? MigrationPolicies(o.policy_table) : o.policies;
  AttackReport r;
  r.attack = "migration";
  r.seed = o.seed;
  r.claim = AttackClaim::kMigrationOldCpu;
  const uint64_t total = names.size() * o.syscalls;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    auto row = Simulate(name, o, i * o.syscalls, total);
    if (!row.ok()) return row.error();
    row->setting = fmt::format("{} cpus, p(mig) {:g}/{:g}, others {:g}", o.cpus, o.migrate_prob,
                               o.user_migrate_prob, o.other_rate);
    r.rows.push_back(std::move(*row));
  }
  r.notes = {AttackFixedNote::kMigrationMethod,
             MigrationOverallNote{CounterFedRows(o.policy_table)},
             AttackFixedNote::kMigrationNotModelled};
  return r;
}

}  // namespace kstacklab::analysis
