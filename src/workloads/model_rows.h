// The model suite's rows, built from a policy table and a source table (model.cc: the
// production tables kstack::kPolicies and kstack::kSources; tests: tables with a row of their
// own, to check that a new row becomes benchmark rows with no other edit). Private to
// src/workloads and its tests; model.cc says what the rows measure.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/kstack/apply.h"
#include "kstacklab/kstack/policies.h"
#include "kstacklab/kstack/sources.h"
#include "kstacklab/results/json.h"
#include "kstacklab/sampler/sampler.h"
#include "kstacklab/timing/timing.h"
#include "kstacklab/workloads/workload.h"

namespace kstacklab::workloads::model_rows {

using Clock = timing::CycleClock;

// Keeps a value alive without a store to memory.
template <class T>
[[gnu::always_inline]] inline void Keep(T v) {
  asm volatile("" : : "r"(v));
}

// --- model/kstack ----------------------------------------------------------------------------

// kTable (kstack::kPolicies) is constexpr, so kTable[I].syscall folds to a direct call of the
// noinline KstackSyscall<Policy>.
template <const auto& kTable, size_t I>
void CallKstack(void* state) {
  Keep(kTable[I].syscall(state));
}
template <const auto& kTable, size_t I>
void CallKstackGetpid(void* state) {
  Keep(kTable[I].syscall_getpid(state));
}

// Boots the policy and checks once that it works: 640 offsets all in {0, 16, ..., 1008}, and one
// applied syscall.
template <const auto& kTable, size_t I>
Expected<std::shared_ptr<void>> SetupKstack() {
  const kstack::PolicyDef& def = kTable[I];
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
template <const auto& kTable, size_t I, bool kGetpid>
WorkloadDef KstackRow() {
  const kstack::PolicyDef& def = kTable[I];
  WorkloadDef w;
  w.name = "model/kstack";
  w.variant = def.name;
  w.baseline = std::string_view(def.name) == "off";
  w.params = Json{{"handler", kGetpid ? "getpid" : "empty"}};
  w.summary = fmt::format("syscall path model{}: {} ({})", kGetpid ? " around a real getpid" : "",
                          def.summary, kstack::KernelsLine(def.kernels));
  w.setup = &SetupKstack<kTable, I>;
  if constexpr (kGetpid) {
    w.percall = &sampler::TimePerCall<Clock, CallKstackGetpid<kTable, I>>;
    w.loop = &sampler::TimeLoop<Clock, CallKstackGetpid<kTable, I>>;
  } else {
    w.percall = &sampler::TimePerCall<Clock, CallKstack<kTable, I>>;
    w.loop = &sampler::TimeLoop<Clock, CallKstack<kTable, I>>;
  }
  return w;
}

template <const auto& kTable, size_t... I>
std::vector<WorkloadDef> KstackRows(std::index_sequence<I...>) {
  return {KstackRow<kTable, I, false>()..., KstackRow<kTable, I, true>()...};
}

// --- model/rng -------------------------------------------------------------------------------

// One row per model source of kTable (kstack::kSources; kstack/sources.h: the classes, the rows
// and how to add one). It is constexpr, so kTable[I].call folds to a direct call of the source's
// Call().
template <const auto& kTable, size_t I>
void CallSource(void* p) {
  Keep(kTable[I].call(p));
}

// Boots the source and runs it 200 times, checking the crng refill cadence where there is one.
template <const auto& kTable, size_t I>
Expected<std::shared_ptr<void>> SetupSource() {
  const kstack::SourceDef& def = kTable[I];
  auto s = def.boot();
  if (!s.ok()) return s.error();
  for (int i = 0; i < 200; ++i) CallSource<kTable, I>(s->get());
  if (def.refills != nullptr) {
    const uint64_t refills = def.refills(s->get());
    if (refills < def.min_refills_per_200_calls) {
      return RuntimeError(fmt::format("{}: {} crng refills in 200 calls, expected >= {}", def.name,
                                      refills, def.min_refills_per_200_calls));
    }
  }
  return std::move(*s);
}

template <const auto& kTable, size_t I>
void AddSourceRow(std::vector<WorkloadDef>& rows) {
  constexpr const kstack::SourceDef& kDef = kTable[I];
  if constexpr (kDef.model) {
    WorkloadDef w;
    w.name = "model/rng";
    w.variant = kDef.name;
    w.baseline = kDef.baseline;
    w.summary = kDef.model_summary;
    w.setup = &SetupSource<kTable, I>;
    w.percall = &sampler::TimePerCall<Clock, CallSource<kTable, I>>;
    w.loop = &sampler::TimeLoop<Clock, CallSource<kTable, I>>;
    rows.push_back(std::move(w));
  }
}

template <const auto& kTable, size_t... I>
void AddSourceRows(std::vector<WorkloadDef>& rows, std::index_sequence<I...>) {
  (AddSourceRow<kTable, I>(rows), ...);
}

// Two model/kstack rows per row of kPolicyTable (every row with handler empty, then every row
// with getpid), then one model/rng row per model row of kSourceTable (constexpr arrays).
template <const auto& kPolicyTable, const auto& kSourceTable>
std::vector<WorkloadDef> ModelRowsOf() {
  std::vector<WorkloadDef> rows =
      KstackRows<kPolicyTable>(std::make_index_sequence<std::size(kPolicyTable)>());
  AddSourceRows<kSourceTable>(rows, std::make_index_sequence<std::size(kSourceTable)>());
  return rows;
}

}  // namespace kstacklab::workloads::model_rows
