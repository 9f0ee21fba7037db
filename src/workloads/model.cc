// The model suite: user-space models of the kstack offset designs and their random sources
// (docs/models.md). Every row measures a configuration of the same thing in one process, so
// the rows share a name and differ by variant; `kstacklab compare` takes variant `off` as the
// baseline of model/kstack.
//
//  * model/kstack:<policy>  one user-space "syscall" (kstack::KstackSyscall): the policy's entry
//    step, alloca(KSTACK_OFFSET_MAX(offset)) kept alive, a handler that writes a volatile local
//    below it, and the exit ("choose") step where the design has one. One row per kPolicies row.
//  * model/rng:<source>     one call of a random source alone; the per-CPU sources pick their
//    slot with sched_getcpu() per call, as the kstack designs do. The counter source reads the
//    cycle counter of whatever CPU the thread runs on: there is no per-CPU state to pick.
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "kstacklab/kstack/policies.h"
#include "kstacklab/rng/counter.h"
#include "kstacklab/rng/crng.h"
#include "kstacklab/rng/getrandom.h"
#include "kstacklab/rng/prandom.h"
#include "kstacklab/rng/siphash.h"
#include "kstacklab/timing.h"
#include "workloads/suites.h"

namespace kstacklab::workloads {
namespace {

using Clock = timing::CycleClock;

// Keeps a value alive without a store to memory.
template <class T>
[[gnu::always_inline]] inline void Keep(T v) {
  asm volatile("" : : "r"(v));
}

// --- model/kstack ----------------------------------------------------------------------------

// kPolicies is constexpr, so kPolicies[I].syscall folds to a direct call of the noinline
// KstackSyscall<Policy>.
template <size_t I>
void CallKstack(void* state) {
  Keep(kstack::kPolicies[I].syscall(state));
}
template <size_t I>
void CallKstackGetpid(void* state) {
  Keep(kstack::kPolicies[I].syscall_getpid(state));
}

// Boots the policy and checks once that it works: 640 offsets all in {0, 16, ..., 1008}, and one
// applied syscall.
template <size_t I>
Expected<std::shared_ptr<void>> SetupKstack() {
  const kstack::PolicyDef& def = kstack::kPolicies[I];
  auto policy = def.boot();
  if (!policy.ok()) return policy.error();
  for (int i = 0; i < 640; ++i) {
    const uint32_t offset = def.next_offset(policy->get());
    if (offset % kstack::kOffsetGranule != 0 || offset > kstack::kOffsetMask) {
      return RuntimeError(fmt::format("policy {} produced offset {}, outside {{0, 16, ..., 1008}}",
                                      def.name, offset));
    }
  }
  if (def.syscall(policy->get()) == 0) {
    return RuntimeError(fmt::format("policy {}: the model syscall did not run", def.name));
  }
  return std::move(*policy);
}

// handler "empty": the offset machinery alone (entry step, alloca, a handler touching its frame,
// exit step). handler "getpid": the same around one real getpid(2) issued from inside the
// offset frame, so the design's cost is seen as a fraction of a kernel round trip.
template <size_t I, bool kGetpid>
WorkloadDef KstackRow() {
  const kstack::PolicyDef& def = kstack::kPolicies[I];
  WorkloadDef w;
  w.name = "model/kstack";
  w.variant = def.name;
  w.params = Json{{"handler", kGetpid ? "getpid" : "empty"}};
  w.summary =
      fmt::format("syscall path model{}: {}", kGetpid ? " around a real getpid" : "", def.summary);
  w.setup = &SetupKstack<I>;
  if constexpr (kGetpid) {
    w.percall = &TimePerCall<Clock, CallKstackGetpid<I>>;
    w.loop = &TimeLoop<Clock, CallKstackGetpid<I>>;
  } else {
    w.percall = &TimePerCall<Clock, CallKstack<I>>;
    w.loop = &TimeLoop<Clock, CallKstack<I>>;
  }
  return w;
}

template <size_t... I>
std::vector<WorkloadDef> KstackRows(std::index_sequence<I...>) {
  return {KstackRow<I, false>()..., KstackRow<I, true>()...};
}

// --- model/rng -------------------------------------------------------------------------------

struct SiphashSourceSlot {
  uint64_t counter = 0;
};

// Everything a source row may use; each row boots its own.
struct RngState {
  explicit RngState(std::shared_ptr<rng::Crng> c)
      : crng(std::move(c)), prandom(crng->num_cpus()), siphash(crng->num_cpus()) {}
  std::shared_ptr<rng::Crng> crng;
  kstack::PerCpu<rng::PrandomState> prandom;
  kstack::PerCpu<SiphashSourceSlot> siphash;
  rng::SiphashKey key{};
  kstack::SchedCpu cpu;
};

Expected<std::shared_ptr<RngState>> BootRngState() {
  const int cpus = kstack::PossibleCpus();
  auto crng = kstack::BootCrng(cpus);
  if (!crng.ok()) return crng.error();
  auto s = std::make_shared<RngState>(std::move(*crng));
  std::vector<rng::PrandomState> states(static_cast<size_t>(cpus));
  KSTACKLAB_RETURN_IF_ERROR(rng::PrandomSeedFullState(states));
  for (int c = 0; c < cpus; ++c) s->prandom[c] = states[static_cast<size_t>(c)];
  uint8_t key[16];
  KSTACKLAB_RETURN_IF_ERROR(rng::FillFromGetrandom(key, sizeof key));
  s->key = rng::SiphashKeyFromBytes(key);
  rng::SecureZero(key, sizeof key);
  return s;
}

void CallPrandom(void* p) {
  auto* s = static_cast<RngState*>(p);
  Keep(rng::PrandomU32State(s->prandom[s->cpu.Cpu()]));
}
void CallCrngU16(void* p) {
  auto* s = static_cast<RngState*>(p);
  Keep(s->crng->GetRandomU16(s->cpu.Cpu()));
}
void CallCrngU16Raw(void* p) {
  auto* s = static_cast<RngState*>(p);
  Keep(s->crng->RawGetRandomU16(s->cpu.Cpu()));
}
void CallCrngU8Raw(void* p) {
  auto* s = static_cast<RngState*>(p);
  Keep(s->crng->RawGetRandomU8(s->cpu.Cpu()));
}
void CallSiphash(void* p) {
  auto* s = static_cast<RngState*>(p);
  SiphashSourceSlot& slot = s->siphash[s->cpu.Cpu()];
  Keep(rng::Siphash1u64(slot.counter++, s->key));
}
void CallCounter(void*) { Keep(rng::ReadCycleCounter()); }
// The baseline of the source rows: the same call path and CPU-slot lookup, no randomness.
void CallNoSource(void* p) {
  auto* s = static_cast<RngState*>(p);
  Keep(static_cast<uint32_t>(s->cpu.Cpu()) & 0u);
}

// Boots the state and runs the source 200 times (covering at least two crng refills), checking
// the crng refill cadence where there is one.
template <auto Call>
Expected<std::shared_ptr<void>> SetupRng() {
  auto s = BootRngState();
  if (!s.ok()) return s.error();
  for (int i = 0; i < 200; ++i) Call(s->get());
  const rng::CrngCounters c = (*s)->crng->TotalCounters();
  const uint64_t refills = c.refills[0] + c.refills[1];
  if constexpr (Call == &CallCrngU16 || Call == &CallCrngU16Raw) {
    // 200 calls = ceil(200 / 48) = 5 refills on one cpu; a migration can add some.
    if (refills < 5) {
      return RuntimeError(fmt::format("crng: {} u16 refills in 200 calls, expected >= 5", refills));
    }
  } else if constexpr (Call == &CallCrngU8Raw) {
    if (refills < 3) {
      return RuntimeError(fmt::format("crng: {} u8 refills in 200 calls, expected >= 3", refills));
    }
  } else {
    if (refills != 0) return RuntimeError("a non-crng source touched the crng");
  }
  return std::shared_ptr<void>(std::move(*s));
}

template <auto Call>
WorkloadDef RngRow(const char* variant, const char* summary) {
  WorkloadDef w;
  w.name = "model/rng";
  w.variant = variant;
  w.summary = summary;
  w.setup = &SetupRng<Call>;
  w.percall = &TimePerCall<Clock, Call>;
  w.loop = &TimeLoop<Clock, Call>;
  return w;
}

}  // namespace

std::vector<WorkloadDef> ModelRows() {
  std::vector<WorkloadDef> rows =
      KstackRows(std::make_index_sequence<std::size(kstack::kPolicies)>());
  const std::vector<WorkloadDef> sources = {
      RngRow<CallNoSource>("off",
                           "no random source: the shared call path and CPU-slot lookup "
                           "(baseline of the source rows)"),
      RngRow<CallPrandom>("prandom", "one prandom_u32_state() on this CPU's LFSR113 state"),
      RngRow<CallCrngU16>("crng-u16",
                          "get_random_u16() on this CPU, locked (refill: 2 ChaCha20 blocks / 48)"),
      RngRow<CallCrngU16Raw>("crng-u16-raw", "get_random_u16() on this CPU without the local lock"),
      RngRow<CallCrngU8Raw>("crng-u8-raw",
                            "get_random_u8() on this CPU without the local lock (refill / 96)"),
      RngRow<CallSiphash>("siphash", "siphash_1u64(this CPU's counter++) under a boot-time key"),
      RngRow<CallCounter>("counter", "the cycle counter read alone (rdtsc / cntvct_el0)"),
  };
  rows.insert(rows.end(), sources.begin(), sources.end());
  return rows;
}

}  // namespace kstacklab::workloads
