// prandom: the kernel's LFSR113 generator (lib/random32.c, include/linux/prandom.h), bit-exact.
//
// State: four u32 words (113 effective bits), period ~2^113, NOT cryptographic (linear: a few
// hundred output bits reveal the state). Used by the kernel for the per-CPU kstack offset PRNG
// (randomize_kstack.h, 2026 design) and by test/statistical code.
//
// Thread safety: a PrandomState is plain data; one state per thread/CPU, no internal locking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kstacklab/common/error.h"

namespace kstacklab::rng {

// struct rnd_state: words s1..s4 in kernel order.
struct PrandomState {
  uint32_t s1 = 0, s2 = 0, s3 = 0, s4 = 0;
  friend bool operator==(const PrandomState&, const PrandomState&) = default;
};

// One LFSR113 step = prandom_u32_state(): update all four Tausworthe components, return the XOR
// of the new words. Hot path: inline, no branches, no memory beyond the state.
[[gnu::always_inline]] inline uint32_t PrandomU32State(PrandomState& s) {
  s.s1 = ((s.s1 & 0xFFFFFFFEu) << 18) ^ (((s.s1 << 6) ^ s.s1) >> 13);
  s.s2 = ((s.s2 & 0xFFFFFFF8u) << 2) ^ (((s.s2 << 2) ^ s.s2) >> 27);
  s.s3 = ((s.s3 & 0xFFFFFFF0u) << 7) ^ (((s.s3 << 13) ^ s.s3) >> 21);
  s.s4 = ((s.s4 & 0xFFFFFF80u) << 13) ^ (((s.s4 << 3) ^ s.s4) >> 12);
  return s.s1 ^ s.s2 ^ s.s3 ^ s.s4;
}

// prandom_u32_state() as the kernel calls it from the kstack entry since v7.1: an exported
// function of lib/random32.c, called out of line (the series' __always_inline patch was dropped
// in v5; 0-day's profile of a96ef5848cb0 shows prandom_u32_state as its own function under
// do_syscall_64). The same step as PrandomU32State, behind a real call: defined in prandom.cc,
// so callers in other libraries see only the declaration, as across the kernel's object files.
[[gnu::noinline]] uint32_t PrandomU32StateCall(PrandomState& s);

// __seed(x, m): x + m if x < m, else x (keeps each component out of its degenerate range).
constexpr uint32_t PrandomSeedMin(uint32_t x, uint32_t m) { return x < m ? x + m : x; }

// prandom_seed_state(state, seed): all four words from one 32-bit fold of the seed, minima
// applied, NO warm-up (v6.x form, without the old PRANDOM_ADD_NOISE).
inline void PrandomSeedState(PrandomState& s, uint64_t seed) {
  const uint32_t i = static_cast<uint32_t>((seed >> 32) ^ (seed << 10) ^ seed);
  s.s1 = PrandomSeedMin(i, 2);
  s.s2 = PrandomSeedMin(i, 8);
  s.s3 = PrandomSeedMin(i, 16);
  s.s4 = PrandomSeedMin(i, 128);
}

// prandom_warmup(): 10 discarded steps.
void PrandomWarmup(PrandomState& s);

// The self-test seeding (prandom_state_selftest_seed + warm-up): LCG x*69069 chain through the
// four words with the minima, then 10 warm-up steps. Kernel test vectors use this.
void PrandomSeedSelftest(PrandomState& s, uint32_t seed);

// The per-CPU step of prandom_seed_full_state() given the 16 random bytes as four u32 words:
// minima (2, 8, 16, 128) then 10 warm-up steps.
void PrandomSeedFromWords(PrandomState& s, const uint32_t seeds[4]);

// prandom_seed_full_state(): every state in `per_cpu` gets 16 bytes from getrandom(2) (the
// kernel uses get_random_bytes()) and PrandomSeedFromWords(). RuntimeError if getrandom fails.
Status PrandomSeedFullState(std::span<PrandomState> per_cpu);

// prandom_bytes_state(): full 4-byte chunks take one output each, stored little-endian (the
// kernel stores in host order; x86-64/arm64 are little-endian); a 1..3 byte tail takes one more
// output, least-significant byte first.
void PrandomBytesState(PrandomState& s, uint8_t* buf, size_t n);

// next_pseudo_random32(): Numerical Recipes LCG, seed * 1664525 + 1013904223 (u32).
constexpr uint32_t NextPseudoRandom32(uint32_t seed) { return seed * 1664525u + 1013904223u; }

}  // namespace kstacklab::rng
