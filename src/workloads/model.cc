// The model suite: user-space models of the kstack offset designs and their random sources
// (docs/models.md). Every row measures a configuration of the same thing in one process, so
// the rows share a name and differ by variant; `kstacklab compare` takes variant `off` as the
// baseline of model/kstack.
//
//  * model/kstack:<policy>  one user-space "syscall" (kstack::KstackSyscall): the policy's entry
//    step, alloca(KSTACK_OFFSET_MAX(offset)) kept alive, a handler that writes a volatile local
//    below it, and the exit ("choose") step where the design has one. One row per kPolicies row.
//  * model/rng:<source>     one call of a random source alone, one row per model row of
//    kstack::kSources; the per-CPU sources pick their slot with sched_getcpu() per call, as the
//    kstack designs do. The counter source reads the cycle counter of whatever CPU the thread
//    runs on: there is no per-CPU state to pick.
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "kstacklab/kstack/policies.h"
#include "kstacklab/kstack/sources.h"
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

// One row per model source of kstack::kSources (kstack/sources.h: the classes, the rows and how
// to add one). kSources is constexpr, so kSources[I].call folds to a direct call of the source's
// Call().
template <size_t I>
void CallSource(void* p) {
  Keep(kstack::kSources[I].call(p));
}

// Boots the source and runs it 200 times, checking the crng refill cadence where there is one.
template <size_t I>
Expected<std::shared_ptr<void>> SetupSource() {
  const kstack::SourceDef& def = kstack::kSources[I];
  auto s = def.boot();
  if (!s.ok()) return s.error();
  for (int i = 0; i < 200; ++i) CallSource<I>(s->get());
  if (def.refills != nullptr) {
    const uint64_t refills = def.refills(s->get());
    if (refills < def.min_refills_per_200_calls) {
      return RuntimeError(fmt::format("{}: {} crng refills in 200 calls, expected >= {}", def.name,
                                      refills, def.min_refills_per_200_calls));
    }
  }
  return std::move(*s);
}

template <size_t I>
void AddSourceRow(std::vector<WorkloadDef>& rows) {
  constexpr const kstack::SourceDef& def = kstack::kSources[I];
  if constexpr (def.boot != nullptr) {
    WorkloadDef w;
    w.name = "model/rng";
    w.variant = def.name;
    w.baseline = def.baseline;
    w.summary = def.model_summary;
    w.setup = &SetupSource<I>;
    w.percall = &TimePerCall<Clock, CallSource<I>>;
    w.loop = &TimeLoop<Clock, CallSource<I>>;
    rows.push_back(std::move(w));
  }
}

template <size_t... I>
void AddSourceRows(std::vector<WorkloadDef>& rows, std::index_sequence<I...>) {
  (AddSourceRow<I>(rows), ...);
}

}  // namespace

std::vector<WorkloadDef> ModelRows() {
  std::vector<WorkloadDef> rows =
      KstackRows(std::make_index_sequence<std::size(kstack::kPolicies)>());
  AddSourceRows(rows, std::make_index_sequence<std::size(kstack::kSources)>());
  return rows;
}

}  // namespace kstacklab::workloads
