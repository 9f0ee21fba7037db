#include "kstacklab/rng/prandom.h"

#include "kstacklab/rng/chacha20.h"
#include "kstacklab/rng/getrandom.h"

namespace kstacklab::rng {

uint32_t PrandomU32StateCall(PrandomState& s) { return PrandomU32State(s); }

void PrandomWarmup(PrandomState& s) {
  for (int i = 0; i < 10; ++i) PrandomU32State(s);
}

void PrandomSeedSelftest(PrandomState& s, uint32_t seed) {
  // LCG(x) = x * 69069, chained through the words (prandom_state_selftest_seed).
  s.s1 = PrandomSeedMin(seed * 69069u, 2);
  s.s2 = PrandomSeedMin(s.s1 * 69069u, 8);
  s.s3 = PrandomSeedMin(s.s2 * 69069u, 16);
  s.s4 = PrandomSeedMin(s.s3 * 69069u, 128);
  PrandomWarmup(s);
}

void PrandomSeedFromWords(PrandomState& s, const uint32_t seeds[4]) {
  s.s1 = PrandomSeedMin(seeds[0], 2);
  s.s2 = PrandomSeedMin(seeds[1], 8);
  s.s3 = PrandomSeedMin(seeds[2], 16);
  s.s4 = PrandomSeedMin(seeds[3], 128);
  PrandomWarmup(s);
}

Status PrandomSeedFullState(std::span<PrandomState> per_cpu) {
  for (PrandomState& s : per_cpu) {
    uint8_t bytes[16];
    KSTACKLAB_RETURN_IF_ERROR(FillFromGetrandom(bytes, sizeof bytes));
    // The kernel copies the bytes into u32 seeds[4] (host order; little-endian here).
    const uint32_t seeds[4] = {LoadLe32(bytes), LoadLe32(bytes + 4), LoadLe32(bytes + 8),
                               LoadLe32(bytes + 12)};
    PrandomSeedFromWords(s, seeds);
    SecureZero(bytes, sizeof bytes);
  }
  return OkStatus();
}

void PrandomBytesState(PrandomState& s, uint8_t* buf, size_t n) {
  for (; n >= 4; n -= 4, buf += 4) StoreLe32(buf, PrandomU32State(s));
  if (n > 0) {
    uint32_t rem = PrandomU32State(s);
    for (; n > 0; --n, rem >>= 8) *buf++ = static_cast<uint8_t>(rem);
  }
}

}  // namespace kstacklab::rng
