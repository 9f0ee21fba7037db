// The report of `entropy --kernel` (the running kernel's offsets, read by the live BPF probe or
// from saved records) as data, and its two renderers: the text (grid tables and the lines around
// them) and JSON. The CLI fills the struct (cli/entropy_kernel.cc); report/ words it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kstacklab/analysis/entropy.h"
#include "kstacklab/live/infer.h"
#include "kstacklab/results/results.h"

namespace kstacklab::report {

struct KernelEntropyReport {
  std::string source;  // "live probe" or the records file
  std::string syscall;
  int cpu = -1;
  EnvironmentFacts environment;  // this kernel's, for the probe; unknown for --records
  live::DerivedOffsets derived;
  analysis::EntropyStats stats;
  std::vector<live::LagDependence> dependence;
  int shuffles = 0;  // of the serial-dependence baseline (live::SerialDependence)
  live::InputDiagnosis inputs;
  live::PrngCheck prng;         // records with kstack_rnd_state (v7.1+)
  std::string prng_unreadable;  // why BTF's kstack_rnd_state could not be read (probe only)
  live::KernelDesign design;
  uint64_t cpus_seen = 0;
  uint64_t threads_seen = 0;
};

// The text: the kernel and its design, the source, how the offsets were read and their geometry,
// the per-CPU generator checks (when recorded), the entropy table, the serial-dependence table
// and the kernel-input line.
std::string RenderKernelEntropyTable(const KernelEntropyReport& r);

// {"mode": "kernel", "source", "syscall", "cpu", "environment", "offsets", "prng_state",
//  "entropy", "serial_dependence", "kernel_input"}, in that order.
std::string RenderKernelEntropyJson(const KernelEntropyReport& r);

}  // namespace kstacklab::report
