// Poison strategies: ways to write the 8-byte poison to every word of [low, high)
// (__stackleak_poison() in kernel/kstack_erase.c, formerly kernel/stackleak.c, and the arch
// overrides it allows since commit 491a78663e03: s390's in arch/s390/include/asm/processor.h,
// commit 2a405f6bb3a5).
//
// Every strategy takes 8-byte aligned bounds. The wide ones store scalar words up to their
// alignment (32 bytes for AVX2, 16 for NEON, 64 for non-temporal stores), then full vectors,
// then scalar words for the tail, so they never write outside the range.
#include <cstring>
#include <string_view>

#include "kstacklab/erase/erase.h"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace kstacklab::erase {

// The kernel's generic __stackleak_poison(): one 8-byte store per iteration. The store is
// volatile so the compiler can neither vectorise the loop, unroll it into wider stores, nor
// turn it into a library call — as in the kernel, which builds without SIMD registers.
void PoisonGeneric(uintptr_t low, uintptr_t high, uint64_t poison) {
  while (low < high) {
    *AddressToPointer<volatile uint64_t>(low) = poison;
    low += sizeof(uint64_t);
  }
}

// memset64()-style: eight scalar 8-byte stores per iteration (one cache line), then the tail.
// Volatile keeps the stores scalar (no SLP vectorisation into SSE stores).
void PoisonUnrolled(uintptr_t low, uintptr_t high, uint64_t poison) {
  auto* p = AddressToPointer<volatile uint64_t>(low);
  auto* const end = AddressToPointer<volatile uint64_t>(high);
  while (end - p >= 8) {
    p[0] = poison;
    p[1] = poison;
    p[2] = poison;
    p[3] = poison;
    p[4] = poison;
    p[5] = poison;
    p[6] = poison;
    p[7] = poison;
    p += 8;
  }
  while (p < end) *p++ = poison;
}

#if defined(__x86_64__)

// `rep stosq`: the microcoded string store (fast-string / ERMS microcode picks the width).
void PoisonRepStos(uintptr_t low, uintptr_t high, uint64_t poison) {
  uint64_t count = (high - low) / sizeof(uint64_t);
  void* dest = AddressToPointer<void>(low);
  asm volatile("rep stosq" : "+D"(dest), "+c"(count) : "a"(poison) : "memory");
}

// AVX2: aligned 32-byte stores, four per iteration (128 bytes). Called only after SimdAvailable().
[[gnu::target("avx2")]] void PoisonSimd(uintptr_t low, uintptr_t high, uint64_t poison) {
  while (low < high && (low & 31) != 0) {
    *AddressToPointer<uint64_t>(low) = poison;
    low += sizeof(uint64_t);
  }
  const __m256i v = _mm256_set1_epi64x(static_cast<long long>(poison));
  while (high - low >= 128) {
    _mm256_store_si256(AddressToPointer<__m256i>(low), v);
    _mm256_store_si256(AddressToPointer<__m256i>(low + 32), v);
    _mm256_store_si256(AddressToPointer<__m256i>(low + 64), v);
    _mm256_store_si256(AddressToPointer<__m256i>(low + 96), v);
    low += 128;
  }
  while (high - low >= 32) {
    _mm256_store_si256(AddressToPointer<__m256i>(low), v);
    low += 32;
  }
  while (low < high) {
    *AddressToPointer<uint64_t>(low) = poison;
    low += sizeof(uint64_t);
  }
}

// Non-temporal (streaming) 16-byte SSE2 stores, a full 64-byte line per iteration, then an
// sfence so the stores are ordered before the erase returns. They bypass the cache: the next
// syscall then finds its stack lines cold, which this fill's own time does not show.
void PoisonNt(uintptr_t low, uintptr_t high, uint64_t poison) {
  while (low < high && (low & 63) != 0) {
    *AddressToPointer<uint64_t>(low) = poison;
    low += sizeof(uint64_t);
  }
  const __m128i v = _mm_set1_epi64x(static_cast<long long>(poison));
  while (high - low >= 64) {
    _mm_stream_si128(AddressToPointer<__m128i>(low), v);
    _mm_stream_si128(AddressToPointer<__m128i>(low + 16), v);
    _mm_stream_si128(AddressToPointer<__m128i>(low + 32), v);
    _mm_stream_si128(AddressToPointer<__m128i>(low + 48), v);
    low += 64;
  }
  _mm_sfence();
  while (low < high) {
    *AddressToPointer<uint64_t>(low) = poison;
    low += sizeof(uint64_t);
  }
}

#elif defined(__aarch64__)

// NEON: 16-byte stores, four per iteration (64 bytes). NEON is part of the arm64 base ISA.
void PoisonSimd(uintptr_t low, uintptr_t high, uint64_t poison) {
  while (low < high && (low & 15) != 0) {
    *AddressToPointer<uint64_t>(low) = poison;
    low += sizeof(uint64_t);
  }
  const uint64x2_t v = vdupq_n_u64(poison);
  while (high - low >= 64) {
    vst1q_u64(AddressToPointer<uint64_t>(low), v);
    vst1q_u64(AddressToPointer<uint64_t>(low + 16), v);
    vst1q_u64(AddressToPointer<uint64_t>(low + 32), v);
    vst1q_u64(AddressToPointer<uint64_t>(low + 48), v);
    low += 64;
  }
  while (high - low >= 16) {
    vst1q_u64(AddressToPointer<uint64_t>(low), v);
    low += 16;
  }
  while (low < high) {
    *AddressToPointer<uint64_t>(low) = poison;
    low += sizeof(uint64_t);
  }
}

#endif

bool SimdAvailable() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") != 0;
#elif defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

std::span<const Strategy> Strategies() { return kStrategies; }

const Strategy* FindStrategy(std::string_view name) {
  for (const Strategy& s : kStrategies) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

void MemsetReference(uintptr_t low, uintptr_t high) {
  std::memset(AddressToPointer<void>(low), 0x41, high - low);
  asm volatile("" : : "r"(low) : "memory");  // the bytes are used
}

}  // namespace kstacklab::erase
