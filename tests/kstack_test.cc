// kstack offset designs: offsets, kernel-derived known answers, per-CPU / per-task state, the
// migration race, and the applied (alloca) form.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sodium.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <bitset>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kstacklab/kstack/apply.h"
#include "kstacklab/kstack/percpu.h"
#include "kstacklab/kstack/policies.h"

namespace kstacklab::kstack {
namespace {

// A random input that replays a script (one value per call).
struct ScriptedRand {
  const std::vector<uint32_t>* values;
  size_t* next;
  uint32_t operator()(int) const { return (*values)[(*next)++]; }
};

rng::Crng MakeCrng(int cpus, uint8_t fill) {
  uint8_t key[rng::kChachaKeySize];
  for (size_t i = 0; i < sizeof key; ++i) key[i] = static_cast<uint8_t>(fill + i);
  return rng::Crng(cpus, key);
}

std::shared_ptr<rng::Crng> MakeSharedCrng(int cpus, uint8_t fill) {
  uint8_t key[rng::kChachaKeySize];
  for (size_t i = 0; i < sizeof key; ++i) key[i] = static_cast<uint8_t>(fill + i);
  return std::make_shared<rng::Crng>(cpus, key);
}

TEST(KstackTable, RowsAreNamedUniqueAndFindable) {
  ASSERT_FALSE(Policies().empty());
  EXPECT_EQ(std::string(Policies()[0].name), "off");  // the baseline row comes first
  std::set<std::string> names;
  for (const PolicyDef& def : Policies()) {
    SCOPED_TRACE(def.name);
    EXPECT_NE(std::string(def.name), "");
    EXPECT_NE(std::string(def.summary), "");
    EXPECT_TRUE(names.insert(def.name).second) << "duplicate policy name";
    EXPECT_EQ(FindPolicy(def.name), &def);
  }
  EXPECT_EQ(FindPolicy("nope"), nullptr);
}

TEST(KstackMask, KstackOffsetMax64Bit) {
  EXPECT_EQ(KstackOffsetMax(0xFFFFFFFFu), 0x3F0u);
  EXPECT_EQ(KstackOffsetMax(0x40Fu), 0u);
  EXPECT_EQ(KstackOffsetMax(0x12345678u), 0x270u);
}

// Every policy yields only multiples of 16 in [0, 1008]; all but `off` yield all 64 of them.
TEST(KstackPolicies, OffsetsInRangeAndAll64Seen) {
  for (const PolicyDef& def : Policies()) {
    SCOPED_TRACE(def.name);
    auto policy = def.boot();
    ASSERT_TRUE(policy.ok()) << policy.error().message;
    std::bitset<64> seen;
    for (int i = 0; i < 20000; ++i) {
      const uint32_t off = def.next_offset(policy->get());
      ASSERT_EQ(off % 16, 0u) << off;
      ASSERT_LE(off, 1008u);
      seen.set(off / 16);
    }
    if (std::string(def.name) == "off") {
      EXPECT_EQ(seen.count(), 1u);
      EXPECT_TRUE(seen.test(0));
    } else {
      EXPECT_EQ(seen.count(), 64u);
    }
  }
}

// Derived by hand from choose_random_kstack_offset() (include/linux/randomize_kstack.h, v6.9+:
// ror32(old, 5) ^ rand): from 0 with rand 0x12345678, 0x9abcdef0, 0x0fedcba9.
TEST(KstackLegacy, ChooseStepMatchesDerivedExample) {
  EXPECT_EQ(Ror32(0x12345678u, 5), 0xC091A2B3u);
  uint32_t o = ChooseLegacyOffset(0, 0x12345678u);
  EXPECT_EQ(o, 0x12345678u);
  EXPECT_EQ(KstackOffsetMax(o), 0x270u);
  o = ChooseLegacyOffset(o, 0x9abcdef0u);
  EXPECT_EQ(o, 0x5a2d7c43u);
  EXPECT_EQ(KstackOffsetMax(o), 0x040u);
  o = ChooseLegacyOffset(o, 0x0fedcba9u);
  EXPECT_EQ(o, 0x153ca04bu);
  EXPECT_EQ(KstackOffsetMax(o), 0x040u);

  // The same through the policy: the offset chosen at exit is used at the next entry.
  const std::vector<uint32_t> rands = {0x12345678u, 0x9abcdef0u, 0x0fedcba9u, 0};
  size_t next = 0;
  CpuScript script;
  PerCpuLegacyPolicy<ScriptedRand, InjectedCpu> p(2, ScriptedRand{&rands, &next},
                                                  InjectedCpu{&script});
  EXPECT_EQ(p.NextOffset(), 0u);
  EXPECT_EQ(p.NextOffset(), 0x270u);
  EXPECT_EQ(p.NextOffset(), 0x040u);
  EXPECT_EQ(p.NextOffset(), 0x040u);
  EXPECT_EQ(p.offset(0), Ror32(0x153ca04bu, 5));  // the 4th exit's rand is 0
  EXPECT_EQ(p.offset(1), 0u);
  EXPECT_EQ(script.reads, 8u);  // one cpu read per entry and one per exit
}

// The arm64 variants feed the crng's own outputs into the choose step, on the step's cpu.
TEST(KstackLegacy, Arm64VariantsUseTheCrngOfTheirCpu) {
  auto crng = MakeSharedCrng(2, 0x40);
  rng::Crng ref = MakeCrng(2, 0x40);
  CpuScript script;
  script.cpu = 1;
  PerCpuLegacyPolicy<CrngU16Rand, InjectedCpu> locked(2, CrngU16Rand{crng.get()},
                                                      InjectedCpu{&script});
  PerCpuLegacyPolicy<CrngU8RawRand, InjectedCpu> u8(2, CrngU8RawRand{crng.get()},
                                                    InjectedCpu{&script});
  uint32_t want16 = 0, want8 = 0;
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(locked.NextOffset(), KstackOffsetMax(want16));
    want16 = ChooseLegacyOffset(want16, ref.GetRandomU16(1));
    EXPECT_EQ(u8.NextOffset(), KstackOffsetMax(want8));
    want8 = ChooseLegacyOffset(want8, ref.GetRandomU8(1));
  }
  EXPECT_EQ(crng->Counters(1).refills[1], 5u);  // u16: ceil(200 / 48)
  EXPECT_EQ(crng->Counters(1).refills[0], 3u);  // u8: ceil(200 / 96)
  EXPECT_EQ(crng->Counters(0).chacha_blocks, 0u);
}

// Derived (not a kernel vector) from lib/random32.c: raw seeds deadbeef/cafebabe/12345678/
// 9abcdef0 through prandom_seed_full_state's per-CPU step, then one output per syscall, masked with
// 0x3F0.
TEST(KstackPercpuPrng, KnownSeedReproducesMaskedOutputs) {
  const uint32_t seeds[4] = {0xdeadbeefu, 0xcafebabeu, 0x12345678u, 0x9abcdef0u};
  std::vector<rng::PrandomState> states(2);
  rng::PrandomSeedFromWords(states[0], seeds);
  const rng::PrandomState warmed{3914310139u, 2884665896u, 2749798375u, 3161520175u};
  ASSERT_EQ(states[0], warmed);
  CpuScript script;
  PercpuPrandomPolicy<InjectedCpu> p(states, InjectedCpu{&script});
  const uint32_t want[8] = {352, 128, 800, 128, 128, 96, 96, 576};
  for (uint32_t w : want) EXPECT_EQ(p.NextOffset(), w);
  EXPECT_EQ(script.reads, 8u);                 // one cpu read per syscall, no choose step
  EXPECT_EQ(p.state(1), rng::PrandomState{});  // cpu 1 untouched (and unseeded: zero state)
}

// The v7.3 irqsoff entry draws the same offsets as the v7.1 entry from the same states (the
// vectors above), and only the v7.1 entry touches the preempt count.
TEST(KstackPercpuPrng, IrqsoffEntryGivesTheSameOffsetsWithoutThePreemptCount) {
  const uint32_t seeds[4] = {0xdeadbeefu, 0xcafebabeu, 0x12345678u, 0x9abcdef0u};
  std::vector<rng::PrandomState> states(1);
  rng::PrandomSeedFromWords(states[0], seeds);
  CpuScript script;
  PercpuPrandomPolicy<InjectedCpu, PrandomEntry::kIrqsOff> irqsoff(states, InjectedCpu{&script});
  const uint32_t before = PreemptModel::count;
  const uint32_t want[8] = {352, 128, 800, 128, 128, 96, 96, 576};
  for (uint32_t w : want) EXPECT_EQ(irqsoff.NextOffset(), w);
  EXPECT_EQ(PreemptModel::count, before);
  EXPECT_EQ(script.reads, 8u);
}

// v7.1's get_cpu_var()/put_cpu_var(): the count is raised around the step and lowered after it;
// with a reschedule pending, lowering it to zero calls the scheduler once (preempt_enable()), and
// the irqsoff entry never does.
TEST(KstackPercpuPrng, GetCpuVarEntryRaisesLowersAndReschedules) {
  std::vector<rng::PrandomState> states(1);
  const uint32_t seeds[4] = {1, 2, 3, 4};
  rng::PrandomSeedFromWords(states[0], seeds);
  CpuScript script;
  PercpuPrandomPolicy<InjectedCpu> v71(states, InjectedCpu{&script});
  PercpuPrandomPolicy<InjectedCpu, PrandomEntry::kIrqsOff> v73(states, InjectedCpu{&script});
  ASSERT_EQ(PreemptModel::count, PreemptModel::kNeedReschedInverted);  // count 0, none pending
  const uint64_t schedules = PreemptModel::schedules;
  v71.NextOffset();
  EXPECT_EQ(PreemptModel::count, PreemptModel::kNeedReschedInverted);
  EXPECT_EQ(PreemptModel::schedules, schedules);
  PreemptModel::SetNeedResched();
  v73.NextOffset();  // IRQs off, no preempt count: nothing to check
  EXPECT_EQ(PreemptModel::schedules, schedules);
  v71.NextOffset();  // put_cpu_var() sees the pending reschedule
  EXPECT_EQ(PreemptModel::schedules, schedules + 1);
  EXPECT_EQ(PreemptModel::count, PreemptModel::kNeedReschedInverted);  // done, none pending
  // Nested: a reschedule pending while the count is raised elsewhere waits for the outer enable.
  PreemptDisable();
  PreemptModel::SetNeedResched();
  v71.NextOffset();
  EXPECT_EQ(PreemptModel::schedules, schedules + 1);
  PreemptEnable();
  EXPECT_EQ(PreemptModel::schedules, schedules + 2);
}

TEST(KstackSiphash, TenOffsetsPerHash) {
  uint8_t key_bytes[16];
  for (int i = 0; i < 16; ++i) key_bytes[i] = static_cast<uint8_t>(i);
  const rng::SiphashKey key = rng::SiphashKeyFromBytes(key_bytes);
  const std::vector<uint64_t> tweaks = {0x0123456789abcdefull, 0xfedcba9876543210ull};
  CpuScript script;
  script.cpu = 1;
  SiphashOffsetPolicy<InjectedCpu> p(key, tweaks, InjectedCpu{&script});
  for (uint64_t counter = 0; counter < 3; ++counter) {
    const uint64_t h = rng::Siphash1u64(counter ^ tweaks[1], key);
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(p.NextOffset(), static_cast<uint32_t>((h >> (6 * i)) & 0x3F) << 4)
          << "counter " << counter << " chunk " << i;
    }
    EXPECT_EQ(p.slot(1).hashes, counter + 1);
  }
  EXPECT_EQ(p.slot(1).counter, 3u);
  EXPECT_EQ(p.slot(0).hashes, 0u);
  // Cross-check with the kernel vector: siphash_1u64(0x0706050403020100) with key 00..0f is
  // SipHash reference vector 8 (veorq/SipHash vectors.h; lib/tests/siphash_kunit.c).
  EXPECT_EQ(rng::Siphash1u64(0x0706050403020100ull, key), 0x93f5f5799a932462ull);
}

// The per-task siphash draft (kstack/policies.h): offset n of a task = KSTACK_OFFSET_MAX of the
// low 32 bits of SipHash-2-4(seq = n as 8 little-endian bytes) under the task's key. Checked
// against libsodium's crypto_shorthash_siphash24, an independent SipHash-2-4.
TEST(KstackSiphashTask, OneSiphashPerSyscallMatchesLibsodium) {
  ASSERT_GE(sodium_init(), 0);
  uint8_t key_bytes[16];
  for (int i = 0; i < 16; ++i) key_bytes[i] = static_cast<uint8_t>(0xa0 + i);
  using Policy = SiphashTaskOffsetPolicy<InjectedCpu>;
  CpuScript script;
  Policy p(MakeSharedCrng(1, 0x33), InjectedCpu{&script});
  Policy::TaskInit(rng::SiphashKeyFromBytes(key_bytes));
  for (uint64_t seq = 0; seq < 200; ++seq) {
    uint8_t msg[8];
    for (int b = 0; b < 8; ++b) msg[b] = static_cast<uint8_t>(seq >> (8 * b));
    uint8_t out[crypto_shorthash_siphash24_BYTES];
    crypto_shorthash_siphash24(out, msg, sizeof msg, key_bytes);
    const uint32_t low32 = rng::LoadLe32(out);
    ASSERT_EQ(p.NextOffset(), low32 & 0x3F0u) << "seq " << seq;
  }
  EXPECT_EQ(Policy::task().seq, 200u);
}

// random_kstack_task_init(): a new task draws its key from get_random_bytes() (the policy's
// crng, on its cpu) and starts at seq 0; the first task's key and sequence are untouched.
TEST(KstackSiphashTask, NewThreadDrawsItsOwnKeyFromTheCrng) {
  using Policy = SiphashTaskOffsetPolicy<InjectedCpu>;
  CpuScript script;
  script.cpu = 1;
  Policy p(MakeSharedCrng(2, 0x44), InjectedCpu{&script});
  uint8_t mine[16] = {1};
  Policy::TaskInit(rng::SiphashKeyFromBytes(mine));
  for (int i = 0; i < 5; ++i) p.NextOffset();

  rng::Crng ref = MakeCrng(2, 0x44);
  uint8_t expected_key[16];
  ref.GetRandomBytes(1, expected_key, sizeof expected_key);
  const rng::SiphashKey expected = rng::SiphashKeyFromBytes(expected_key);
  uint32_t first = 99;
  SiphashTaskState state;
  std::thread t([&] {
    first = p.NextOffset();
    state = Policy::task();
  });
  t.join();
  EXPECT_EQ(first, KstackOffsetMax(static_cast<uint32_t>(rng::Siphash1u64(0, expected))));
  EXPECT_EQ(state.seq, 1u);
  EXPECT_EQ(state.key.k[0], expected.k[0]);
  EXPECT_EQ(state.key.k[1], expected.k[1]);
  EXPECT_EQ(Policy::task().seq, 5u);
  EXPECT_EQ(Policy::task().key.k[0], rng::SiphashKeyFromBytes(mine).k[0]);
}

TEST(KstackBufferedPrng, FiveOffsetsPerOutputAndReseedEvery65536Outputs) {
  auto crng = MakeSharedCrng(2, 0x11);
  rng::Crng ref = MakeCrng(2, 0x11);
  CpuScript script;
  BufferedPrandomPolicy<InjectedCpu> p(crng, InjectedCpu{&script});
  auto reference_seed = [&ref](rng::PrandomState& s) {
    uint8_t b[16];
    ref.GetRandomBytes(0, b, sizeof b);
    const uint32_t w[4] = {rng::LoadLe32(b), rng::LoadLe32(b + 4), rng::LoadLe32(b + 8),
                           rng::LoadLe32(b + 12)};
    rng::PrandomSeedFromWords(s, w);
  };
  rng::PrandomState s;
  reference_seed(s);
  uint64_t mismatches = 0;
  for (uint32_t out = 0; out < 65536; ++out) {
    const uint32_t v = rng::PrandomU32State(s);
    for (int i = 0; i < 5; ++i) {
      if (p.NextOffset() != ((v >> (6 * i)) & 0x3F) << 4) ++mismatches;
    }
    if (out == 0) {
      EXPECT_EQ(p.slot(0).reseeds, 1u);
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(p.slot(0).reseeds, 1u);
  EXPECT_EQ(p.slot(0).outputs, 65536u);
  // Output 65537 comes from a fresh seed drawn from the crng.
  reference_seed(s);
  const uint32_t v = rng::PrandomU32State(s);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p.NextOffset(), ((v >> (6 * i)) & 0x3F) << 4);
  EXPECT_EQ(p.slot(0).reseeds, 2u);
  EXPECT_EQ(p.slot(0).outputs, 1u);
  EXPECT_EQ(p.slot(1).reseeds, 0u);
}

// Per-task state: each thread starts at 0 (random_kstack_task_init) and evolves on its own.
TEST(KstackPerTask, StateIsIndependentBetweenThreads) {
  using Policy = PerTaskLegacyPolicy<ScriptedRand, InjectedCpu>;
  const std::vector<uint32_t> rands_a = {0x12345678u, 0x9abcdef0u, 0x0fedcba9u};
  size_t next_a = 0;
  CpuScript script_a;
  Policy a(ScriptedRand{&rands_a, &next_a}, InjectedCpu{&script_a});
  Policy::TaskInit();
  EXPECT_EQ(a.NextOffset(), 0u);
  EXPECT_EQ(a.NextOffset(), 0x270u);
  ASSERT_EQ(Policy::task_offset(), 0x5a2d7c43u);

  uint32_t b_first = 99, b_second = 99, b_state = 0;
  std::thread t([&] {
    const std::vector<uint32_t> rands_b = {1, 2};
    size_t next_b = 0;
    CpuScript script_b;
    Policy b(ScriptedRand{&rands_b, &next_b}, InjectedCpu{&script_b});
    b_first = b.NextOffset();
    b_second = b.NextOffset();
    b_state = Policy::task_offset();
  });
  t.join();
  EXPECT_EQ(b_first, 0u);   // a new task, whatever the other task did
  EXPECT_EQ(b_second, 0u);  // 1 & 0x3F0
  EXPECT_EQ(b_state, Ror32(1, 5) ^ 2u);
  EXPECT_EQ(Policy::task_offset(), 0x5a2d7c43u);  // untouched by the other thread
  EXPECT_EQ(a.NextOffset(), 0x040u);

  // The production policy too: a second thread starts from 0 after this one ran.
  auto per_task = Boot<PerTaskPolicy>();
  ASSERT_TRUE(per_task.ok());
  for (int i = 0; i < 10; ++i) (*per_task)->NextOffset();
  const uint32_t mine = PerTaskPolicy::task_offset();
  uint32_t other_first = 99;
  std::thread t2([&] { other_first = (*per_task)->NextOffset(); });
  t2.join();
  EXPECT_EQ(other_first, 0u);
  EXPECT_EQ(PerTaskPolicy::task_offset(), mine);
}

// per-task-x86: the stable backport on x86, ror32(state, 5) ^ rdtsc() at the return to user
// mode (the counter truncated to the u32 argument); derived vectors with a scripted counter.
TEST(KstackPerTask, X86StepIsRor32XorTheTruncatedCounter) {
  uint64_t counter = 0x1234'5678'9abc'def0ull;
  using Policy = PerTaskLegacyPolicy<SimCounterRand, InjectedCpu>;
  CpuScript script;
  Policy p(SimCounterRand{&counter}, InjectedCpu{&script});
  Policy::TaskInit();
  EXPECT_EQ(p.NextOffset(), 0u);  // a new task: offset 0, then the exit step
  EXPECT_EQ(Policy::task_offset(), 0x9abcdef0u);
  counter = 0xffff'ffff'0000'0010ull;
  EXPECT_EQ(p.NextOffset(), 0x9abcdef0u & 0x3F0);  // 0x2f0
  EXPECT_EQ(Policy::task_offset(), Ror32(0x9abcdef0u, 5) ^ 0x10u);
  EXPECT_EQ(Policy::task_offset(), 0x84d5e6e7u);
  // The production row reads the real counter: consecutive states differ by the counter's
  // advance, and the first offset of a new thread is 0.
  uint32_t first = 99;
  std::thread t([&] {
    PerTaskX86Policy x86;
    first = x86.NextOffset();
  });
  t.join();
  EXPECT_EQ(first, 0u);
}

// copy_process() calls random_kstack_task_init(): a forked child starts from offset 0 (per-task
// legacy rows) or draws a fresh key (siphash-task), never its parent's state.
TEST(KstackPerTask, ForkedChildStartsFromAFreshTaskState) {
  PerTaskX86Policy x86;
  auto arm64 = Boot<PerTaskPolicy>();
  auto sip = Boot<SiphashTaskPolicy>();
  ASSERT_TRUE(arm64.ok() && sip.ok());
  for (int i = 0; i < 20; ++i) {
    x86.NextOffset();
    (*arm64)->NextOffset();
    (*sip)->NextOffset();
  }
  ASSERT_NE(PerTaskX86Policy::task_offset(), 0u);
  ASSERT_NE(PerTaskPolicy::task_offset(), 0u);
  ASSERT_TRUE(SiphashTaskPolicy::task().initialised);
  const rng::SiphashKey parent_key = SiphashTaskPolicy::task().key;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int bad = 0;
    bad |= PerTaskX86Policy::task_offset() != 0 ? 1 : 0;
    bad |= PerTaskPolicy::task_offset() != 0 ? 2 : 0;
    bad |= SiphashTaskPolicy::task().initialised ? 4 : 0;
    bad |= x86.NextOffset() != 0 ? 8 : 0;  // the child's first syscall: offset 0
    (*sip)->NextOffset();                  // keyed afresh from the crng
    bad |= SiphashTaskPolicy::task().seq != 1 ? 16 : 0;
    const rng::SiphashKey& key = SiphashTaskPolicy::task().key;
    bad |= key.k[0] == parent_key.k[0] && key.k[1] == parent_key.k[1] ? 32 : 0;
    _exit(bad);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "bits: 1 x86, 2 arm64, 4 siphash-task kept, 8 first "
                                       "offset, 16 seq, 32 the parent's key";
  EXPECT_NE(PerTaskX86Policy::task_offset(), 0u);  // the parent keeps its own
}

// Every policy says which kernels run it (docs/models.md prints the same table).
TEST(KstackTable, EveryPolicyNamesItsKernels) {
  for (const PolicyDef& p : Policies()) {
    EXPECT_GT(std::string(p.kernels.mainline).size(), 4u) << p.name;
    EXPECT_GT(std::string(p.kernels.stable).size(), 2u) << p.name;
    EXPECT_GT(std::string(p.kernels.verified).size(), 4u) << p.name;
    EXPECT_EQ(KernelsLine(p.kernels),
              std::string("mainline: ") + p.kernels.mainline + "; stable: " + p.kernels.stable);
  }
  const PolicyDef* v71 = FindPolicy("percpu-prng");
  const PolicyDef* v73 = FindPolicy("percpu-prng-irqsoff");
  ASSERT_TRUE(v71 && v73);
  EXPECT_NE(std::string(v71->kernels.mainline).find("v7.1"), std::string::npos);
  EXPECT_NE(std::string(v73->kernels.mainline).find("v7.3"), std::string::npos);
  EXPECT_NE(std::string(FindPolicy("per-task-x86")->kernels.mainline).find("never"),
            std::string::npos);
}

// Restores the calling thread's affinity on scope exit.
class AffinityGuard {
 public:
  AffinityGuard() { ok_ = sched_getaffinity(0, sizeof saved_, &saved_) == 0; }
  ~AffinityGuard() {
    if (ok_) sched_setaffinity(0, sizeof saved_, &saved_);
  }
  bool Allowed(int cpu) const { return ok_ && CPU_ISSET(cpu, &saved_); }
  static bool Pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 && sched_getcpu() == cpu;
  }

 private:
  cpu_set_t saved_{};
  bool ok_ = false;
};

TEST(KstackPerCpu, PinnedThreadUpdatesItsCpusSlot) {
  AffinityGuard guard;
  if (!guard.Allowed(0) || !guard.Allowed(1)) {
    GTEST_SKIP() << "needs CPUs 0 and 1 in this process's affinity mask";
  }
  auto boot = Boot<PercpuPrngPolicy>();
  ASSERT_TRUE(boot.ok());
  PercpuPrngPolicy& p = **boot;
  ASSERT_GE(p.state(0).s1, 2u);  // seeded at boot (minimum 2)
  const rng::PrandomState s0 = p.state(0), s1 = p.state(1);

  ASSERT_TRUE(AffinityGuard::Pin(0));
  for (int i = 0; i < 10; ++i) KstackSyscall(p);
  EXPECT_NE(p.state(0), s0);
  EXPECT_EQ(p.state(1), s1);
  rng::PrandomState expect0 = s0;
  for (int i = 0; i < 10; ++i) rng::PrandomU32State(expect0);
  EXPECT_EQ(p.state(0), expect0);  // exactly one step per syscall

  ASSERT_TRUE(AffinityGuard::Pin(1));
  for (int i = 0; i < 7; ++i) KstackSyscall(p);
  EXPECT_EQ(p.state(0), expect0);
  rng::PrandomState expect1 = s1;
  for (int i = 0; i < 7; ++i) rng::PrandomU32State(expect1);
  EXPECT_EQ(p.state(1), expect1);

  // The legacy design on the real cpu source as well.
  auto legacy = Boot<LegacyArm64Policy>();
  ASSERT_TRUE(legacy.ok());
  ASSERT_TRUE(AffinityGuard::Pin(1));
  for (int i = 0; i < 5; ++i) (*legacy)->NextOffset();
  EXPECT_EQ((*legacy)->offset(0), 0u);
  EXPECT_EQ((*legacy)->crng().Counters(0).chacha_blocks, 0u);
  EXPECT_EQ((*legacy)->crng().Counters(1).refills[1], 1u);
}

// The legacy race: a syscall entered on cpu 0 and migrated to cpu 1 before its exit step
// updates cpu 1's slot, so cpu 0's offset is reused by the next syscall there.
TEST(KstackPerCpu, MigrationDuringSyscallLeavesTheOldSlotUnchanged) {
  const std::vector<uint32_t> rands = {0x12345678u, 0x9abcdef0u, 0x0fedcba9u, 0x11111111u};
  size_t next = 0;
  CpuScript script;
  PerCpuLegacyPolicy<ScriptedRand, InjectedCpu> p(2, ScriptedRand{&rands, &next},
                                                  InjectedCpu{&script});
  p.NextOffset();  // cpu 0: slot 0 = 0x12345678
  ASSERT_EQ(p.offset(0), 0x12345678u);
  const uint32_t leaked = KstackOffsetMax(p.Entry());  // cpu 0 entry: offset 0x270
  EXPECT_EQ(leaked, 0x270u);
  script.cpu = 1;  // migrated during the syscall
  p.Exit();        // updates cpu 1's slot
  EXPECT_EQ(p.offset(0), 0x12345678u);
  EXPECT_EQ(p.offset(1), 0x9abcdef0u);
  script.cpu = 0;
  EXPECT_EQ(p.NextOffset(), leaked);  // the attacker knows this one
}

// A migration inside the exit step (during the random input, e.g. a get_random_u16 refill)
// writes the slot of the cpu read at the start of the step: the cpu is read once.
TEST(KstackPerCpu, MigrationInsideTheExitStepWritesTheOldSlot) {
  CpuScript script;
  struct MigratingRand {
    CpuScript* script;
    uint32_t operator()(int cpu) const {
      script->cpu = 1 - cpu;  // preempted and moved while computing rand
      return 0x12345678u;
    }
  };
  PerCpuLegacyPolicy<MigratingRand, InjectedCpu> p(2, MigratingRand{&script}, InjectedCpu{&script});
  p.NextOffset();
  EXPECT_EQ(script.cpu, 1);
  EXPECT_EQ(p.offset(0), 0x12345678u);  // the old cpu's slot, written from cpu 1
  EXPECT_EQ(p.offset(1), 0u);
  EXPECT_EQ(script.reads, 2u);

  // percpu-prng: a migration after the cpu read steps the old cpu's state.
  std::vector<rng::PrandomState> states(2);
  const uint32_t seeds[4] = {1, 2, 3, 4};
  rng::PrandomSeedFromWords(states[0], seeds);
  rng::PrandomSeedFromWords(states[1], seeds);
  CpuScript s2;
  PercpuPrandomPolicy<InjectedCpu> prng(states, InjectedCpu{&s2});
  prng.NextOffset();
  EXPECT_NE(prng.state(0), states[0]);
  EXPECT_EQ(prng.state(1), states[1]);
}

// The applied form moves the handler's frame down by exactly the masked offset.
struct FixedOffset {
  uint32_t next = 0;
  int exits = 0;
  uint32_t Entry() { return next; }
  void Exit() { ++exits; }
};

TEST(KstackApply, HandlerFrameMovesByTheMaskedOffset) {
  FixedOffset p;
  const uintptr_t base = KstackSyscall(p);
  ASSERT_NE(base, 0u);
  EXPECT_EQ(KstackSyscall(p), base);
  for (uint32_t k = 0; k < 64; ++k) {
    p.next = k * 16;
    EXPECT_EQ(base - KstackSyscall(p), k * 16) << k;
  }
  p.next = 0xFFFFF40Fu;  // unmasked bits are dropped: 0x40F & 0x3F0 = 0
  EXPECT_EQ(KstackSyscall(p), base);
  EXPECT_EQ(p.exits, 67);
}

// The plain-XOR era (v5.13-v6.8): the state is the XOR of pre-masked inputs, so only the input
// mask's bits reach the alloca; the compiler then rounds up (the eras in kstack/apply.h).
TEST(OffsetGeometryTest, PlainXorEraGeometries) {
  const OffsetGeometry& x86 = kGeometryPreV69X86;  // rdtsc() & 0xFF, rounded up to 8 (GCC)
  EXPECT_EQ(x86.Apply(0), 0u);
  EXPECT_EQ(x86.Apply(1), 8u);
  EXPECT_EQ(x86.Apply(0xF8), 248u);
  EXPECT_EQ(x86.Apply(0xF9), 256u);
  EXPECT_EQ(x86.Apply(0xFFFFFF01u), 8u);  // bits 8 and up never reach the alloca
  EXPECT_EQ(x86.max(), 256u);
  EXPECT_EQ(x86.count(), 33u);
  // Of the 256 values of x & 0xFF (each 4 times in 1024): 1 gives 0, 8 each offset 8..248, 7 give
  // 256.
  EXPECT_DOUBLE_EQ(x86.Probability(0), 4.0 / 1024);
  EXPECT_DOUBLE_EQ(x86.Probability(1), 32.0 / 1024);
  EXPECT_DOUBLE_EQ(x86.Probability(32), 28.0 / 1024);
  const OffsetGeometry& clang = kGeometryPreV69X86Clang;  // the same, rounded up to 16 (clang)
  EXPECT_EQ(clang.Apply(1), 16u);
  EXPECT_EQ(clang.Apply(0xFF), 256u);
  EXPECT_EQ(clang.count(), 17u);
  EXPECT_DOUBLE_EQ(clang.Probability(0), 4.0 / 1024);
  EXPECT_DOUBLE_EQ(clang.Probability(16), 60.0 / 1024);
  const OffsetGeometry& arm64 = kGeometryPreV69Arm64;  // random & 0x1FF, rounded up to 16
  EXPECT_EQ(arm64.Apply(0x1F0), 496u);
  EXPECT_EQ(arm64.Apply(0x1F1), 512u);
  EXPECT_EQ(arm64.Apply(0x200), 0u);
  EXPECT_EQ(arm64.count(), 33u);
  EXPECT_DOUBLE_EQ(arm64.Probability(0), 2.0 / 1024);
  EXPECT_DOUBLE_EQ(arm64.Probability(1), 32.0 / 1024);
  EXPECT_DOUBLE_EQ(arm64.Probability(32), 30.0 / 1024);
}

// One row per distinct distribution of offsets: two eras or arches that give the same offsets
// share a row (named in it), since no sample could tell them apart; and every row's
// probabilities add up to 1.
TEST(OffsetGeometryTest, TableHasOneRowPerDistinctDistribution) {
  std::set<std::vector<uint32_t>> seen;
  for (const OffsetGeometry& g : kGeometries) {
    std::vector<uint32_t> offsets;
    for (uint32_t x = 0; x < 1024; ++x) offsets.push_back(g.Apply(x));
    EXPECT_TRUE(seen.insert(offsets).second) << g.name;
    EXPECT_LE(g.count(), kMaxOffsetCount) << g.name;
    double total = 0;
    for (uint32_t b = 0; b < g.count(); ++b) {
      EXPECT_GT(g.Probability(b), 0.0) << g.name << " bin " << b;
      total += g.Probability(b);
    }
    EXPECT_DOUBLE_EQ(total, 1.0) << g.name;
    EXPECT_NE(std::string(g.name).find(std::to_string(g.count()) + " offsets"), std::string::npos)
        << g.name;
  }
  EXPECT_EQ(seen.size(), std::size(kGeometries));
  // The row both arm64 and clang-built x86-64 give in the ror32 era names both.
  const std::string shared = kGeometryPreV611Align16.name;
  EXPECT_NE(shared.find("arm64"), std::string::npos);
  EXPECT_NE(shared.find("x86-64 built with clang"), std::string::npos);
}

TEST(KstackApply, TableSyscallRunsEveryPolicy) {
  for (const PolicyDef& def : Policies()) {
    SCOPED_TRACE(def.name);
    auto policy = def.boot();
    ASSERT_TRUE(policy.ok());
    std::set<uintptr_t> frames;
    for (int i = 0; i < 5000; ++i) frames.insert(def.syscall(policy->get()));
    if (std::string(def.name) == "off") {
      EXPECT_EQ(frames.size(), 1u);
    } else {
      EXPECT_EQ(frames.size(), 64u);
      EXPECT_EQ(*frames.rbegin() - *frames.begin(), 1008u);
    }
  }
}

TEST(KstackPerCpu, PossibleCpusCoversThisCpu) {
  EXPECT_GE(PossibleCpus(), 1);
  EXPECT_GT(PossibleCpus(), sched_getcpu());
}

}  // namespace
}  // namespace kstacklab::kstack
