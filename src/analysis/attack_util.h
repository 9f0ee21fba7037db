// Private helpers of the attacks (analysis/attack_*.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kstacklab/rng/chacha20.h"
#include "kstacklab/rng/crng.h"

namespace kstacklab::analysis {

// The simulation's dice: SplitMix64 (Steele, Lea, Flood 2014). Not a model of any kernel source;
// it only makes every random choice of an experiment (keys, schedules, gaps) a function of the
// seed. Deterministic on every platform (no std:: distributions).
class Dice {
 public:
  explicit Dice(uint64_t seed) : x_(seed) {}
  uint64_t Next() {
    uint64_t z = (x_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (n >= 1; the modulo bias is below 2^-40 for the n used here).
  uint64_t Below(uint64_t n) { return Next() % n; }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  void Fill(uint8_t* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(Next());
  }

 private:
  uint64_t x_;
};

// The "uniform" reference source: the ChaCha20 block function (rng/) keyed from the dice,
// nonce 0, consumed as little-endian u32 words. Offsets from it are uniform and independent.
class UniformSource {
 public:
  explicit UniformSource(Dice& dice) {
    uint8_t key[rng::kChachaKeySize];
    dice.Fill(key, sizeof key);
    const uint8_t nonce[rng::kChachaNonceSize] = {};
    rng::ChachaInitRfc(state_, key, 0, nonce);
  }
  uint32_t Next() {
    if (pos_ == 16) {
      rng::Chacha20Block(state_, block_);
      pos_ = 0;
    }
    return rng::LoadLe32(block_ + 4 * pos_++);
  }

 private:
  rng::ChachaState state_{};
  uint8_t block_[rng::kChachaBlockSize] = {};
  size_t pos_ = 16;  // next u32 word of block_
};

}  // namespace kstacklab::analysis
