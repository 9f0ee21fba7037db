// migration: "an attacker forced to migrate mid-syscall leaves the old CPU's offset unchanged,
// so knows the next one" (the per-CPU bug fixed by 37beb4256016). A deterministic, seeded
// simulation of CPUs, the attacker task and other tasks, whose scheduler drives the real policy
// objects of kstack/ through their injectable cpu source (kstack::InjectedCpu): the cpu a step
// reads is where the simulation says the task runs at that moment.
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

#include "analysis/attack_util.h"
#include "kstacklab/attack.h"
#include "kstacklab/entropy.h"
#include "kstacklab/kstack/policies.h"

namespace kstacklab::analysis {
namespace {

using kstack::CpuScript;
using kstack::InjectedCpu;

// A second cpu-source type for the other tasks of the per-task designs: PerTaskLegacyPolicy and
// SiphashTaskOffsetPolicy keep their state in one thread_local per template instantiation (one task
// per thread), so the simulated other tasks get their own instantiation and never touch the
// attacker's state. They share one state among themselves, which changes nothing the attacker sees:
// what they do to it is consume values from the per-CPU crng batches, as real tasks would.
struct OtherTaskCpu : InjectedCpu {};

// x86's rdtsc() at the exit step, from the simulation's clock (deterministic).
struct SimTscRand {
  const uint64_t* now;
  uint32_t operator()(int /*cpu*/) const { return static_cast<uint32_t>(*now); }
};

struct Sim {
  CpuScript script;
  uint64_t now = 0;  // simulated TSC ticks
};

// The three steps the simulation needs from a design.
struct Steps {
  std::function<uint32_t()> attacker_entry;  // masked offset
  std::function<void()> attacker_exit;       // empty: no choose step
  std::function<void()> other_syscall;       // a whole syscall of another task
};

template <class P>
Steps PerCpuSteps(std::shared_ptr<P> p) {
  Steps s;
  s.attacker_entry = [p] { return kstack::KstackOffsetMax(p->Entry()); };
  if constexpr (requires { p->Exit(); }) s.attacker_exit = [p] { p->Exit(); };
  s.other_syscall = [p] { p->NextOffset(); };
  return s;
}

std::shared_ptr<rng::Crng> MakeCrng(int cpus, Dice& dice) {
  uint8_t key[rng::kChachaKeySize];
  dice.Fill(key, sizeof key);
  return std::make_shared<rng::Crng>(cpus, key);
}

Expected<Steps> Build(const std::string& name, int cpus, Sim& sim, Dice& dice) {
  const InjectedCpu cpu{&sim.script};
  if (name == "off") {
    auto p = std::make_shared<kstack::OffPolicy>();
    return PerCpuSteps(p);
  }
  if (name == "legacy-x86") {
    return PerCpuSteps(std::make_shared<kstack::PerCpuLegacyPolicy<SimTscRand, InjectedCpu>>(
        cpus, SimTscRand{&sim.now}, cpu));
  }
  if (name == "legacy-arm64" || name == "legacy-arm64-nolock" || name == "legacy-arm64-u8") {
    auto crng = MakeCrng(cpus, dice);
    Steps s;
    if (name == "legacy-arm64") {
      s = PerCpuSteps(
          std::make_shared<kstack::PerCpuLegacyPolicy<kstack::CrngU16Rand, InjectedCpu>>(
              cpus, kstack::CrngU16Rand{crng.get()}, cpu));
    } else if (name == "legacy-arm64-nolock") {
      s = PerCpuSteps(
          std::make_shared<kstack::PerCpuLegacyPolicy<kstack::CrngU16RawRand, InjectedCpu>>(
              cpus, kstack::CrngU16RawRand{crng.get()}, cpu));
    } else {
      s = PerCpuSteps(
          std::make_shared<kstack::PerCpuLegacyPolicy<kstack::CrngU8RawRand, InjectedCpu>>(
              cpus, kstack::CrngU8RawRand{crng.get()}, cpu));
    }
    s.other_syscall = [f = s.other_syscall, crng] { f(); };  // keeps the crng alive
    return s;
  }
  if (name == "siphash") {
    uint8_t kb[16];
    dice.Fill(kb, sizeof kb);
    std::vector<uint64_t> tweaks(static_cast<size_t>(cpus));
    for (uint64_t& t : tweaks) t = dice.Next();
    return PerCpuSteps(std::make_shared<kstack::SiphashOffsetPolicy<InjectedCpu>>(
        rng::SiphashKeyFromBytes(kb), tweaks, cpu));
  }
  if (name == "percpu-prng") {
    std::vector<rng::PrandomState> states(static_cast<size_t>(cpus));
    for (rng::PrandomState& st : states) {
      uint32_t words[4];
      for (uint32_t& w : words) w = static_cast<uint32_t>(dice.Next());
      rng::PrandomSeedFromWords(st, words);
    }
    return PerCpuSteps(std::make_shared<kstack::PercpuPrandomPolicy<InjectedCpu>>(states, cpu));
  }
  if (name == "buffered-prng") {
    return PerCpuSteps(
        std::make_shared<kstack::BufferedPrandomPolicy<InjectedCpu>>(MakeCrng(cpus, dice), cpu));
  }
  if (name == "per-task") {
    auto crng = MakeCrng(cpus, dice);
    using Attacker = kstack::PerTaskLegacyPolicy<kstack::CrngU16Rand, InjectedCpu>;
    using Other = kstack::PerTaskLegacyPolicy<kstack::CrngU16Rand, OtherTaskCpu>;
    Attacker::TaskInit();  // new tasks (random_kstack_task_init)
    Other::TaskInit();
    auto a = std::make_shared<Attacker>(kstack::CrngU16Rand{crng.get()}, cpu);
    auto o = std::make_shared<Other>(kstack::CrngU16Rand{crng.get()}, OtherTaskCpu{cpu});
    Steps s;
    s.attacker_entry = [a] { return kstack::KstackOffsetMax(a->Entry()); };
    s.attacker_exit = [a] { a->Exit(); };
    s.other_syscall = [o, crng] { o->NextOffset(); };
    return s;
  }
  if (name == "siphash-task") {
    auto key = [&dice] {
      uint8_t kb[16];
      dice.Fill(kb, sizeof kb);
      return rng::SiphashKeyFromBytes(kb);
    };
    using Attacker = kstack::SiphashTaskOffsetPolicy<InjectedCpu>;
    using Other = kstack::SiphashTaskOffsetPolicy<OtherTaskCpu>;
    Attacker::TaskInit(key());  // new tasks (random_kstack_task_init): a key each
    Other::TaskInit(key());
    // Both keys are set, so random_kstack_task_init()'s source (the crng) is never asked.
    auto a = std::make_shared<Attacker>(nullptr, cpu);
    auto o = std::make_shared<Other>(nullptr, OtherTaskCpu{cpu});
    Steps s;
    s.attacker_entry = [a] { return kstack::KstackOffsetMax(a->Entry()); };
    s.other_syscall = [o] { o->NextOffset(); };
    return s;
  }
  if (name == "uniform") {
    auto u = std::make_shared<UniformSource>(dice);
    Steps s;
    s.attacker_entry = [u] { return kstack::KstackOffsetMax(u->Next()); };
    s.other_syscall = [] {};
    return s;
  }
  return UsageError(fmt::format("migration does not support policy '{}'", name));
}

Expected<AttackRow> Simulate(const std::string& name, const MigrationOptions& o) {
  Dice dice(o.seed);
  Sim sim;
  auto steps = Build(name, o.cpus, sim, dice);
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
    for (uint64_t c = 0; c < cpus; ++c) {
      while (dice.Unit() < continue_p) {
        sim.script.cpu = static_cast<int>(c);
        sim.now += 300 + dice.Below(700);
        steps->other_syscall();
      }
    }
    sim.script.cpu = cur;
    sim.now += 300 + dice.Below(700);
    const std::optional<uint32_t> belief = known[static_cast<size_t>(cur)];
    const uint32_t offset = steps->attacker_entry();
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
    sim.script.cpu = cur;
    sim.now += 100 + dice.Below(200);
    if (steps->attacker_exit) steps->attacker_exit();
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

}  // namespace

std::vector<std::string> MigrationPolicies() {
  return {"off",     "legacy-x86",   "legacy-arm64", "legacy-arm64-nolock", "legacy-arm64-u8",
          "siphash", "siphash-task", "per-task",     "percpu-prng",         "buffered-prng",
          "uniform"};
}

Expected<AttackReport> RunMigration(const MigrationOptions& o) {
  if (o.cpus < 2 || o.syscalls < 1 || !(o.migrate_prob >= 0 && o.migrate_prob <= 1) ||
      !(o.user_migrate_prob >= 0 && o.user_migrate_prob <= 1) || !(o.other_rate >= 0)) {
    return UsageError(
        "migration: cpus >= 2, syscalls >= 1, migrate_prob in [0, 1], other_rate >= 0");
  }
  std::vector<std::string> names = o.policies.empty() ? MigrationPolicies() : o.policies;
  AttackReport r;
  r.attack = "migration";
  r.seed = o.seed;
  r.claim =
      "\"an attacker forced to migrate mid-syscall leaves the old CPU's offset unchanged, so "
      "knows the next one\" (the per-CPU designs before 37beb4256016)";
  r.remaining_bits_meaning =
      "conditional entropy H(offset | attacker's belief) over all attacker syscalls, bits "
      "(Miller-Madow corrected estimate)";
  for (const std::string& name : names) {
    auto row = Simulate(name, o);
    if (!row.ok()) return row.error();
    row->setting = fmt::format("{} cpus, p(mig) {:g}/{:g}, others {:g}", o.cpus, o.migrate_prob,
                               o.user_migrate_prob, o.other_rate);
    r.rows.push_back(std::move(*row));
  }
  r.notes = {
      "Method: deterministic simulation (seeded); the real policy objects of kstack/ with an "
      "injected cpu source; p(mig) = mid-syscall / user-mode migration probability; observed = "
      "attacker syscalls; predicted = those on a CPU it had left "
      "by migration (it predicts the offset it saw there); accuracy = correct / predicted.",
      "overall accuracy: over all attacker syscalls, the others guessed as offset 0. legacy-x86 "
      "uses the simulation's clock as rdtsc(). per-task: other tasks run their own task state.",
      "Not modelled: the kernel's preemption rules inside a step (a migration happens only "
      "between the entry and the exit step here), interrupts, CPU hotplug.",
  };
  return r;
}

}  // namespace kstacklab::analysis
