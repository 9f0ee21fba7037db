// `kstacklab entropy --kernel`: the entropy report for the running kernel from the live BPF
// sampler (src/live/, docs/live.md), plus the serial dependence of consecutive offsets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "command.h"

namespace kstacklab::cli {

// Fewest offsets either entropy mode (model or --kernel) accepts for --samples.
inline constexpr uint64_t kMinEntropySamples = 64;

struct KernelEntropyFlags {
  bool kernel = false;
  std::string syscall = "getpid";
  std::string cpu;  // empty: not pinned
  std::string lags = "8";
  std::string records;       // analyse this CSV instead of sampling
  std::string save_records;  // write the sampled records here
};

// Adds --kernel, --syscall, --cpu, --lags, --records, --save-records to the entropy command.
void AddKernelEntropyFlags(CLI::App& sub, KernelEntropyFlags& flags);

// Runs the kernel mode. `policies`, `samples` and `format` are the entropy command's own.
int RunKernelEntropy(const KernelEntropyFlags& flags, const std::vector<std::string>& policies,
                     const std::string& samples, const std::string& format);

}  // namespace kstacklab::cli
