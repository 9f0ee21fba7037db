// Live ground truth from the running kernel (docs/live.md): one record per syscall of this
// process, as the BPF probe writes it (kstacklab/live/probe.h), and its CSV form for the recorded
// fixtures (tests/data/live/) and `--save-records`. Library kstacklab_live.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/rng/prandom.h"

namespace kstacklab::live {

// One syscall of the sampled process, as the BPF program wrote it (src/live/kstack_probe.bpf.c,
// struct live_record: same layout).
struct LiveRecord {
  uint64_t local_addr = 0;  // address of a local of the BPF program, on the task stack
  uint64_t stack_base = 0;  // task_struct.stack: lowest address of that task stack
  uint64_t ktime_ns = 0;    // bpf_ktime_get_ns() (CLOCK_MONOTONIC)
  uint32_t cpu = 0;         // CPU the syscall exited on
  uint32_t tid = 0;         // thread id
  int32_t nr = 0;           // syscall number
  uint32_t task_state = 0;  // task_struct.kstack_offset (per-task state kernels), see flags
  uint32_t flags = 0;       // kHasTaskState | kHasPrngState
  uint32_t pad = 0;
  // This CPU's kstack_rnd_state (v7.1+ per-CPU LFSR113) at sys_exit, see flags.
  rng::PrandomState prng_state;
};
static_assert(sizeof(LiveRecord) == 64, "must match struct live_record in kstack_probe.bpf.c");
static_assert(sizeof(rng::PrandomState) == 16, "four u32 words, as struct rnd_state");

// LiveRecord::flags: task_state holds task_struct.kstack_offset (the kernel has that field).
inline constexpr uint32_t kHasTaskState = 1;
// LiveRecord::flags: prng_state holds the per-CPU kstack_rnd_state of the record's CPU.
inline constexpr uint32_t kHasPrngState = 2;

// ---- Fixtures ---------------------------------------------------------------------------------

// CSV with header
// "local_addr,stack_base,ktime_ns,cpu,tid,nr,task_state,flags,prng_s1,prng_s2,prng_s3,prng_s4"
// (hex addresses and states with 0x). Used for the recorded fixtures in tests/data/live/ and
// `--save-records`. RecordsFromCsv also reads the 8-column form written before the prng columns
// (header "local_addr,...,task_state,flags"; records without kHasPrngState): a line has 8 or 12
// fields, and an 8-field line that sets kHasPrngState is refused (its state is not in the file).
std::string RecordsToCsv(std::span<const LiveRecord> records);
Expected<std::vector<LiveRecord>> RecordsFromCsv(std::string_view text);

}  // namespace kstacklab::live
