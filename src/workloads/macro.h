// The macro suite's build load, exposed for tests (workloads/macro.cc).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kstacklab/workloads/workload.h"

namespace kstacklab::workloads {

// The kstacklab source tree and C++ compiler this binary was built with (baked in at build time).
std::string KernbenchSourceDir();
std::string KernbenchCompiler();

// The sources one build compiles: the .cc files of src/{histogram,rng,kstack,timing} in the tree,
// sorted, at most `max_files` (0 = all). Empty when the tree is gone.
std::vector<std::string> KernbenchSources(size_t max_files);

// The macro/kernbench row compiling KernbenchSources(max_files) with -j = online CPUs.
// Tests use a small max_files; the suite uses 0.
WorkloadDef KernbenchRow(size_t max_files);

}  // namespace kstacklab::workloads
