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
#include <string_view>
#include <utility>
#include <vector>

#include "kstacklab/kstack/policies.h"
#include "kstacklab/rng/counter.h"
#include "kstacklab/rng/crng.h"
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
    if (!kstack::IsMaskedOffset(offset)) {
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
  w.baseline = std::string_view(def.name) == "off";
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

// A source row is a class: kName, kSummary, created like a policy (kstack::Boot<S>(): a static
// Boot(), a constructor from the booted crng, or a default constructor), and Call(), one call
// of the source. A source built on the crng has crng() and kMinRefillsPer200Calls, the refill
// cadence the setup check demands. Adding a source = the class + one row in ModelRows().

// The baseline of the source rows: the same call path and CPU-slot lookup, no randomness.
struct NoSource {
  static constexpr const char* kName = "off";
  static constexpr const char* kSummary =
      "no random source: the shared call path and CPU-slot lookup (baseline of the source rows)";
  static constexpr bool kBaseline = true;  // compare's default baseline among the source rows
  uint32_t Call() { return static_cast<uint32_t>(cpu.Cpu()) & 0u; }
  kstack::SchedCpu cpu;
};

// The per-CPU LFSR113 states of the final kstack design, booted as that policy boots them.
struct PrandomSource {
  static constexpr const char* kName = "prandom";
  static constexpr const char* kSummary = "one prandom_u32_state() on this CPU's LFSR113 state";
  static Expected<std::unique_ptr<PrandomSource>> Boot() {
    auto policy = kstack::Boot<kstack::PercpuPrngPolicy>();
    if (!policy.ok()) return policy.error();
    return std::make_unique<PrandomSource>(PrandomSource{std::move(*policy)});
  }
  uint32_t Call() { return policy->Entry(); }
  std::unique_ptr<kstack::PercpuPrngPolicy> policy;
};

// get_random_uN() of the booted crng on this CPU: Get(crng, cpu) is the call.
template <auto Get, uint64_t kMinRefills>
struct CrngSource {
  static constexpr uint64_t kMinRefillsPer200Calls = kMinRefills;
  explicit CrngSource(std::shared_ptr<rng::Crng> c) : crng_(std::move(c)) {}
  auto Call() { return (crng_.get()->*Get)(cpu_.Cpu()); }
  rng::Crng& crng() { return *crng_; }

 private:
  std::shared_ptr<rng::Crng> crng_;
  kstack::SchedCpu cpu_;
};

// 200 calls on one cpu = ceil(200 / 48) = 5 u16 refills (ceil(200 / 96) = 3 for u8); a
// migration can only add some.
struct CrngU16Source : CrngSource<&rng::Crng::GetRandomU16, 5> {
  static constexpr const char* kName = "crng-u16";
  static constexpr const char* kSummary =
      "get_random_u16() on this CPU, locked (refill: 2 ChaCha20 blocks / 48)";
  using CrngSource::CrngSource;
};
struct CrngU16RawSource : CrngSource<&rng::Crng::RawGetRandomU16, 5> {
  static constexpr const char* kName = "crng-u16-raw";
  static constexpr const char* kSummary = "get_random_u16() on this CPU without the local lock";
  using CrngSource::CrngSource;
};
struct CrngU8RawSource : CrngSource<&rng::Crng::RawGetRandomU8, 3> {
  static constexpr const char* kName = "crng-u8-raw";
  static constexpr const char* kSummary =
      "get_random_u8() on this CPU without the local lock (refill / 96)";
  using CrngSource::CrngSource;
};

struct SiphashSource {
  static constexpr const char* kName = "siphash";
  static constexpr const char* kSummary =
      "siphash_1u64(this CPU's counter++) under a boot-time key";
  explicit SiphashSource(const rng::SiphashKey& k) : key(k), counters(kstack::PossibleCpus()) {}
  static Expected<std::unique_ptr<SiphashSource>> Boot() {
    auto key = kstack::BootSiphashKey();
    if (!key.ok()) return key.error();
    return std::make_unique<SiphashSource>(*key);
  }
  uint64_t Call() { return rng::Siphash1u64(counters[cpu.Cpu()]++, key); }
  rng::SiphashKey key;
  kstack::PerCpu<uint64_t> counters;
  kstack::SchedCpu cpu;
};

struct CounterSource {
  static constexpr const char* kName = "counter";
  static constexpr const char* kSummary = "the cycle counter read alone (rdtsc / cntvct_el0)";
  uint64_t Call() { return timing::ReadCounter(); }
};

template <class S>
void CallSource(void* p) {
  Keep(static_cast<S*>(p)->Call());
}

// Boots the source and runs it 200 times, checking the crng refill cadence where there is one.
template <class S>
Expected<std::shared_ptr<void>> SetupSource() {
  auto s = kstack::Boot<S>();
  if (!s.ok()) return s.error();
  for (int i = 0; i < 200; ++i) CallSource<S>(s->get());
  if constexpr (requires { S::kMinRefillsPer200Calls; }) {
    const rng::CrngCounters c = (*s)->crng().TotalCounters();
    const uint64_t refills = c.refills[0] + c.refills[1];
    if (refills < S::kMinRefillsPer200Calls) {
      return RuntimeError(fmt::format("{}: {} crng refills in 200 calls, expected >= {}", S::kName,
                                      refills, S::kMinRefillsPer200Calls));
    }
  }
  return std::shared_ptr<void>(std::move(*s));
}

template <class S>
WorkloadDef SourceRow() {
  WorkloadDef w;
  w.name = "model/rng";
  w.variant = S::kName;
  w.baseline = requires { S::kBaseline; };
  w.summary = S::kSummary;
  w.setup = &SetupSource<S>;
  w.percall = &TimePerCall<Clock, CallSource<S>>;
  w.loop = &TimeLoop<Clock, CallSource<S>>;
  return w;
}

}  // namespace

std::vector<WorkloadDef> ModelRows() {
  std::vector<WorkloadDef> rows =
      KstackRows(std::make_index_sequence<std::size(kstack::kPolicies)>());
  // One row per source.
  const std::vector<WorkloadDef> sources = {
      SourceRow<NoSource>(),         SourceRow<PrandomSource>(),   SourceRow<CrngU16Source>(),
      SourceRow<CrngU16RawSource>(), SourceRow<CrngU8RawSource>(), SourceRow<SiphashSource>(),
      SourceRow<CounterSource>(),
  };
  rows.insert(rows.end(), sources.begin(), sources.end());
  return rows;
}

}  // namespace kstacklab::workloads
