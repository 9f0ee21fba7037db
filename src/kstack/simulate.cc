// The policies in a simulated world (policies.h: P::Simulate, SimWorld, SimPolicy): each design
// with an injected cpu source, its boot-time keys and seeds drawn from the simulation's dice in
// a fixed order (so an attack's output is a function of its seed), and a counter-fed design's
// counter read from the simulation's clock.
#include <cstdint>
#include <memory>
#include <vector>

#include "kstacklab/kstack/policies.h"

namespace kstacklab::kstack {
namespace {

// The cpu source of the other tasks of the per-task designs: PerTaskLegacyPolicy and
// SiphashTaskOffsetPolicy keep their state in one thread_local per template instantiation (one
// task per thread), so the simulated other tasks get their own instantiation and never touch the
// attacker's state. They share one state among themselves, which changes nothing the attacker
// sees: what they do to it is consume values from the per-CPU crng batches, as real tasks would.
struct OtherTaskCpu : InjectedCpu {};

// A crng of `cpus` slots keyed from the dice (32 draws).
std::shared_ptr<rng::Crng> SimCrng(const SimWorld& w) {
  uint8_t key[rng::kChachaKeySize];
  w.dice->Fill(key, sizeof key);
  return std::make_shared<rng::Crng>(w.cpus, key);
}

rng::SiphashKey SimSiphashKey(const SimWorld& w) {
  uint8_t kb[16];
  w.dice->Fill(kb, sizeof kb);
  return rng::SiphashKeyFromBytes(kb);
}

// The arm64 legacy designs: a crng from the dice, the per-CPU legacy steps fed by Rand.
template <class Rand>
SimPolicy SimulateCrngLegacy(const SimWorld& w) {
  auto crng = SimCrng(w);
  SimPolicy s = SimulateSteps(std::make_shared<PerCpuLegacyPolicy<Rand, InjectedCpu>>(
      w.cpus, Rand{crng.get()}, InjectedCpu{w.script}));
  s.other_syscall = [f = s.other_syscall, crng] { f(); };  // keeps the crng alive
  return s;
}

// prandom_seed_full_state() for each simulated CPU, its four words from the dice.
std::vector<rng::PrandomState> SimPrandomStates(const SimWorld& w) {
  std::vector<rng::PrandomState> states(static_cast<size_t>(w.cpus));
  for (rng::PrandomState& st : states) {
    uint32_t words[4];
    for (uint32_t& word : words) word = static_cast<uint32_t>(w.dice->Next());
    rng::PrandomSeedFromWords(st, words);
  }
  return states;
}

// The per-task legacy designs: the attacker and the other tasks each a task state of their own
// (new tasks: random_kstack_task_init()), fed by `rand`.
template <class Rand>
SimPolicy SimulatePerTask(const SimWorld& w, Rand rand) {
  using Attacker = PerTaskLegacyPolicy<Rand, InjectedCpu>;
  using Other = PerTaskLegacyPolicy<Rand, OtherTaskCpu>;
  Attacker::TaskInit();
  Other::TaskInit();
  const InjectedCpu cpu{w.script};
  auto a = std::make_shared<Attacker>(rand, cpu);
  auto o = std::make_shared<Other>(rand, OtherTaskCpu{cpu});
  SimPolicy s;
  s.entry = [a] { return KstackOffsetMax(a->Entry()); };
  s.exit = [a] { a->Exit(); };
  s.other_syscall = [o] { o->NextOffset(); };
  return s;
}

}  // namespace

Expected<SimPolicy> OffPolicy::Simulate(const SimWorld& /*world*/) {
  return SimulateSteps(std::make_shared<OffPolicy>());
}

Expected<SimPolicy> LegacyX86Policy::Simulate(const SimWorld& w) {
  return SimulateCounterFedSteps(std::make_shared<PerCpuLegacyPolicy<SimCounterRand, InjectedCpu>>(
      w.cpus, SimCounterRand{w.counter}, InjectedCpu{w.script}));
}

Expected<SimPolicy> LegacyArm64Policy::Simulate(const SimWorld& w) {
  return SimulateCrngLegacy<CrngU16Rand>(w);
}
Expected<SimPolicy> LegacyArm64NoLockPolicy::Simulate(const SimWorld& w) {
  return SimulateCrngLegacy<CrngU16RawRand>(w);
}
Expected<SimPolicy> LegacyArm64U8Policy::Simulate(const SimWorld& w) {
  return SimulateCrngLegacy<CrngU8RawRand>(w);
}

Expected<SimPolicy> SiphashPolicy::Simulate(const SimWorld& w) {
  const rng::SiphashKey key = SimSiphashKey(w);
  std::vector<uint64_t> tweaks(static_cast<size_t>(w.cpus));
  for (uint64_t& t : tweaks) t = w.dice->Next();
  return SimulateSteps(
      std::make_shared<SiphashOffsetPolicy<InjectedCpu>>(key, tweaks, InjectedCpu{w.script}));
}

Expected<SimPolicy> PercpuPrngPolicy::Simulate(const SimWorld& w) {
  return SimulateSteps(std::make_shared<PercpuPrandomPolicy<InjectedCpu>>(SimPrandomStates(w),
                                                                          InjectedCpu{w.script}));
}

Expected<SimPolicy> PercpuPrngIrqsoffPolicy::Simulate(const SimWorld& w) {
  return SimulateSteps(std::make_shared<PercpuPrandomPolicy<InjectedCpu, PrandomEntry::kIrqsOff>>(
      SimPrandomStates(w), InjectedCpu{w.script}));
}

Expected<SimPolicy> BufferedPrngPolicy::Simulate(const SimWorld& w) {
  return SimulateSteps(
      std::make_shared<BufferedPrandomPolicy<InjectedCpu>>(SimCrng(w), InjectedCpu{w.script}));
}

Expected<SimPolicy> PerTaskPolicy::Simulate(const SimWorld& w) {
  auto crng = SimCrng(w);
  SimPolicy s = SimulatePerTask(w, CrngU16Rand{crng.get()});
  s.other_syscall = [f = s.other_syscall, crng] { f(); };  // keeps the crng alive
  return s;
}

// The attacker's next offset is ror32(its state, 5) ^ the counter, masked: predict_next reads
// the state (a task's, so a copy of the object would not carry it) and the counter at *counter.
Expected<SimPolicy> PerTaskX86Policy::Simulate(const SimWorld& w) {
  SimPolicy s = SimulatePerTask(w, SimCounterRand{w.counter});
  s.predict_next = [counter = w.counter] {
    using Attacker = PerTaskLegacyPolicy<SimCounterRand, InjectedCpu>;
    return KstackOffsetMax(
        ChooseLegacyOffset(Attacker::task_offset(), static_cast<uint32_t>(*counter)));
  };
  return s;
}

Expected<SimPolicy> SiphashTaskPolicy::Simulate(const SimWorld& w) {
  using Attacker = SiphashTaskOffsetPolicy<InjectedCpu>;
  using Other = SiphashTaskOffsetPolicy<OtherTaskCpu>;
  Attacker::TaskInit(SimSiphashKey(w));  // new tasks (random_kstack_task_init): a key each
  Other::TaskInit(SimSiphashKey(w));
  // Both keys are set, so random_kstack_task_init()'s source (the crng) is never asked.
  const InjectedCpu cpu{w.script};
  auto a = std::make_shared<Attacker>(nullptr, cpu);
  auto o = std::make_shared<Other>(nullptr, OtherTaskCpu{cpu});
  SimPolicy s;
  s.entry = [a] { return KstackOffsetMax(a->Entry()); };
  s.other_syscall = [o] { o->NextOffset(); };
  return s;
}

}  // namespace kstacklab::kstack
