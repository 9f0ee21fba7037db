// chacha20: the ChaCha20 block function (RFC 8439 §2.3) in the kernel's layout
// (include/crypto/chacha.h, lib/crypto/chacha-block-generic.c), bit-exact.
//
// State: 16 u32 words = 4 constants "expand 32-byte k", 8 key words, word 12 = 32-bit block
// counter, words 13..15 = 96-bit nonce (RFC convention; the kernel's 16-byte IV = counter then
// nonce). Cryptographic (a stream cipher); period 2^32 blocks per (key, nonce) with the 32-bit
// counter. Chacha20Block() increments ONLY word 12, with no carry into word 13, as the kernel
// does; random.c carries into word 13 itself (see crng.h).
//
// Thread safety: plain data, no shared state.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kstacklab::rng {

inline constexpr size_t kChachaKeySize = 32;
inline constexpr size_t kChachaBlockSize = 64;
inline constexpr size_t kChachaStateWords = 16;
inline constexpr size_t kChachaIvSize = 16;     // counter (4 bytes LE) + nonce (12 bytes)
inline constexpr size_t kChachaNonceSize = 12;  // RFC 8439 nonce
inline constexpr uint32_t kChachaConst[4] = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u};

struct ChachaState {
  uint32_t x[kChachaStateWords];
};

constexpr uint32_t Rotl32(uint32_t v, int n) { return (v << n) | (v >> (32 - n)); }

// RFC 8439 §2.1 quarter round on four words.
constexpr void ChachaQuarterRound(uint32_t& a, uint32_t& b, uint32_t& c, uint32_t& d) {
  a += b;
  d ^= a;
  d = Rotl32(d, 16);
  c += d;
  b ^= c;
  b = Rotl32(b, 12);
  a += b;
  d ^= a;
  d = Rotl32(d, 8);
  c += d;
  b ^= c;
  b = Rotl32(b, 7);
}

// Little-endian u32 load/store (byte order independent of the host).
inline uint32_t LoadLe32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
inline void StoreLe32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}

// chacha_init(state, key, iv): constants, key words (LE), and the 16 IV bytes as 4 LE words.
void ChachaInit(ChachaState& state, const uint8_t key[kChachaKeySize],
                const uint8_t iv[kChachaIvSize]);

// RFC 8439 form: key, 32-bit initial block counter, 12-byte nonce.
void ChachaInitRfc(ChachaState& state, const uint8_t key[kChachaKeySize], uint32_t counter,
                   const uint8_t nonce[kChachaNonceSize]);

// The 20-round permutation without feed-forward (rounds must be even: 20 or 12 in the kernel).
void ChachaPermute(uint32_t x[kChachaStateWords], int rounds);

// chacha20_block(state, out): out = serialise_le(permute(state) + state); then state word 12
// += 1 (wrapping, no carry). No allocation; 64 bytes written.
void Chacha20Block(ChachaState& state, uint8_t out[kChachaBlockSize]);

}  // namespace kstacklab::rng
