// Private helpers of the attacks (analysis/attack_*.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kstacklab/common/dice.h"
#include "kstacklab/rng/chacha20.h"
#include "kstacklab/rng/crng.h"

namespace kstacklab::analysis {

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
