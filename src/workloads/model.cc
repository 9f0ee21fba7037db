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
#include <vector>

#include "kstacklab/kstack/policies.h"
#include "kstacklab/kstack/sources.h"
#include "model_rows.h"
#include "suites.h"

namespace kstacklab::workloads {

std::vector<WorkloadDef> ModelRows() {
  return model_rows::ModelRowsOf<kstack::kPolicies, kstack::kSources>();
}

}  // namespace kstacklab::workloads
