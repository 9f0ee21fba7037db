#include "kstacklab/rng/chacha20.h"

namespace kstacklab::rng {

void ChachaInit(ChachaState& state, const uint8_t key[kChachaKeySize],
                const uint8_t iv[kChachaIvSize]) {
  for (int i = 0; i < 4; ++i) state.x[i] = kChachaConst[i];
  for (int i = 0; i < 8; ++i) state.x[4 + i] = LoadLe32(key + static_cast<ptrdiff_t>(4 * i));
  for (int i = 0; i < 4; ++i) state.x[12 + i] = LoadLe32(iv + static_cast<ptrdiff_t>(4 * i));
}

void ChachaInitRfc(ChachaState& state, const uint8_t key[kChachaKeySize], uint32_t counter,
                   const uint8_t nonce[kChachaNonceSize]) {
  uint8_t iv[kChachaIvSize];
  StoreLe32(iv, counter);
  for (size_t i = 0; i < kChachaNonceSize; ++i) iv[4 + i] = nonce[i];
  ChachaInit(state, key, iv);
}

namespace {

// One double round: 4 column quarter rounds, then 4 diagonal ones (RFC 8439 §2.3).
[[gnu::always_inline]] inline void DoubleRound(uint32_t x[16]) {
  ChachaQuarterRound(x[0], x[4], x[8], x[12]);
  ChachaQuarterRound(x[1], x[5], x[9], x[13]);
  ChachaQuarterRound(x[2], x[6], x[10], x[14]);
  ChachaQuarterRound(x[3], x[7], x[11], x[15]);
  ChachaQuarterRound(x[0], x[5], x[10], x[15]);
  ChachaQuarterRound(x[1], x[6], x[11], x[12]);
  ChachaQuarterRound(x[2], x[7], x[8], x[13]);
  ChachaQuarterRound(x[3], x[4], x[9], x[14]);
}

}  // namespace

void ChachaPermute(uint32_t x[kChachaStateWords], int rounds) {
  for (int i = 0; i < rounds; i += 2) DoubleRound(x);
}

void Chacha20Block(ChachaState& state, uint8_t out[kChachaBlockSize]) {
  // Work on 16 locals so the compiler keeps them in registers across the 10 double rounds.
  uint32_t x[16];
  for (int i = 0; i < 16; ++i) x[i] = state.x[i];
  for (int i = 0; i < 10; ++i) DoubleRound(x);
  for (int i = 0; i < 16; ++i) StoreLe32(out + static_cast<ptrdiff_t>(4 * i), x[i] + state.x[i]);
  state.x[12] += 1;  // 32-bit block counter only, as the kernel's chacha_block_generic()
}

}  // namespace kstacklab::rng
