// crng: the kernel's CRNG and batched get_random_u8/u16/u32/u64 (drivers/char/random.c, v6.x),
// bit-exact for a given base key, modelled per CPU.
//
// State: base_crng (32-byte ChaCha20 key + generation), per CPU a 32-byte key + generation
// (initially ULONG_MAX = stale) and four 96-byte batches (u8 x96, u16 x48, u32 x24, u64 x12)
// with a position (initially UINT_MAX) and a generation. Cryptographic (ChaCha20 with fast key
// erasure, forward secure: consumed batch slots are zeroed, keys overwritten on each use).
//
// "Per CPU" is an array of slots indexed by the cpu number the caller passes (e.g.
// sched_getcpu()). Two call variants:
//  * locked (GetRandomU*): every call takes the per-CPU batch lock, and crng_make_state() the
//    per-CPU crng lock, as local_lock_irqsave() does. Modelled as an uncontended per-CPU spin
//    lock (atomic test-and-set with acquire, clear with release). What user space cannot
//    reproduce: local_lock_irqsave() on a non-RT kernel MASKS LOCAL INTERRUPTS and pins the
//    task to its CPU for the duration; here the thread can be interrupted or migrated, and a
//    second thread that maps to the same cpu slot spins instead of being excluded by IRQ-off.
//  * raw (RawGetRandomU*): no per-CPU lock at all (the "raw_get_random_uX" idea for callers
//    that already run with preemption/IRQs disabled). The caller guarantees exclusive use of
//    its cpu slot; concurrent raw calls on one slot are a data race.
// Deriving a per-CPU key from base_crng takes the base spin lock in both variants (shared).
//
// Not modelled: the not-yet-ready path (the model is always crng_ready()), the time-based
// reseed inside crng_make_state() (call Reseed() to simulate one), the entropy pool / BLAKE2s.
// Values are little-endian as on x86-64/arm64. The non-refill path does not allocate.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "kstacklab/rng/chacha20.h"

namespace kstacklab::rng {

// Per-CPU counters for tests and benchmarks (read them when no call is in flight on that cpu;
// exact when each cpu slot is used by one thread at a time).
struct CrngCounters {
  uint64_t refills[4] = {0, 0, 0, 0};  // batch refills for u8, u16, u32, u64
  uint64_t chacha_blocks = 0;          // Chacha20Block() computations (any purpose)
  uint64_t cpu_key_derivations = 0;    // per-CPU key re-derived from base_crng (stale gen)
};

class Crng {
 public:
  static constexpr uint64_t kStaleGeneration = UINT64_MAX;  // ULONG_MAX on 64-bit
  static constexpr unsigned kStalePosition = UINT32_MAX;    // UINT_MAX
  static constexpr size_t kBatchBytes = 96;                 // CHACHA_BLOCK_SIZE * 3 / 2

  // A ready CRNG on `num_cpus` cpus (>= 1) with base_crng.key = base_key and the given base
  // generation (a ready kernel has reseeded at least once, hence 1; must not be ULONG_MAX).
  // Every per-CPU crng and batch starts stale, as after boot / CPU hotplug.
  Crng(int num_cpus, const uint8_t base_key[kChachaKeySize], uint64_t base_generation = 1);
  ~Crng();
  Crng(const Crng&) = delete;
  Crng& operator=(const Crng&) = delete;

  int num_cpus() const { return num_cpus_; }

  // get_random_uN() on `cpu` (0 <= cpu < num_cpus, else CHECK failure), locked variant.
  uint8_t GetRandomU8(int cpu);
  uint16_t GetRandomU16(int cpu);
  uint32_t GetRandomU32(int cpu);
  uint64_t GetRandomU64(int cpu);

  // The same without the per-CPU locks (see above).
  uint8_t RawGetRandomU8(int cpu);
  uint16_t RawGetRandomU16(int cpu);
  uint32_t RawGetRandomU32(int cpu);
  uint64_t RawGetRandomU64(int cpu);

  // _get_random_bytes() as run on `cpu` (per-CPU crng lock held inside crng_make_state()):
  // first min(32, len) bytes from fast key erasure, the rest from ChaCha20 blocks of the
  // returned state with the 64-bit counter carried from word 12 into word 13.
  void GetRandomBytes(int cpu, uint8_t* buf, size_t len);

  // Simulated crng_reseed(): base_crng.key = new_key, generation + 1 skipping ULONG_MAX, so
  // every per-CPU key and batch refreshes on its next use. Thread-safe.
  void Reseed(const uint8_t new_key[kChachaKeySize]);

  // random_prepare_cpu(): CPU hotplug marks the cpu's crng and all its batches stale.
  void PrepareCpu(int cpu);

  // Inspection for tests (not synchronised with concurrent calls on the same cpu).
  uint64_t base_generation() const { return base_generation_.load(std::memory_order_acquire); }
  void CopyBaseKey(uint8_t out[kChachaKeySize]) const;
  void CopyCpuKey(int cpu, uint8_t out[kChachaKeySize]) const;
  uint64_t CpuGeneration(int cpu) const;
  // width_bytes in {1, 2, 4, 8}: the raw 96 bytes of that batch, its position and generation.
  std::span<const uint8_t, kBatchBytes> BatchBytes(int cpu, int width_bytes) const;
  unsigned BatchPosition(int cpu, int width_bytes) const;
  uint64_t BatchGeneration(int cpu, int width_bytes) const;
  CrngCounters Counters(int cpu) const;
  CrngCounters TotalCounters() const;

  struct PerCpu;  // defined in crng.cc

 private:
  template <class T, bool kLocked>
  T Get(int cpu);
  void MakeState(PerCpu& pc, ChachaState& state, uint8_t* out, size_t out_len);

  int num_cpus_;
  std::unique_ptr<PerCpu[]> cpus_;
  alignas(64) uint8_t base_key_[kChachaKeySize];
  std::atomic<uint64_t> base_generation_;
  mutable std::atomic_flag base_lock_;
};

}  // namespace kstacklab::rng
