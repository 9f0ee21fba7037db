// What the live records show (docs/live.md), pure: the offsets derived from the records'
// addresses, their serial dependence, and the kernel's kstack design inferred from them. The
// live attacks: kstacklab/live/attacks.h. Library kstacklab_live.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kstacklab/analysis/entropy.h"
#include "kstacklab/common/error.h"
#include "kstacklab/kstack/apply.h"
#include "kstacklab/live/records.h"

namespace kstacklab::live {

// ---- Offsets from addresses (pure) ------------------------------------------------------------

// The height of a record: local_addr - stack_base, bytes above the bottom of its task stack. With
// the same call path to sys_exit, height = H0 - offset where H0 is the height at offset 0 (a
// constant of the kernel build).
//
// The kernel's offset geometry is read off the heights: the row of kstack::kGeometries, with H0,
// under whose ideal distribution the heights are most likely (maximum likelihood). So a spread of
// 1008 bytes in steps of 16 is v6.11+, 1024 in steps of 8 the ror32 era on x86-64, 256 in steps of
// 8 the plain-XOR era on x86-64 (v5.13-v6.8, and stable kernels before April 2024), and so on.
// H0 is the largest height seen plus the offset the fit gives it: 0 whenever the heights span the
// whole geometry (for v6.11+, once offset 0 has been drawn: 1 - (63/64)^n, n = 4096: 1 - 1e-28).
// When they span one step less, the likelier missing end is taken: for v6.11+ (uniform) offset
// 1008, for the older geometries offset 0 (1 draw in 1024 for x86-64 in the ror32 era, against 7
// for its largest offset). Every height equal (randomization off, or one record): the first row,
// offset 0.
struct DerivedOffsets {
  std::vector<uint32_t> offsets;  // one per record, same order: H0 - height
  kstack::OffsetGeometry geometry = kstack::kGeometryV611;
  uint64_t anchor_height = 0;  // H0
  uint64_t spread = 0;         // max height - min height (<= geometry.max() for one call path)
  // Other rows of kstack::kGeometries under which the heights are at least
  // kAlsoConsistentLikelihood as likely as under `geometry`: the samples cannot tell them apart
  // (few samples, or an end offset not drawn); more samples can.
  std::vector<kstack::OffsetGeometry> also_consistent;
  // Records whose kernel-side state was available (kHasTaskState) and whose offset equals
  // geometry.Apply(task_state) — the independent check of the derivation, and how many were
  // checkable.
  uint64_t state_checked = 0;
  uint64_t state_agreeing = 0;
};

// The likelihood ratio above which DerivedOffsets names another geometry as also consistent.
inline constexpr double kAlsoConsistentLikelihood = 0.05;

// RuntimeError when there are no records, a local is not above its stack base or more than
// 64 KiB above it (not on the task stack), or the heights fit no geometry: a spread over 1024
// bytes or steps that are not multiples of 8 (more than one call path: filter one syscall).
Expected<DerivedOffsets> DeriveOffsets(std::span<const LiveRecord> records);

// ---- The per-CPU generator's state (pure; v7.1+, kHasPrngState) --------------------------------
// On v7.1+ (commit a96ef5848cb0) each syscall's offset is prandom_u32_state(this CPU's
// kstack_rnd_state) & mask, drawn at entry: the state steps once (rng::PrandomU32State) and the
// offset comes from s1^s2^s3^s4 of the new state. The probe reads the state of the CPU it runs on
// at sys_exit. Two checks, each against the model rng::PrandomU32State:
// - per record: offset == geometry.Apply(s1 ^ s2 ^ s3 ^ s4). It fails when another syscall drew
//   on this CPU between this syscall's draw and its probe (the task was preempted), when the task
//   migrated between them (the record's CPU is not the one it drew on), or when the kernel draws
//   otherwise than modelled;
// - succession: for consecutive records on one CPU (record order), the later state is the earlier
//   one stepped k times, k = 1 + the draws of other syscalls on that CPU in between. k is searched
//   up to kMaxPrngSteps; beyond that (or never) the pair is a break: a reseed, another generator,
//   or a state not of this CPU. k = 0 (the same state twice) means no draw on that CPU between
//   the two probes: the later syscall drew on another CPU and migrated (counted apart).
struct PrngCheck {
  uint64_t checked = 0;            // records with kHasPrngState
  uint64_t agreeing = 0;           // ... whose offset is geometry.Apply(s1 ^ s2 ^ s3 ^ s4)
  std::vector<size_t> mismatches;  // indices of the records that do not agree (the first
                                   // kMaxPrngListed)
  uint64_t pairs = 0;              // consecutive records of one CPU, both with kHasPrngState
  uint64_t following = 0;  // ... whose later state is the earlier stepped 1..kMaxPrngSteps times
  uint64_t unchanged = 0;  // ... whose two states are equal (k = 0)
  std::vector<size_t> breaks;  // the later record's index of each pair that neither follows nor
                               // repeats (the first kMaxPrngListed)
  uint64_t broken = 0;         // pairs - following - unchanged
  uint64_t median_steps = 0;   // of k over the following pairs (the lower median; 0 if none)
  uint64_t max_steps = 0;
};

// The bound of the succession search. The other syscalls on a CPU between two of the sampling
// thread's records there are those of the tasks that ran on it meanwhile: one scheduler slice
// (EEVDF's base slice, 0.75 ms scaled up to 3 ms with the CPU count) of back-to-back syscalls of
// 50 ns or more is at most about 2^16 draws. The bound also caps the search at about 0.1 ms per
// pair that does not follow.
inline constexpr uint64_t kMaxPrngSteps = uint64_t{1} << 16;
inline constexpr size_t kMaxPrngListed = 16;

// offsets[i] belongs to records[i] (DerivedOffsets::offsets). RuntimeError when the sizes differ.
Expected<PrngCheck> CheckPrngStates(std::span<const LiveRecord> records,
                                    std::span<const uint32_t> offsets,
                                    const kstack::OffsetGeometry& geometry);

// ---- Serial dependence (pure) -----------------------------------------------------------------
// The mutual information of a pair of offset sequences: analysis::MutualInformationBits
// (kstacklab/analysis/entropy.h).

// The dependence at one lag: pairs (offset_i, offset_{i+lag}) of the same thread, both on the same
// CPU (consecutive in that thread's record order).
struct LagDependence {
  int lag = 0;
  analysis::MutualInformation mi;
  double shuffled_plugin_bits = 0;      // mean plug-in MI with y shuffled (independence baseline)
  double shuffled_plugin_max_bits = 0;  // largest of the shuffles
  int shuffles = 0;
};

// Lags 1..max_lag. offsets[i] belongs to records[i] and is one of geometry's. shuffles > 0
// permutes y that many times with a deterministic generator seeded by `seed`.
Expected<std::vector<LagDependence>> SerialDependence(std::span<const LiveRecord> records,
                                                      std::span<const uint32_t> offsets,
                                                      const kstack::OffsetGeometry& geometry,
                                                      int max_lag, int shuffles, uint64_t seed);

// What the per-task state shows about the kernel's random input (only with kHasTaskState):
// input_n = state_{n+1} XOR ror32(state_n, 5) for consecutive records of one thread, which is the
// value choose_random_kstack_offset() mixed in at that exit (plus any other return to user mode in
// between). A time-stamp counter makes inputs increase: (input_{n+1} - input_n) mod 2^32 < 2^31
// for nearly every pair; a random source gives about half.
struct InputDiagnosis {
  uint64_t inputs = 0;
  uint64_t increasing = 0;  // pairs of consecutive inputs that increase (mod 2^32)
  uint64_t pairs = 0;
  double median_step = 0;  // median of (input_{n+1} - input_n) mod 2^32 over the pairs
};
InputDiagnosis DiagnoseInputs(std::span<const LiveRecord> records);

// The kernel's kstack design as far as this process can tell, for the result's environment.
struct KernelDesign {
  std::string state;    // "per-task" (task_struct.kstack_offset in BTF), "per-cpu-prng"
                        // (kstack_rnd_state), "per-cpu-counter", or "unknown"
  std::string input;    // "tsc-like", "random-like", or "unknown" (from DiagnoseInputs)
  std::string summary;  // one line
};
KernelDesign InferDesign(bool btf_task_field, bool btf_prng_state, bool btf_percpu_counter,
                         const InputDiagnosis& inputs);

}  // namespace kstacklab::live
