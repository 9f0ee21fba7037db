// siphash: SipHash-2-4 and hsiphash as in the kernel (lib/siphash.c, include/linux/siphash.h),
// bit-exact, little-endian message words.
//
//  * Siphash*(): SipHash-2-4, 128-bit key, 64-bit result. A cryptographic PRF (keyed); no state.
//  * Hsiphash*(): the kernel's hsiphash on 64-bit builds = SipHash-1-3 with the same constants,
//    result truncated to the low 32 bits. "Insecure PRF, hashtables only".
//  * HalfSiphash*(): HalfSipHash-1-3, the kernel's hsiphash on 32-bit builds (64-bit key, u32).
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kstacklab::rng {

// siphash_key_t / hsiphash_key_t on 64-bit: two u64, k[0] = bytes 0..7 LE, k[1] = bytes 8..15.
struct SiphashKey {
  uint64_t k[2];
};
// hsiphash_key_t on 32-bit: two u32.
struct HalfSiphashKey {
  uint32_t k[2];
};

// The 16 key bytes in memory order -> key words (so bytes 00..0f give k0 = 0x0706050403020100).
SiphashKey SiphashKeyFromBytes(const uint8_t bytes[16]);
HalfSiphashKey HalfSiphashKeyFromBytes(const uint8_t bytes[8]);

namespace siphash_internal {

constexpr uint64_t Rotl64(uint64_t v, int n) { return (v << n) | (v >> (64 - n)); }

struct State {
  uint64_t v0, v1, v2, v3;
};

[[gnu::always_inline]] inline void Round(State& s) {
  s.v0 += s.v1;
  s.v1 = Rotl64(s.v1, 13);
  s.v1 ^= s.v0;
  s.v0 = Rotl64(s.v0, 32);
  s.v2 += s.v3;
  s.v3 = Rotl64(s.v3, 16);
  s.v3 ^= s.v2;
  s.v0 += s.v3;
  s.v3 = Rotl64(s.v3, 21);
  s.v3 ^= s.v0;
  s.v2 += s.v1;
  s.v1 = Rotl64(s.v1, 17);
  s.v1 ^= s.v2;
  s.v2 = Rotl64(s.v2, 32);
}

[[gnu::always_inline]] inline State Init(const SiphashKey& key) {
  return State{0x736f6d6570736575ull ^ key.k[0], 0x646f72616e646f6dull ^ key.k[1],
               0x6c7967656e657261ull ^ key.k[0], 0x7465646279746573ull ^ key.k[1]};
}

template <int kC>
[[gnu::always_inline]] inline void Absorb(State& s, uint64_t m) {
  s.v3 ^= m;
  for (int i = 0; i < kC; ++i) Round(s);
  s.v0 ^= m;
}

template <int kD>
[[gnu::always_inline]] inline uint64_t Finish(State& s) {
  s.v2 ^= 0xff;
  for (int i = 0; i < kD; ++i) Round(s);
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

}  // namespace siphash_internal

// siphash_1u64(first, key): SipHash-2-4 of the 8-byte LE encoding of `first`. Hot path: inline.
[[gnu::always_inline]] inline uint64_t Siphash1u64(uint64_t first, const SiphashKey& key) {
  using namespace siphash_internal;
  State s = Init(key);
  Absorb<2>(s, first);
  Absorb<2>(s, uint64_t{8} << 56);
  return Finish<4>(s);
}

// siphash_2u64(first, second, key): SipHash-2-4 of LE(first) || LE(second).
[[gnu::always_inline]] inline uint64_t Siphash2u64(uint64_t first, uint64_t second,
                                                   const SiphashKey& key) {
  using namespace siphash_internal;
  State s = Init(key);
  Absorb<2>(s, first);
  Absorb<2>(s, second);
  Absorb<2>(s, uint64_t{16} << 56);
  return Finish<4>(s);
}

// siphash_3u64 / siphash_4u64 / siphash_1u32..4u32: same as Siphash() over the LE packing.
uint64_t Siphash3u64(uint64_t a, uint64_t b, uint64_t c, const SiphashKey& key);
uint64_t Siphash4u64(uint64_t a, uint64_t b, uint64_t c, uint64_t d, const SiphashKey& key);
uint64_t Siphash1u32(uint32_t a, const SiphashKey& key);
uint64_t Siphash2u32(uint32_t a, uint32_t b, const SiphashKey& key);
uint64_t Siphash3u32(uint32_t a, uint32_t b, uint32_t c, const SiphashKey& key);
uint64_t Siphash4u32(uint32_t a, uint32_t b, uint32_t c, uint32_t d, const SiphashKey& key);

// siphash(data, len, key): generic SipHash-2-4 over `len` bytes.
uint64_t Siphash(const void* data, size_t len, const SiphashKey& key);

// hsiphash(data, len, key) on 64-bit kernels: SipHash-1-3, low 32 bits.
uint32_t Hsiphash(const void* data, size_t len, const SiphashKey& key);
uint32_t Hsiphash1u32(uint32_t a, const SiphashKey& key);
uint32_t Hsiphash2u32(uint32_t a, uint32_t b, const SiphashKey& key);
uint32_t Hsiphash3u32(uint32_t a, uint32_t b, uint32_t c, const SiphashKey& key);
uint32_t Hsiphash4u32(uint32_t a, uint32_t b, uint32_t c, uint32_t d, const SiphashKey& key);

// hsiphash on 32-bit kernels: HalfSipHash-1-3 (32-bit words), result v1 ^ v3.
uint32_t HalfSiphash(const void* data, size_t len, const HalfSiphashKey& key);

}  // namespace kstacklab::rng
