// Per-suite row tables, concatenated by registry.cc. One function per suite file.
#pragma once

#include <vector>

#include "kstacklab/workload.h"

namespace kstacklab::workloads {

std::vector<WorkloadDef> SyscallRows();  // syscall.cc

}  // namespace kstacklab::workloads
