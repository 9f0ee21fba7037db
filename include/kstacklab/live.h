// Live ground truth from the running kernel: a BPF program on the raw tracepoint
// sys_exit runs on the syscall's own task stack, below the alloca of add_random_kstack_offset(),
// so the address of one of its locals moves exactly with that syscall's stack offset. The sampler
// records one LiveRecord per syscall of this process; DeriveOffsets() turns the addresses into
// offsets; SerialDependence() measures how much one offset tells about the next. docs/live.md.
//
// Privileges: loading needs root, or CAP_BPF + CAP_PERFMON (the program stores a kernel stack
// address, a "pointer leak" the verifier allows only with CAP_PERFMON). Sampler::Attach diagnoses
// what is missing. Never used by `run`: the sampler adds cost to every syscall of the process.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/error.h"
#include "kstacklab/kstack/apply.h"

namespace kstacklab::live {

// One syscall of the sampled process, as the BPF program wrote it (src/live/kstack_sampler.bpf.c,
// struct live_record: same layout).
struct LiveRecord {
  uint64_t local_addr = 0;  // address of a local of the BPF program, on the task stack
  uint64_t stack_base = 0;  // task_struct.stack: lowest address of that task stack
  uint64_t ktime_ns = 0;    // bpf_ktime_get_ns() (CLOCK_MONOTONIC)
  uint32_t cpu = 0;         // CPU the syscall exited on
  uint32_t tid = 0;         // thread id
  int32_t nr = 0;           // syscall number
  uint32_t task_state = 0;  // task_struct.kstack_offset (per-task state kernels), see flags
  uint32_t flags = 0;       // kHasTaskState
  uint32_t pad = 0;
};
static_assert(sizeof(LiveRecord) == 48, "must match struct live_record in kstack_sampler.bpf.c");

// LiveRecord::flags: task_state holds task_struct.kstack_offset (the kernel has that field).
inline constexpr uint32_t kHasTaskState = 1;

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

// ---- Serial dependence (pure) -----------------------------------------------------------------

// Mutual information of pairs (x, y) of offset bins 0..bins-1 (bin = offset / geometry.align),
// in bits.
struct MutualInformation {
  uint64_t pairs = 0;
  double plugin_bits = 0;        // H(X) + H(Y) - H(X,Y) of the empirical distribution
  double miller_madow_bits = 0;  // plug-in with each entropy Miller–Madow corrected: + (m-1)/2N
                                 // nats, m = occupied cells (can go below 0 when independent)
  double conditional_bits = 0;   // H(Y|X), bits, Miller–Madow corrected
                                 // (analysis::ConditionalEntropyBits)
};

// RuntimeError when a bin is not below `bins` (at most kstack::kMaxOffsetCount) or the lengths
// differ. Empty input: all zero.
Expected<MutualInformation> MutualInformationBits(std::span<const uint8_t> x,
                                                  std::span<const uint8_t> y, uint32_t bins = 64);

// The dependence at one lag: pairs (offset_i, offset_{i+lag}) of the same thread, both on the same
// CPU (consecutive in that thread's record order).
struct LagDependence {
  int lag = 0;
  MutualInformation mi;
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

// ---- The sampler (libbpf) ---------------------------------------------------------------------

// Whether this build contains the BPF sampler (libbpf, clang and bpftool were found at build
// time). When false, Sampler::Attach returns the reason.
bool SamplerBuilt();

struct SamplerOptions {
  int32_t syscall_nr = -1;  // only this syscall; -1: every syscall of the process
};

// Loads and attaches the program for this process (tgid = getpid()); detaches on destruction.
// Not thread-safe; Drain from one thread.
class Sampler {
 public:
  // RuntimeError (exit 1) naming exactly what is missing: the build, root / CAP_BPF+CAP_PERFMON,
  // the bpf() syscall, BTF, the raw tracepoint, lockdown.
  static Expected<std::unique_ptr<Sampler>> Attach(const SamplerOptions& options);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Appends every record waiting in the ring buffer to *out.
  Status Drain(std::vector<LiveRecord>* out);
  // How many syscalls a collector may make between two Drain calls: well below the ring
  // buffer's ~299k records, so none is dropped.
  static constexpr uint64_t kDrainEvery = 16384;
  // Records the ring buffer had no room for since Attach.
  uint64_t Dropped() const;

  struct Impl;

 private:
  explicit Sampler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Which kstack-offset state the running kernel's BTF declares (empty optional: BTF unreadable).
struct BtfDesignHints {
  bool task_field = false;      // task_struct has kstack_offset
  bool prng_state = false;      // a kstack_rnd_state variable exists
  bool percpu_counter = false;  // a kstack_offset variable exists
};
std::optional<BtfDesignHints> ReadBtfDesignHints();

// ---- Collection -------------------------------------------------------------------------------

struct CollectOptions {
  int32_t syscall_nr = 39;  // SYS_getpid on x86-64; must be one of CollectableSyscalls()
  uint64_t samples = 100000;
  int cpu = -1;  // pin the calling thread there while collecting (restored after); -1: no pin
};

// Syscalls Collect can issue: argument-free or harmless ones.
struct CollectableSyscall {
  const char* name;
  int32_t nr;
};
std::span<const CollectableSyscall> CollectableSyscalls();

// Attaches the sampler filtered to options.syscall_nr, issues it `samples` times from the calling
// thread, and returns the records in order (exactly `samples`, or RuntimeError when records were
// lost).
Expected<std::vector<LiveRecord>> Collect(const CollectOptions& options);

// ---- Fixtures ---------------------------------------------------------------------------------

// CSV with header "local_addr,stack_base,ktime_ns,cpu,tid,nr,task_state,flags" (hex addresses
// with 0x). Used for the recorded fixtures in tests/data/live/ and `--save-records`.
std::string RecordsToCsv(std::span<const LiveRecord> records);
Expected<std::vector<LiveRecord>> RecordsFromCsv(std::string_view text);

}  // namespace kstacklab::live

namespace kstacklab::live {

// ---- Timer attack on the counter design (attack timer --live) -------------------------------
//
// The kernel mixes rdtsc() into the offset state at every return to user mode:
// state = ror32(state, 5) ^ tsc. An unprivileged attacker reads the TSC right after each of its
// own syscalls returns (tsc_after) and predicts the next offset. Ground truth: the sampler's
// derived offsets and, where the kernel has it, task_struct.kstack_offset.

struct TimerAttackData {
  std::vector<LiveRecord> records;  // one per syscall, in order
  std::vector<uint64_t> tsc_after;  // the attacker's TSC right after syscall i returned
};

// Issues `calls` getpid from the calling thread (pinned to `cpu` when >= 0), reading the TSC
// (lfence; rdtsc) right after each returns, with the sampler attached.
Expected<TimerAttackData> CollectTimerAttack(uint64_t calls, int cpu);

struct AttackerScore {
  std::string name;
  std::string knows;  // what this attacker is given, one line
  uint64_t predictions = 0;
  uint64_t correct = 0;
  double correct_fraction = 0;
  double conditional_entropy_bits = 0;  // H(actual | predicted), bits, Miller–Madow corrected
};

struct TimerAttackReport {
  uint64_t calls = 0;
  uint64_t training = 0;  // first half: the attacker's calibration of delta
  int64_t delta = 0;      // median (kernel input - tsc_after) mod 2^32 over training, ticks
  double error_p05 = 0;   // 5th / 95th percentiles of (input - tsc_after - delta), ticks
  double error_p95 = 0;
  double within_16 = 0;    // fraction of |input - tsc_after - delta| < 16 ticks
  bool has_state = false;  // task_struct.kstack_offset available (ground-truth inputs)
  std::vector<AttackerScore> attackers;
};

// Pure: scores on the second half of the calls, after calibrating delta on the first half.
// Attackers: "guess" (most frequent training offset), "tsc+leaks" (reads the TSC after each call
// and is given every previous offset, as if leaked: keeps a 32-bit state estimate, mixes
// tsc_after + delta in, overwrites bits 4-9 with each leaked offset) and, when the kernel state is
// available, "tsc+state" (given the full previous 32-bit state: an upper bound). RuntimeError
// when there are fewer than 256 calls, sizes differ or the records lack the kernel state needed
// to calibrate delta.
Expected<TimerAttackReport> AnalyzeTimerAttack(const TimerAttackData& data,
                                               std::span<const uint32_t> offsets,
                                               const kstack::OffsetGeometry& geometry);

}  // namespace kstacklab::live

namespace kstacklab::live {

// ---- Migration attack (attack migration --live) -----------------------------------------------
//
// Thread A, pinned to CPU X, blocks in read(2) on a pipe; the main thread moves A's affinity to
// CPU Y and then wakes it, so A's read enters on X and exits on Y. A third thread C, pinned to X,
// then makes the next syscall on X (getpid). On a per-CPU counter design X's state was not
// updated by A's exit, so C's offset would repeat the offset A's read had ("stale"); on a per-task
// design it would not. Ground truth: every syscall of the process from the sampler.

struct MigrationRound {
  uint32_t old_cpu = 0;        // X
  uint32_t read_exit_cpu = 0;  // the CPU A's read exited on (Y when the migration happened)
  size_t read_index = 0;       // A's read record
  size_t next_index = 0;       // C's getpid record on X
};

struct MigrationData {
  std::vector<LiveRecord> records;  // every syscall of the process, in ring-buffer order
  std::vector<MigrationRound> rounds;
};

// Runs `rounds` rounds; RuntimeError when the machine has fewer than 2 CPUs or a record is
// missing.
Expected<MigrationData> CollectMigration(uint64_t rounds);

struct MigrationScore {
  uint64_t rounds = 0;
  uint64_t migrated = 0;  // rounds whose read exited on another CPU than it entered
  uint64_t stale = 0;     // of those, C's next offset on X == A's read offset
  double stale_fraction = 0;
  double conditional_entropy_bits = 0;  // H(C's offset | A's read offset), Miller–Madow
};

// Pure.
MigrationScore ScoreMigration(const MigrationData& data, std::span<const uint32_t> offsets,
                              const kstack::OffsetGeometry& geometry);

}  // namespace kstacklab::live
