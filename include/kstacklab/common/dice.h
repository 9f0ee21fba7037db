// The simulations' dice: SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014; Vigna's splitmix64.c). Not a model of any kernel source: it only
// makes every random choice of an experiment (keys, schedules, gaps, shuffles) a function of a
// seed. Deterministic on every platform (no std:: distributions). Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kstacklab {

class Dice {
 public:
  explicit Dice(uint64_t seed) : x_(seed) {}
  // The next SplitMix64 output (seed 0: 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, ...).
  uint64_t Next() {
    uint64_t z = (x_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (n >= 1; the modulo bias is below n / 2^64, negligible for the n used).
  uint64_t Below(uint64_t n) { return Next() % n; }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  void Fill(uint8_t* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(Next());
  }

 private:
  uint64_t x_;
};

}  // namespace kstacklab
