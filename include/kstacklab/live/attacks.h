// The live attacks (docs/live.md): the timer attack on the counter design (attack timer --live)
// and the forced-migration attack (attack migration --live). Each collects its own records
// through the probe (kstacklab/live/probe.h) and scores them with a pure function.
// Library kstacklab_live.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/kstack/apply.h"
#include "kstacklab/live/records.h"

namespace kstacklab::live {

// ---- Timer attack on the counter design (attack timer --live) -------------------------------
//
// The kernel mixes rdtsc() into the offset state at every return to user mode:
// state = ror32(state, 5) ^ tsc. An unprivileged attacker reads the TSC right after each of its
// own syscalls returns (tsc_after) and predicts the next offset. Ground truth: the probe's
// derived offsets and, where the kernel has it, task_struct.kstack_offset.

struct TimerAttackData {
  std::vector<LiveRecord> records;  // one per syscall, in order
  std::vector<uint64_t> tsc_after;  // the attacker's TSC right after syscall i returned
};

// Issues `calls` getpid from the calling thread (pinned to `cpu` when >= 0), reading the TSC
// (lfence; rdtsc) right after each returns, with the probe attached.
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

// ---- Migration attack (attack migration --live) -----------------------------------------------
//
// Thread A, pinned to CPU X, blocks in read(2) on a pipe; the main thread moves A's affinity to
// CPU Y and then wakes it, so A's read enters on X and exits on Y. A third thread C, pinned to X,
// then makes the next syscall on X (getpid). On a per-CPU counter design X's state was not
// updated by A's exit, so C's offset would repeat the offset A's read had ("stale"); on a per-task
// design it would not. Ground truth: every syscall of the process from the probe.

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
