#include "kstacklab/rng/crng.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "kstacklab/common/error.h"
#include "kstacklab/rng/getrandom.h"

namespace kstacklab::rng {

namespace {

// local_lock_irqsave() / spin_lock() stand-in: test-and-set with acquire, clear with release.
// Uncontended in the intended use (one thread per cpu slot), so the loop normally never spins.
inline void Lock(std::atomic_flag& flag) {
  while (flag.test_and_set(std::memory_order_acquire)) {
    while (flag.test(std::memory_order_relaxed)) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
    }
  }
}
inline void Unlock(std::atomic_flag& flag) { flag.clear(std::memory_order_release); }

// Little-endian load of a batch slot (the kernel reads it natively; x86-64/arm64 are LE).
template <class T>
inline T LoadLe(const uint8_t* p) {
  T v;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&v, p, sizeof v);
  } else {
    v = 0;
    for (size_t i = 0; i < sizeof v; ++i) v |= static_cast<T>(T{p[i]} << (8 * i));
  }
  return v;
}

template <class T>
constexpr int WidthIndex() {
  return sizeof(T) == 1 ? 0 : sizeof(T) == 2 ? 1 : sizeof(T) == 4 ? 2 : 3;
}

// crng_fast_key_erasure(): one block with the key, zero counter and nonce; the first 32 bytes
// overwrite the key, the next `len` (<= 32) are output. `state` keeps the OLD key and counter 1.
void FastKeyErasure(uint8_t key[kChachaKeySize], ChachaState& state, uint8_t* out, size_t len,
                    CrngCounters& counters) {
  KSTACKLAB_CHECK(len <= 32);
  uint8_t first_block[kChachaBlockSize];
  for (int i = 0; i < 4; ++i) state.x[i] = kChachaConst[i];
  for (int i = 0; i < 8; ++i) state.x[4 + i] = LoadLe32(key + static_cast<ptrdiff_t>(4 * i));
  for (int i = 12; i < 16; ++i) state.x[i] = 0;
  Chacha20Block(state, first_block);
  ++counters.chacha_blocks;
  std::memcpy(key, first_block, kChachaKeySize);
  std::memcpy(out, first_block + kChachaKeySize, len);
  SecureZero(first_block, sizeof first_block);
}

}  // namespace

// One batch_<type>: 96 bytes of entropy read as `type` slots, lock, generation, position.
template <class T>
struct Batch {
  static constexpr unsigned kCount = Crng::kBatchBytes / sizeof(T);
  alignas(8) uint8_t entropy[Crng::kBatchBytes] = {};
  std::atomic_flag lock;
  uint64_t generation = 0;  // static initialisation in the kernel leaves it 0
  unsigned position = Crng::kStalePosition;
};

struct alignas(64) Crng::PerCpu {
  uint8_t key[kChachaKeySize] = {};
  uint64_t generation = kStaleGeneration;
  std::atomic_flag crng_lock;
  Batch<uint8_t> b8;
  Batch<uint16_t> b16;
  Batch<uint32_t> b32;
  Batch<uint64_t> b64;
  CrngCounters counters;

  template <class T>
  Batch<T>& BatchFor() {
    if constexpr (sizeof(T) == 1)
      return b8;
    else if constexpr (sizeof(T) == 2)
      return b16;
    else if constexpr (sizeof(T) == 4)
      return b32;
    else
      return b64;
  }
};

Crng::Crng(int num_cpus, const uint8_t base_key[kChachaKeySize], uint64_t base_generation)
    : num_cpus_(num_cpus), base_generation_(base_generation) {
  KSTACKLAB_CHECK(num_cpus >= 1);
  KSTACKLAB_CHECK(base_generation != kStaleGeneration);
  cpus_ = std::make_unique<PerCpu[]>(static_cast<size_t>(num_cpus));
  std::memcpy(base_key_, base_key, kChachaKeySize);
}

Crng::~Crng() {
  SecureZero(base_key_, sizeof base_key_);
  for (int i = 0; i < num_cpus_; ++i) SecureZero(cpus_[i].key, sizeof cpus_[i].key);
}

// crng_make_state() (ready path): refresh the per-CPU key from base_crng if its generation is
// stale, then fast key erasure on the per-CPU key.
template <bool kLocked>
static void MakeStateImpl(Crng::PerCpu& pc, uint8_t* base_key, std::atomic<uint64_t>& base_gen,
                          std::atomic_flag& base_lock, ChachaState& state, uint8_t* out,
                          size_t out_len) {
  if constexpr (kLocked) Lock(pc.crng_lock);
  if (pc.generation != base_gen.load(std::memory_order_relaxed)) [[unlikely]] {
    Lock(base_lock);
    FastKeyErasure(base_key, state, pc.key, sizeof pc.key, pc.counters);
    pc.generation = base_gen.load(std::memory_order_relaxed);
    Unlock(base_lock);
    ++pc.counters.cpu_key_derivations;
  }
  FastKeyErasure(pc.key, state, out, out_len, pc.counters);
  if constexpr (kLocked) Unlock(pc.crng_lock);
}

// _get_random_bytes(): 32 bytes from crng_make_state(), then whole blocks of the detached
// state with the 64-bit counter carry into word 13, then a partial block via a temporary.
template <bool kLocked>
[[gnu::noinline]] static void GetRandomBytesOn(Crng::PerCpu& pc, uint8_t* base_key,
                                               std::atomic<uint64_t>& base_gen,
                                               std::atomic_flag& base_lock, uint8_t* buf,
                                               size_t len) {
  if (len == 0) return;
  ChachaState state;
  const size_t first = std::min<size_t>(len, 32);
  MakeStateImpl<kLocked>(pc, base_key, base_gen, base_lock, state, buf, first);
  len -= first;
  buf += first;
  while (len > 0) {
    if (len < kChachaBlockSize) {
      uint8_t tmp[kChachaBlockSize];
      Chacha20Block(state, tmp);
      ++pc.counters.chacha_blocks;
      std::memcpy(buf, tmp, len);
      SecureZero(tmp, sizeof tmp);
      break;
    }
    Chacha20Block(state, buf);
    ++pc.counters.chacha_blocks;
    if (state.x[12] == 0) ++state.x[13];
    len -= kChachaBlockSize;
    buf += kChachaBlockSize;
  }
  SecureZero(&state, sizeof state);
}

// get_random_<type>() (ready path).
template <class T, bool kLocked>
T Crng::Get(int cpu) {
  KSTACKLAB_CHECK(cpu >= 0 && cpu < num_cpus_);
  PerCpu& pc = cpus_[cpu];
  Batch<T>& batch = pc.BatchFor<T>();
  if constexpr (kLocked) Lock(batch.lock);
  const uint64_t next_gen = base_generation_.load(std::memory_order_relaxed);
  if (batch.position >= Batch<T>::kCount || next_gen != batch.generation) [[unlikely]] {
    GetRandomBytesOn<kLocked>(pc, base_key_, base_generation_, base_lock_, batch.entropy,
                              sizeof batch.entropy);
    batch.position = 0;
    batch.generation = next_gen;
    ++pc.counters.refills[WidthIndex<T>()];
  }
  uint8_t* slot = batch.entropy + batch.position * sizeof(T);
  const T ret = LoadLe<T>(slot);
  // Forward secrecy: a consumed value is erased (a plain memset, as in the kernel: the batch
  // outlives the call, so the store is not dead; SecureZero's libc call would cost every call).
  std::memset(slot, 0, sizeof(T));
  ++batch.position;
  if constexpr (kLocked) Unlock(batch.lock);
  return ret;
}

uint8_t Crng::GetRandomU8(int cpu) { return Get<uint8_t, true>(cpu); }
uint16_t Crng::GetRandomU16(int cpu) { return Get<uint16_t, true>(cpu); }
uint32_t Crng::GetRandomU32(int cpu) { return Get<uint32_t, true>(cpu); }
uint64_t Crng::GetRandomU64(int cpu) { return Get<uint64_t, true>(cpu); }
uint8_t Crng::RawGetRandomU8(int cpu) { return Get<uint8_t, false>(cpu); }
uint16_t Crng::RawGetRandomU16(int cpu) { return Get<uint16_t, false>(cpu); }
uint32_t Crng::RawGetRandomU32(int cpu) { return Get<uint32_t, false>(cpu); }
uint64_t Crng::RawGetRandomU64(int cpu) { return Get<uint64_t, false>(cpu); }

void Crng::GetRandomBytes(int cpu, uint8_t* buf, size_t len) {
  KSTACKLAB_CHECK(cpu >= 0 && cpu < num_cpus_);
  GetRandomBytesOn<true>(cpus_[cpu], base_key_, base_generation_, base_lock_, buf, len);
}

void Crng::Reseed(const uint8_t new_key[kChachaKeySize]) {
  Lock(base_lock_);
  std::memcpy(base_key_, new_key, kChachaKeySize);
  uint64_t next_gen = base_generation_.load(std::memory_order_relaxed) + 1;
  if (next_gen == kStaleGeneration) ++next_gen;  // ULONG_MAX means "stale": never use it
  base_generation_.store(next_gen, std::memory_order_release);
  Unlock(base_lock_);
}

void Crng::PrepareCpu(int cpu) {
  KSTACKLAB_CHECK(cpu >= 0 && cpu < num_cpus_);
  PerCpu& pc = cpus_[cpu];
  pc.generation = kStaleGeneration;
  pc.b8.position = pc.b16.position = pc.b32.position = pc.b64.position = kStalePosition;
}

void Crng::CopyBaseKey(uint8_t out[kChachaKeySize]) const {
  Lock(base_lock_);
  std::memcpy(out, base_key_, kChachaKeySize);
  Unlock(base_lock_);
}

void Crng::CopyCpuKey(int cpu, uint8_t out[kChachaKeySize]) const {
  KSTACKLAB_CHECK(cpu >= 0 && cpu < num_cpus_);
  std::memcpy(out, cpus_[cpu].key, kChachaKeySize);
}

uint64_t Crng::CpuGeneration(int cpu) const {
  KSTACKLAB_CHECK(cpu >= 0 && cpu < num_cpus_);
  return cpus_[cpu].generation;
}

namespace {
template <class F>
auto WithBatch(Crng::PerCpu& pc, int width_bytes, F&& f) {
  switch (width_bytes) {
    case 1:
      return f(pc.b8.entropy, pc.b8.position, pc.b8.generation);
    case 2:
      return f(pc.b16.entropy, pc.b16.position, pc.b16.generation);
    case 4:
      return f(pc.b32.entropy, pc.b32.position, pc.b32.generation);
    case 8:
      return f(pc.b64.entropy, pc.b64.position, pc.b64.generation);
    default:
      KSTACKLAB_CHECK(!"width_bytes must be 1, 2, 4 or 8");
      std::abort();
  }
}
}  // namespace

std::span<const uint8_t, Crng::kBatchBytes> Crng::BatchBytes(int cpu, int width_bytes) const {
  KSTACKLAB_CHECK(cpu >= 0 && cpu < num_cpus_);
  return WithBatch(cpus_[cpu], width_bytes, [](const uint8_t* e, unsigned, uint64_t) {
    return std::span<const uint8_t, kBatchBytes>(e, kBatchBytes);
  });
}

unsigned Crng::BatchPosition(int cpu, int width_bytes) const {
  KSTACKLAB_CHECK(cpu >= 0 && cpu < num_cpus_);
  return WithBatch(cpus_[cpu], width_bytes, [](const uint8_t*, unsigned p, uint64_t) { return p; });
}

uint64_t Crng::BatchGeneration(int cpu, int width_bytes) const {
  KSTACKLAB_CHECK(cpu >= 0 && cpu < num_cpus_);
  return WithBatch(cpus_[cpu], width_bytes, [](const uint8_t*, unsigned, uint64_t g) { return g; });
}

CrngCounters Crng::Counters(int cpu) const {
  KSTACKLAB_CHECK(cpu >= 0 && cpu < num_cpus_);
  return cpus_[cpu].counters;
}

CrngCounters Crng::TotalCounters() const {
  CrngCounters total;
  for (int i = 0; i < num_cpus_; ++i) {
    const CrngCounters& c = cpus_[i].counters;
    for (int w = 0; w < 4; ++w) total.refills[w] += c.refills[w];
    total.chacha_blocks += c.chacha_blocks;
    total.cpu_key_derivations += c.cpu_key_derivations;
  }
  return total;
}

}  // namespace kstacklab::rng
