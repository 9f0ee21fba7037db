// The kstack offset designs ("policies"): every option discussed for randomize_kstack_offset,
// each producing the offset for a syscall entry, bit-exact with the kernel code it names
// (include/linux/randomize_kstack.h across versions: the per-CPU XOR of commit 39218ff4c625, its
// ror32 of commit 9c573cd31343, the per-task state of commit 37beb4256016 and the per-CPU
// LFSR113 of commit a96ef5848cb0 with its v7.3 irqsoff entry; each design below names its own,
// and its kKernels says which mainline and stable kernels run it).
//
// A policy is a small class with
//   uint32_t Entry();   the offset for this syscall entry (u32 before KSTACK_OFFSET_MAX),
//   void Exit();        optional: the "choose" step after the syscall (legacy designs),
//   uint32_t NextOffset();  one whole syscall's masked offset without the alloca (Entry, mask,
//                           Exit) — for tests and the analysis module,
//   static constexpr kName / kSummary, and a way to be created as the kernel does at boot, which
//   Boot<P>() below picks: a static P::Boot() when the policy needs its own keys or seeds, else a
//   constructor taking the booted kernel CRNG (std::shared_ptr<rng::Crng>), else P();
//   static constexpr AttackFacts kFacts: what an attacker may assume of it (linear over GF(2),
//   per-task state, counter-fed, ...), and
//   static Expected<SimPolicy> Simulate(const SimWorld&): the design on N simulated CPUs with an
//   injected cpu source, its keys and seeds from the simulation's dice. The attacks
//   (analysis/attack_*.cc) iterate the table through these two and know no policy by name.
// Adding a policy = the class + one row in kPolicies (CONTRIBUTING.md shows an example).
// KstackSyscall(policy) (apply.h) is the applied, non-inlined "syscall".
//
// Per-CPU designs take a cpu source (percpu.h): the step reads the cpu once, like raw_cpu_ptr(),
// then reads/read-modify-writes that slot without a lock, so a migration after the read updates
// the slot of the CPU the thread left. Per-task state is thread_local (one per thread = task).
// The class templates take their random input and cpu source as parameters so tests and attack
// models can inject them; the named structs are the production configurations in kPolicies.
//
// Thread safety: a policy object may be used by several threads (per-CPU slots or per-thread
// state), with the caveats of percpu.h; Boot() and construction are not hot paths.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kstacklab/common/dice.h"
#include "kstacklab/common/error.h"
#include "kstacklab/kstack/apply.h"
#include "kstacklab/kstack/percpu.h"
#include "kstacklab/rng/counter.h"
#include "kstacklab/rng/crng.h"
#include "kstacklab/rng/getrandom.h"
#include "kstacklab/rng/prandom.h"
#include "kstacklab/rng/siphash.h"

namespace kstacklab::kstack {

// ror32(x, n) for 0 < n < 32.
constexpr uint32_t Ror32(uint32_t x, unsigned n) { return std::rotr(x, static_cast<int>(n)); }

// choose_random_kstack_offset() since v6.9 (commit 9c573cd31343): ror32(old, 5) ^ rand.
constexpr uint32_t ChooseLegacyOffset(uint32_t old, uint32_t rand) { return Ror32(old, 5) ^ rand; }

// --- boot-time helpers (not hot paths) -------------------------------------------------------

// getrandom(2) into buf (rng/getrandom.h), kept under this name for the policies' callers.
using rng::FillFromGetrandom;

// The kernel CRNG as after boot: one rng::Crng with `num_cpus` per-CPU slots and a base key
// from getrandom(2).
Expected<std::shared_ptr<rng::Crng>> BootCrng(int num_cpus);

// A SipHash key from 16 getrandom(2) bytes (the boot-time key of the siphash design).
Expected<rng::SiphashKey> BootSiphashKey();

// --- random inputs of the legacy choose step: uint32_t operator()(int cpu) -------------------

// x86: rdtsc() in arch_exit_to_user_mode_prepare(), truncated to the u32 argument (v6.10+
// unmasked). The cpu is irrelevant (the TSC is read on whatever CPU runs the thread).
struct TscRand {
  uint32_t operator()(int) const { return static_cast<uint32_t>(timing::ReadCounter()); }
};
// arm64: get_random_u16() (v6.10+ unmasked) with its per-CPU local_lock.
struct CrngU16Rand {
  rng::Crng* crng;
  uint32_t operator()(int cpu) const { return crng->GetRandomU16(cpu); }
};
// The thread's "+ no local_lock": the same batch without the per-CPU lock.
struct CrngU16RawRand {
  rng::Crng* crng;
  uint32_t operator()(int cpu) const { return crng->RawGetRandomU16(cpu); }
};
// The thread's "+ get_random_u8": a lockless u8 batch (96 values per refill instead of 48).
struct CrngU8RawRand {
  rng::Crng* crng;
  uint32_t operator()(int cpu) const { return crng->RawGetRandomU8(cpu); }
};

// A simulation's counter (attack models): the value a counter read (rdtsc()) returns is
// whatever the simulation stored in *value, truncated to the u32 argument.
struct SimCounterRand {
  const uint64_t* value;
  uint32_t operator()(int /*cpu*/) const { return static_cast<uint32_t>(*value); }
};

// NextOffset() for every policy: Entry, KSTACK_OFFSET_MAX, then Exit when there is one.
template <class Derived>
struct OffsetSteps {
  uint32_t NextOffset() {
    Derived& d = static_cast<Derived&>(*this);
    const uint32_t offset = KstackOffsetMax(d.Entry());
    if constexpr (requires { d.Exit(); }) d.Exit();
    return offset;
  }
};

// --- which kernels run a design (docs/models.md "Which kernels run which design") -------------

// Every policy says which kernels run it and how kstacklab checked the model against them;
// `list`, the entropy report and docs/models.md print these words.
struct KernelVersions {
  const char* mainline = "";  // mainline releases (and the commits), or "never" and why
  const char* stable = "";    // stable series that carry it, or "none"
  const char* verified = "";  // how the model was checked against a kernel, or that it was not
};

// "mainline: M; stable: S" — the one line `list` and the entropy report print.
std::string KernelsLine(const KernelVersions& k);

// --- what the attacks need of a policy (analysis/attack_*.cc) --------------------------------

// The random input of a design, as an attacker may assume it.
enum class Generator {
  kNone,     // no random input (off)
  kCounter,  // a cycle-counter read (rdtsc()): counter-fed, the timer attack's subject
  kCrng,     // the kernel crng (ChaCha20 batches)
  kSiphash,  // SipHash-2-4 under a secret key (a PRF)
  kPrandom,  // LFSR113 (prandom_u32_state): linear over GF(2), the prng-recover attack's subject
};

// What an attacker may assume of a design; the attacks choose their method and rows by it.
struct AttackFacts {
  Generator generator = Generator::kNone;
  // kPrandom: offsets taken from each generator output: 1 = bits 4..9 of every output
  // (KSTACK_OFFSET_MAX), 5 = five 6-bit chunks, low bits first.
  uint32_t offsets_per_output = 1;
  bool per_task = false;  // the state lives in the task (thread_local), not in per-CPU slots
  // The row name of the design this one varies only in lock or batch width, or nullptr. The
  // attacks on one CPU's offset stream (prng-recover) attack that row instead.
  const char* variant_of = nullptr;
};
constexpr bool LinearOverGf2(const AttackFacts& f) { return f.generator == Generator::kPrandom; }
constexpr bool CounterFed(const AttackFacts& f) { return f.generator == Generator::kCounter; }

// The world a simulated design runs in (attack models): `cpus` CPUs; every step reads its cpu
// from *script (InjectedCpu); every key and seed comes from *dice, so a run is a function of the
// seed; a counter-fed design's counter read returns *counter (SimCounterRand). Not owned.
struct SimWorld {
  int cpus = 1;
  CpuScript* script = nullptr;
  Dice* dice = nullptr;
  const uint64_t* counter = nullptr;
};

// A design booted in a SimWorld, as the attacks drive it: the attacker is one task; other tasks
// share the CPUs (per-task designs give them their own task state).
struct SimPolicy {
  std::function<uint32_t()> entry;      // the attacker's entry step: the masked offset
  std::function<void()> exit;           // its exit ("choose") step; empty if the design has none
  std::function<void()> other_syscall;  // one whole syscall of another task on script->cpu
  // Counter-fed designs: the offset the attacker's next entry would get if its exit step ran now
  // with the counter at *counter, from a copy of the state (the design is not changed).
  std::function<uint32_t()> predict_next;
};

// The SimPolicy of a per-CPU design object (the attacker and other tasks share its slots).
template <class P>
SimPolicy SimulateSteps(std::shared_ptr<P> p) {
  SimPolicy s;
  s.entry = [p] { return KstackOffsetMax(p->Entry()); };
  if constexpr (requires { p->Exit(); }) s.exit = [p] { p->Exit(); };
  s.other_syscall = [p] { p->NextOffset(); };
  return s;
}

// The same for a counter-fed design whose state can be copied (its random input reads only the
// simulation's counter): predict_next runs the exit and entry steps on a copy.
template <class P>
SimPolicy SimulateCounterFedSteps(std::shared_ptr<P> p) {
  static_assert(std::is_copy_constructible_v<P> && requires { p->Exit(); });
  SimPolicy s = SimulateSteps(p);
  s.predict_next = [p] {
    P copy = *p;
    copy.Exit();
    return KstackOffsetMax(copy.Entry());
  };
  return s;
}

// --- off -------------------------------------------------------------------------------------

struct OffPolicy : OffsetSteps<OffPolicy> {
  static constexpr const char* kName = "off";
  static constexpr const char* kSummary =
      "no offset (randomize_kstack_offset=off): alloca(0), the baseline";
  static constexpr KernelVersions kKernels{
      .mainline =
          "every kernel booted with randomize_kstack_offset=off or built without "
          "CONFIG_RANDOMIZE_KSTACK_OFFSET",
      .stable = "all",
      .verified = "live probe: 1 distinct offset with randomize_kstack_offset=off"};
  static constexpr AttackFacts kFacts{};
  static Expected<SimPolicy> Simulate(const SimWorld& world);
  uint32_t Entry() { return 0; }
};

// --- legacy per-CPU design (v5.13 .. v7.0; ror32 choose step since v6.9) ---------------------

// Per-CPU u32 kstack_offset (DEFINE_PER_CPU in init/main.c). Entry: raw_cpu_read(kstack_offset).
// Exit (choose_random_kstack_offset(rand)): read the cpu once, read that slot, compute rand,
// write ror32(old, 5) ^ rand back to the same slot. The kernel macro reads the slot before it
// evaluates `rand`, so a migration during get_random_u16() (arm64, preemptible) also lands here
// in the slot of the CPU the thread left. Differences: on arm64 raw_cpu_read and raw_cpu_write
// each resolve the cpu (so the write may go to a third slot), and get_random_u16() resolves its
// own cpu under its lock; this model uses the one cpu read for all three.
template <class Rand, class Cpu = SchedCpu>
class PerCpuLegacyPolicy : public OffsetSteps<PerCpuLegacyPolicy<Rand, Cpu>> {
 public:
  PerCpuLegacyPolicy(int num_cpus, Rand rand, Cpu cpu = Cpu{})
      : offsets_(num_cpus), rand_(rand), cpu_(cpu) {}

  uint32_t Entry() { return offsets_[cpu_.Cpu()]; }
  void Exit() {
    const int cpu = cpu_.Cpu();
    uint32_t& slot = offsets_[cpu];
    const uint32_t old = slot;
    slot = ChooseLegacyOffset(old, rand_(cpu));
  }

  // Inspection (not synchronised with a concurrent step on that cpu).
  uint32_t offset(int cpu) const { return offsets_[cpu]; }
  int num_cpus() const { return offsets_.num_cpus(); }

 private:
  PerCpu<uint32_t> offsets_;
  Rand rand_;
  [[no_unique_address]] Cpu cpu_;
};

struct LegacyX86Policy : PerCpuLegacyPolicy<TscRand> {
  static constexpr const char* kName = "legacy-x86";
  static constexpr const char* kSummary =
      "x86: per-CPU kstack_offset = ror32(old, 5) ^ rdtsc() after the syscall, used at the next "
      "entry, mask 0x3F0";
  static constexpr KernelVersions kKernels{
      .mainline = "v6.11-v7.0 x86-64 (872bb37f6829 mask); v5.13-v6.10 with other masks and steps",
      .stable = "before the per-task backport (6.12 < .86); 5.15/6.1/6.6 keep & 0x3FF",
      .verified =
          "ror32 step: derived vector; no kernel without the per-task backport has run "
          "under the live probe here"};
  static constexpr AttackFacts kFacts{.generator = Generator::kCounter};
  // The simulation's counter stands for rdtsc() (SimWorld::counter).
  static Expected<SimPolicy> Simulate(const SimWorld& world);
  using PerCpuLegacyPolicy::PerCpuLegacyPolicy;
  LegacyX86Policy() : PerCpuLegacyPolicy(PossibleCpus(), TscRand{}) {}
};

// The arm64 policies own their CRNG (one rng::Crng per policy object, keyed at Boot()).
template <class Rand>
struct CrngLegacyPolicy : PerCpuLegacyPolicy<Rand> {
  explicit CrngLegacyPolicy(std::shared_ptr<rng::Crng> crng)
      : PerCpuLegacyPolicy<Rand>(crng->num_cpus(), Rand{crng.get()}), crng_(std::move(crng)) {}
  rng::Crng& crng() { return *crng_; }

 private:
  std::shared_ptr<rng::Crng> crng_;
};

struct LegacyArm64Policy : CrngLegacyPolicy<CrngU16Rand> {
  static constexpr const char* kName = "legacy-arm64";
  static constexpr const char* kSummary =
      "arm64: per-CPU kstack_offset = ror32(old, 5) ^ get_random_u16() (batched "
      "crng, local_lock; refill of 2 ChaCha20 blocks every 48 calls)";
  static constexpr KernelVersions kKernels{
      .mainline = "v6.11-v7.0 arm64; v5.13-v6.10 with other masks and steps",
      .stable = "before the per-task backport (6.12 < .86); 5.15/6.1/6.6 keep & 0x3FF",
      .verified =
          "crng: RFC 8439 and kernel layout vectors, libsodium cross-check; ror32 step: "
          "derived vector; not run live on arm64 here"};
  static constexpr AttackFacts kFacts{.generator = Generator::kCrng};
  static Expected<SimPolicy> Simulate(const SimWorld& world);
  using CrngLegacyPolicy::CrngLegacyPolicy;
};

struct LegacyArm64NoLockPolicy : CrngLegacyPolicy<CrngU16RawRand> {
  static constexpr const char* kName = "legacy-arm64-nolock";
  static constexpr const char* kSummary =
      "legacy-arm64 with a lockless get_random_u16() (the thread's \"+ no local_lock\")";
  static constexpr KernelVersions kKernels{
      .mainline = "never: a variant measured in the 2026 thread",
      .stable = "none",
      .verified = "as legacy-arm64 (the same crng batch without its lock)"};
  static constexpr AttackFacts kFacts{.generator = Generator::kCrng, .variant_of = "legacy-arm64"};
  static Expected<SimPolicy> Simulate(const SimWorld& world);
  using CrngLegacyPolicy::CrngLegacyPolicy;
};

struct LegacyArm64U8Policy : CrngLegacyPolicy<CrngU8RawRand> {
  static constexpr const char* kName = "legacy-arm64-u8";
  static constexpr const char* kSummary =
      "legacy-arm64 with a lockless get_random_u8() (the thread's \"+ get_random_u8\"; refill "
      "every 96 calls)";
  static constexpr KernelVersions kKernels{
      .mainline = "never: a variant measured in the 2026 thread",
      .stable = "none",
      .verified = "crng u8 batch: kernel layout vectors; otherwise as legacy-arm64"};
  static constexpr AttackFacts kFacts{.generator = Generator::kCrng, .variant_of = "legacy-arm64"};
  static Expected<SimPolicy> Simulate(const SimWorld& world);
  using CrngLegacyPolicy::CrngLegacyPolicy;
};

// --- siphash of a per-CPU counter -------------------------------------------------------------

// Per CPU: a u64 counter (from 0) and a u64 tweak (random at boot, so CPUs never share an
// input); one boot-time SipHash key for all CPUs. A hash h = siphash_1u64(counter ^ tweak, key)
// is consumed 6 bits at a time, low bits first: entry i (0..9) of a hash yields
// ((h >> 6i) & 0x3F) << 4; the top 4 bits are discarded; the counter then advances.
struct SiphashSlot {
  uint64_t counter = 0;
  uint64_t tweak = 0;
  uint64_t hash = 0;
  uint32_t left = 0;    // 6-bit chunks left in `hash`
  uint64_t hashes = 0;  // hashes computed (inspection)
};

template <class Cpu = SchedCpu>
class SiphashOffsetPolicy : public OffsetSteps<SiphashOffsetPolicy<Cpu>> {
 public:
  static constexpr uint32_t kOffsetsPerHash = 10;

  // tweaks.size() == number of cpus.
  SiphashOffsetPolicy(const rng::SiphashKey& key, std::span<const uint64_t> tweaks, Cpu cpu = Cpu{})
      : key_(key), slots_(static_cast<int>(tweaks.size())), cpu_(cpu) {
    for (int c = 0; c < slots_.num_cpus(); ++c) slots_[c].tweak = tweaks[c];
  }

  uint32_t Entry() {
    SiphashSlot& s = slots_[cpu_.Cpu()];
    if (s.left == 0) {
      s.hash = rng::Siphash1u64(s.counter ^ s.tweak, key_);
      ++s.counter;
      ++s.hashes;
      s.left = kOffsetsPerHash;
    }
    const uint32_t offset = static_cast<uint32_t>(s.hash & 0x3F) << 4;
    s.hash >>= 6;
    --s.left;
    return offset;
  }

  const SiphashSlot& slot(int cpu) const { return slots_[cpu]; }

 private:
  rng::SiphashKey key_;
  PerCpu<SiphashSlot> slots_;
  [[no_unique_address]] Cpu cpu_;
};

struct SiphashPolicy : SiphashOffsetPolicy<> {
  static constexpr const char* kName = "siphash";
  static constexpr const char* kSummary =
      "kstacklab's own design, no kernel code: per-CPU siphash_1u64(counter ^ tweak) under a "
      "boot-time key, 6 bits per syscall (10 offsets per hash)";
  static constexpr KernelVersions kKernels{
      .mainline = "never: kstacklab's own design",
      .stable = "none",
      .verified = "SipHash-2-4: reference vectors, libsodium cross-check"};
  static constexpr AttackFacts kFacts{.generator = Generator::kSiphash};
  static Expected<SimPolicy> Simulate(const SimWorld& world);
  using SiphashOffsetPolicy::SiphashOffsetPolicy;
  // One boot-time key and a random tweak per possible CPU, from getrandom(2).
  static Expected<std::unique_ptr<SiphashPolicy>> Boot();
};

// --- per task (patch 1 of the 2026 series, 37beb4256016; stable only) ------------------------

// Calls `task_init` in the child of every fork(): random_kstack_task_init() runs in
// copy_process() (kernel/fork.c), so a child starts from a fresh task state, never its parent's.
// Registered once per function (pthread_atfork); the child's forking thread is its only thread.
void ResetTaskStateAtFork(void (*task_init)());

// task_struct.kstack_offset: thread_local, 0 in every new thread and in the child of a fork
// (random_kstack_task_init()). Entry reads it; Exit: offset = ror32(offset, 5) ^ rand(cpu), the
// cpu read once for the rand source only (the state itself no longer depends on the cpu). One
// state per thread per instantiation of this template (as a task has one field), shared by all
// its objects.
template <class Rand, class Cpu = SchedCpu>
class PerTaskLegacyPolicy : public OffsetSteps<PerTaskLegacyPolicy<Rand, Cpu>> {
 public:
  explicit PerTaskLegacyPolicy(Rand rand, Cpu cpu = Cpu{}) : rand_(rand), cpu_(cpu) {
    static const bool registered = (ResetTaskStateAtFork(&TaskInit), true);
    (void)registered;
  }

  uint32_t Entry() { return task_offset_; }
  void Exit() { task_offset_ = ChooseLegacyOffset(task_offset_, rand_(cpu_.Cpu())); }

  // The calling thread's state; TaskInit() = random_kstack_task_init() (offset 0).
  static uint32_t task_offset() { return task_offset_; }
  static void TaskInit() { task_offset_ = 0; }

 private:
  static inline thread_local uint32_t task_offset_ = 0;
  Rand rand_;
  [[no_unique_address]] Cpu cpu_;
};

// The per-task backport's kernels (37beb4256016 with Cc: stable): never a mainline release
// (patch 2 came in the same merge and replaced it).
inline constexpr const char* kPerTaskMainline =
    "never (stable only: 37beb4256016 and a96ef5848cb0 came in one merge, v7.1)";
inline constexpr const char* kPerTaskStable =
    "6.12.86+, the 5.15 backport (keeps & 0x3FF), 6.1.y (Debian 12's 6.1.192), 6.18.y (6.18.44)";

struct PerTaskPolicy : PerTaskLegacyPolicy<CrngU16Rand> {
  static constexpr const char* kName = "per-task";
  static constexpr const char* kSummary =
      "patch 1 (37beb4256016) as on arm64: legacy state per task (thread_local, 0 at fork), "
      "ror32(old, 5) ^ get_random_u16() (locked crng) after the syscall";
  static constexpr KernelVersions kKernels{
      .mainline = kPerTaskMainline,
      .stable = kPerTaskStable,
      .verified =
          "crng: vectors and libsodium; ror32 step: derived vector; not run live on "
          "arm64 here"};
  static constexpr AttackFacts kFacts{.generator = Generator::kCrng, .per_task = true};
  static Expected<SimPolicy> Simulate(const SimWorld& world);
  explicit PerTaskPolicy(std::shared_ptr<rng::Crng> crng)
      : PerTaskLegacyPolicy(CrngU16Rand{crng.get()}), crng_(std::move(crng)) {}

 private:
  std::shared_ptr<rng::Crng> crng_;
};

struct PerTaskX86Policy : PerTaskLegacyPolicy<TscRand> {
  static constexpr const char* kName = "per-task-x86";
  static constexpr const char* kSummary =
      "patch 1 (37beb4256016) as on x86: legacy state per task (thread_local, 0 at fork), "
      "ror32(old, 5) ^ rdtsc() at the return to user mode";
  static constexpr KernelVersions kKernels{
      .mainline = kPerTaskMainline,
      .stable = kPerTaskStable,
      .verified =
          "live probe on this project's 6.18.44 host: task_struct.kstack_offset read at "
          "every record and checked against its offset"};
  static constexpr AttackFacts kFacts{.generator = Generator::kCounter, .per_task = true};
  // The simulation's counter stands for rdtsc() (SimWorld::counter).
  static Expected<SimPolicy> Simulate(const SimWorld& world);
  PerTaskX86Policy() : PerTaskLegacyPolicy(TscRand{}) {}
};

// --- per-task siphash (a draft of randomize_kstack.h) ------------------------------------------
// The draft is a public copy of the header marked "TODO: update comment"; it is in no posted
// patch we found, so it names no commit.

// The draft's get_update_kstack_offset(): u32 offset = siphash_1u64(current->random_kstack_seq,
// &current->random_kstack_key); random_kstack_seq++ — one SipHash-2-4 per syscall, truncated to
// u32, then KSTACK_OFFSET_MAX. random_kstack_task_init() fills the task's key with
// get_random_bytes() (here: Crng::GetRandomBytes on the calling cpu, the same function) and
// zeroes the sequence. The kernel does that at fork; the model at the thread's first Entry()
// (a fork's child forgets its parent's key, ResetTaskStateAtFork)
// (one predictable branch per call the kernel does not have). The state is thread_local, one per
// thread per instantiation of this template (as a task has one key), shared by all its objects.
struct SiphashTaskState {
  rng::SiphashKey key{};
  uint64_t seq = 0;
  bool initialised = false;
};

template <class Cpu = SchedCpu>
class SiphashTaskOffsetPolicy : public OffsetSteps<SiphashTaskOffsetPolicy<Cpu>> {
 public:
  explicit SiphashTaskOffsetPolicy(std::shared_ptr<rng::Crng> crng, Cpu cpu = Cpu{})
      : crng_(std::move(crng)), cpu_(cpu) {
    static const bool registered = (ResetTaskStateAtFork(&ForgetTask), true);
    (void)registered;
  }

  uint32_t Entry() {
    SiphashTaskState& t = task_;
    if (!t.initialised) [[unlikely]] {
      TaskInit();
    }
    const auto offset = static_cast<uint32_t>(rng::Siphash1u64(t.seq, t.key));
    ++t.seq;
    return offset;
  }

  // random_kstack_task_init() for the calling thread: a fresh key from this policy's crng.
  [[gnu::noinline]] void TaskInit() {
    uint8_t bytes[16];
    crng_->GetRandomBytes(cpu_.Cpu(), bytes, sizeof bytes);
    TaskInit(rng::SiphashKeyFromBytes(bytes));
    rng::SecureZero(bytes, sizeof bytes);
  }
  // The same with a given key (tests, attack models).
  static void TaskInit(const rng::SiphashKey& key) { task_ = {key, 0, true}; }
  // A task with no key yet (a new thread, the child of a fork): its first Entry() keys it.
  static void ForgetTask() { task_ = {}; }
  static const SiphashTaskState& task() { return task_; }

 private:
  static inline thread_local SiphashTaskState task_{};
  std::shared_ptr<rng::Crng> crng_;
  [[no_unique_address]] Cpu cpu_;
};

struct SiphashTaskPolicy : SiphashTaskOffsetPolicy<> {
  static constexpr const char* kName = "siphash-task";
  static constexpr const char* kSummary =
      "per-task siphash_1u64(current->random_kstack_seq++) under a per-task key (the public "
      "randomize_kstack.h draft, docs/models.md): one SipHash-2-4 per syscall";
  static constexpr KernelVersions kKernels{
      .mainline = "never: a draft of randomize_kstack.h, in no posted patch",
      .stable = "none",
      .verified = "SipHash-2-4: reference vectors, libsodium cross-check"};
  static constexpr AttackFacts kFacts{.generator = Generator::kSiphash, .per_task = true};
  static Expected<SimPolicy> Simulate(const SimWorld& world);
  using SiphashTaskOffsetPolicy::SiphashTaskOffsetPolicy;
};

// --- per-CPU prandom (patch 2 of the 2026 series, a96ef5848cb0: the merged design) -----------

// How the entry wraps the step (get_kstack_offset() in include/linux/randomize_kstack.h):
enum class PrandomEntry {
  // v7.1 (a96ef5848cb0), and arm64 after v7.3: state = &get_cpu_var(kstack_rnd_state) (preempt
  // count raised), an out-of-line prandom_u32_state(state), put_cpu_var() (count lowered, the
  // reschedule check of preempt_enable()).
  kGetCpuVar,
  // v7.3 x86, loongarch, powerpc, riscv, s390 (0b9a3057530c, 9d311796e2ce):
  // add_random_kstack_offset_irqsoff() draws prandom_u32_state(raw_cpu_ptr(&kstack_rnd_state))
  // with IRQs already off, before the entry work: the out-of-line call alone.
  kIrqsOff,
};

// kstack_rnd_state: a per-CPU LFSR113 seeded by prandom_seed_full_state() (late_initcall),
// never reseeded; one step per syscall entry, no choose step. Both entry forms give the same
// offsets; they differ in what the entry executes around the step. The kernel runs the step
// with preemption (v7.1) or IRQs (v7.3) off; here a migration after the cpu read steps the state
// of the CPU the thread left (see percpu.h), and IRQs cannot be masked.
template <class Cpu = SchedCpu, PrandomEntry kEntry = PrandomEntry::kGetCpuVar>
class PercpuPrandomPolicy : public OffsetSteps<PercpuPrandomPolicy<Cpu, kEntry>> {
 public:
  // states.size() == number of cpus; each already seeded.
  explicit PercpuPrandomPolicy(std::span<const rng::PrandomState> states, Cpu cpu = Cpu{})
      : states_(static_cast<int>(states.size())), cpu_(cpu) {
    for (int c = 0; c < states_.num_cpus(); ++c) states_[c] = states[c];
  }

  uint32_t Entry() {
    if constexpr (kEntry == PrandomEntry::kGetCpuVar) {
      PreemptDisable();
      const uint32_t rnd = rng::PrandomU32StateCall(states_[cpu_.Cpu()]);
      PreemptEnable();
      return rnd;
    } else {
      return rng::PrandomU32StateCall(states_[cpu_.Cpu()]);
    }
  }

  const rng::PrandomState& state(int cpu) const { return states_[cpu]; }

 private:
  PerCpu<rng::PrandomState> states_;
  [[no_unique_address]] Cpu cpu_;
};

// prandom_seed_full_state() of one state per possible CPU (the late_initcall of init/main.c).
Expected<std::vector<rng::PrandomState>> BootPrandomStates();

struct PercpuPrngPolicy : PercpuPrandomPolicy<> {
  static constexpr const char* kName = "percpu-prng";
  static constexpr const char* kSummary =
      "merged design, v7.1 form (a96ef5848cb0): per-CPU LFSR113 seeded by "
      "prandom_seed_full_state, one out-of-line prandom_u32_state per syscall inside "
      "get_cpu_var/put_cpu_var (preempt count and reschedule check), no choose step";
  static constexpr KernelVersions kKernels{
      .mainline = "v7.1+ (a96ef5848cb0): every arch in v7.1-v7.2, arm64 after",
      .stable = "none",
      .verified =
          "offsets: LFSR113 kernel self-test vectors, prandom_seed_full_state seeding, "
          "& 0x3F0; no v7.1 kernel has run under the live probe here"};
  static constexpr AttackFacts kFacts{.generator = Generator::kPrandom, .offsets_per_output = 1};
  static Expected<SimPolicy> Simulate(const SimWorld& world);
  using PercpuPrandomPolicy::PercpuPrandomPolicy;
  static Expected<std::unique_ptr<PercpuPrngPolicy>> Boot();
};

struct PercpuPrngIrqsoffPolicy : PercpuPrandomPolicy<SchedCpu, PrandomEntry::kIrqsOff> {
  static constexpr const char* kName = "percpu-prng-irqsoff";
  static constexpr const char* kSummary =
      "merged design, v7.3 form (0b9a3057530c): the same per-CPU LFSR113 and offsets, "
      "prandom_u32_state(raw_cpu_ptr()) with IRQs off before the entry work: no preempt count";
  static constexpr KernelVersions kKernels{
      .mainline =
          "v7.3+ (0b9a3057530c, 9d311796e2ce) on x86, loongarch, powerpc, riscv, s390; "
          "not arm64",
      .stable = "none",
      .verified =
          "offsets: as percpu-prng (the same stream); no v7.3 kernel has run under the "
          "live probe here"};
  // The offset stream is percpu-prng's: the attacks on one CPU's stream attack that row.
  static constexpr AttackFacts kFacts{
      .generator = Generator::kPrandom, .offsets_per_output = 1, .variant_of = "percpu-prng"};
  static Expected<SimPolicy> Simulate(const SimWorld& world);
  using PercpuPrandomPolicy::PercpuPrandomPolicy;
  static Expected<std::unique_ptr<PercpuPrngIrqsoffPolicy>> Boot();
};

// --- buffered prandom (kstacklab's own design, no kernel code) --------------------------------

// Per CPU: an LFSR113 state whose 32-bit outputs are buffered and spent 6 bits per syscall,
// low bits first (offset = ((out >> 6i) & 0x3F) << 4, i = 0..4; the top 2 bits are discarded):
// 5 syscalls per output. Before the first output and after every 65536 outputs the state is
// reseeded from the crng on that cpu: 16 bytes of get_random_bytes() as four little-endian u32
// -> minima + 10-step warm-up (as prandom_seed_full_state does per CPU).
struct BufferedPrandomSlot {
  rng::PrandomState state;
  uint32_t buffer = 0;
  uint32_t left = 0;         // 6-bit chunks left in `buffer`
  uint32_t outputs = 65536;  // outputs since the last seed (full: seed before the first use)
  uint64_t reseeds = 0;      // seeds taken, the first included (inspection)
};

template <class Cpu = SchedCpu>
class BufferedPrandomPolicy : public OffsetSteps<BufferedPrandomPolicy<Cpu>> {
 public:
  static constexpr uint32_t kOffsetsPerOutput = 5;
  static constexpr uint32_t kReseedOutputs = 65536;

  explicit BufferedPrandomPolicy(std::shared_ptr<rng::Crng> crng, Cpu cpu = Cpu{})
      : crng_(std::move(crng)), slots_(crng_->num_cpus()), cpu_(cpu) {}

  uint32_t Entry() {
    const int cpu = cpu_.Cpu();
    BufferedPrandomSlot& s = slots_[cpu];
    if (s.left == 0) [[unlikely]] {
      if (s.outputs >= kReseedOutputs) [[unlikely]] {
        Reseed(cpu, s);
      }
      s.buffer = rng::PrandomU32State(s.state);
      ++s.outputs;
      s.left = kOffsetsPerOutput;
    }
    const uint32_t offset = (s.buffer & 0x3F) << 4;
    s.buffer >>= 6;
    --s.left;
    return offset;
  }

  const BufferedPrandomSlot& slot(int cpu) const { return slots_[cpu]; }
  rng::Crng& crng() { return *crng_; }

 private:
  [[gnu::noinline]] void Reseed(int cpu, BufferedPrandomSlot& s) {
    uint8_t bytes[16];
    crng_->GetRandomBytes(cpu, bytes, sizeof bytes);
    const uint32_t words[4] = {rng::LoadLe32(bytes), rng::LoadLe32(bytes + 4),
                               rng::LoadLe32(bytes + 8), rng::LoadLe32(bytes + 12)};
    rng::PrandomSeedFromWords(s.state, words);
    s.outputs = 0;
    ++s.reseeds;
  }

  std::shared_ptr<rng::Crng> crng_;
  PerCpu<BufferedPrandomSlot> slots_;
  [[no_unique_address]] Cpu cpu_;
};

struct BufferedPrngPolicy : BufferedPrandomPolicy<> {
  static constexpr const char* kName = "buffered-prng";
  static constexpr const char* kSummary =
      "kstacklab's own design, no kernel code: per-CPU LFSR113 output buffered, 6 bits per "
      "syscall (5 per output), reseeded from the crng every 65536 outputs";
  static constexpr KernelVersions kKernels{.mainline = "never: kstacklab's own design",
                                           .stable = "none",
                                           .verified = "LFSR113: kernel self-test vectors"};
  // The attacker's model ignores the reseed (its observations follow one seeding).
  static constexpr AttackFacts kFacts{.generator = Generator::kPrandom, .offsets_per_output = 5};
  static Expected<SimPolicy> Simulate(const SimWorld& world);
  using BufferedPrandomPolicy::BufferedPrandomPolicy;
};

// --- booting ----------------------------------------------------------------------------------

// Creates policy P as at boot (see the top of this file); RuntimeError if getrandom(2) fails.
template <class P>
Expected<std::unique_ptr<P>> Boot() {
  if constexpr (requires { P::Boot(); }) {
    return P::Boot();
  } else if constexpr (std::is_constructible_v<P, std::shared_ptr<rng::Crng>>) {
    auto crng = BootCrng(PossibleCpus());
    if (!crng.ok()) return crng.error();
    return std::make_unique<P>(std::move(*crng));
  } else {
    static_assert(std::is_default_constructible_v<P>,
                  "a policy needs a static Boot(), a Crng constructor or a default constructor");
    return std::make_unique<P>();
  }
}

// --- the table (STYLE.md rule 3) --------------------------------------------------------------

// One row per policy. The functions take the object Boot<P>() created (type-erased as void*).
struct PolicyDef {
  const char* name;
  const char* summary;
  Expected<std::shared_ptr<void>> (*boot)();  // create the policy as at boot
  uint32_t (*next_offset)(void* policy);      // one syscall's masked offset, no alloca
  uintptr_t (*syscall)(void* policy);         // KstackSyscall: the applied form (noinline)
  uintptr_t (*syscall_getpid)(void* policy);  // the same around a real getpid(2) handler
  KernelVersions kernels;                     // which kernels run it (P::kKernels)
  AttackFacts facts;                          // what an attacker may assume (P::kFacts)
  // The design in a simulated world (P::Simulate): the attacks' form of it.
  Expected<SimPolicy> (*simulate)(const SimWorld& world);
};

namespace policy_internal {
template <class P>
Expected<std::shared_ptr<void>> BootErased() {
  auto p = Boot<P>();
  if (!p.ok()) return p.error();
  return std::shared_ptr<void>(std::move(*p));
}
template <class P>
uint32_t NextOffsetErased(void* p) {
  return static_cast<P*>(p)->NextOffset();
}
template <class P>
uintptr_t SyscallErased(void* p) {
  return KstackSyscall(*static_cast<P*>(p));
}
template <class P>
uintptr_t SyscallGetpidErased(void* p) {
  return KstackSyscall<P, &ModelSyscallHandlerGetpid>(*static_cast<P*>(p));
}
template <class P>
constexpr PolicyDef Row() {
  static_assert(
      requires { KernelVersions{P::kKernels}; },
      "a policy says which kernels run it: static constexpr KernelVersions kKernels");
  static_assert(
      requires { AttackFacts{P::kFacts}; },
      "a policy states what an attacker may assume of it: static constexpr AttackFacts "
      "kFacts");
  static_assert(
      requires(const SimWorld& w) { Expected<SimPolicy>{P::Simulate(w)}; },
      "a policy says how the attacks simulate it: static Expected<SimPolicy> "
      "Simulate(const SimWorld&)");
  return {P::kName,          P::kSummary,
          &BootErased<P>,    &NextOffsetErased<P>,
          &SyscallErased<P>, &SyscallGetpidErased<P>,
          P::kKernels,       P::kFacts,
          &P::Simulate};
}
}  // namespace policy_internal

// constexpr, so a caller indexing it with a constant (e.g. a workload row template) calls the
// policy's functions directly, with no indirect call in a timed region.
// clang-format off
inline constexpr PolicyDef kPolicies[] = {
    policy_internal::Row<OffPolicy>(),
    policy_internal::Row<LegacyX86Policy>(),
    policy_internal::Row<LegacyArm64Policy>(),
    policy_internal::Row<LegacyArm64NoLockPolicy>(),
    policy_internal::Row<LegacyArm64U8Policy>(),
    policy_internal::Row<SiphashPolicy>(),
    policy_internal::Row<SiphashTaskPolicy>(),
    policy_internal::Row<PerTaskPolicy>(),
    policy_internal::Row<PerTaskX86Policy>(),
    policy_internal::Row<PercpuPrngPolicy>(),
    policy_internal::Row<PercpuPrngIrqsoffPolicy>(),
    policy_internal::Row<BufferedPrngPolicy>(),
};
// clang-format on

inline constexpr std::span<const PolicyDef> Policies() { return kPolicies; }

// The row named `name` of `table`, or nullptr.
const PolicyDef* FindPolicy(std::string_view name, std::span<const PolicyDef> table = Policies());

}  // namespace kstacklab::kstack
