// Per-suite row tables, concatenated by registry.cc. One function per suite file.
#pragma once

#include <vector>

#include "kstacklab/workloads/workload.h"

namespace kstacklab::workloads {

std::vector<WorkloadDef> SyscallRows();       // syscall.cc
std::vector<WorkloadDef> ModelRows();         // model.cc
std::vector<WorkloadDef> EraseRows();         // erase.cc
std::vector<WorkloadDef> DeepSyscallRows();   // syscall_deep.cc
std::vector<WorkloadDef> SyscallSuiteRows();  // syscall_deep.cc: SyscallRows + DeepSyscallRows
std::vector<WorkloadDef> MicrommRows();       // micromm.cc
std::vector<WorkloadDef> PkeysRows();         // pkeys.cc
std::vector<WorkloadDef> MacroRows();         // macro.cc

}  // namespace kstacklab::workloads
