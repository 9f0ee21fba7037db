// counter: the cycle/timer counter as a "random" source, as the pre-2026 kstack offset code
// used it (x86 rdtsc(), s390 TOD clock, powerpc mftb(), loongarch drdtime()).
//
// Reads the counter with timing::ReadCounter() (unfenced, like the kernel's rdtsc(): TSC on
// x86-64, cntvct_el0 on aarch64, CLOCK_MONOTONIC_RAW ns elsewhere). NOT random and NOT
// cryptographic: its low bits are only as unpredictable as the caller's timing.
//
// CounterSource optionally quantises the counter to a slower resolution, as a slower hardware
// counter would tick (e.g. arm64 generic timers at 24 MHz, or 125 MHz... 1 GHz):
//   value = floor(ticks * resolution_hz / counter_hz), computed exactly in integer arithmetic.
// The counter frequency is a constructor argument (calibrated elsewhere, e.g. the timing module).
//
// Thread safety: Read() is const and reentrant.
#pragma once

#include <cstdint>

#include "kstacklab/timing/timing.h"

namespace kstacklab::rng {

__extension__ using Uint128 = unsigned __int128;  // GCC/Clang extension on 64-bit targets

// Counter source with optional quantisation.
class CounterSource {
 public:
  // counter_hz: frequency of timing::ReadCounter() ticks (> 0; 1e9 on the clock_gettime fallback).
  // resolution_hz: 0 (or == counter_hz) = no quantisation; else the simulated counter's
  // frequency, which must be <= counter_hz (a derived counter cannot be faster); violating either
  // precondition is a bug (KSTACKLAB_CHECK).
  explicit CounterSource(uint64_t counter_hz, uint64_t resolution_hz = 0);

  // floor(ticks * resolution_hz / counter_hz) for any 64-bit ticks; ticks when not quantising.
  // Fixed-point multiply + one exact correction step: no division on the hot path.
  [[gnu::always_inline]] uint64_t Quantise(uint64_t ticks) const {
    if (!quantise_) return ticks;
    using U128 = Uint128;
    uint64_t q = static_cast<uint64_t>((U128{ticks} * mult_) >> 64);
    // q is floor(true value) or one less: bump when (q+1)*counter_hz <= ticks*resolution_hz.
    const U128 lhs = U128{q + 1} * counter_hz_;
    const U128 rhs = U128{ticks} * resolution_hz_;
    return lhs <= rhs ? q + 1 : q;
  }

  // The (quantised) counter value now.
  [[gnu::always_inline]] uint64_t Read() const { return Quantise(timing::ReadCounter()); }

  uint64_t counter_hz() const { return counter_hz_; }
  uint64_t resolution_hz() const { return resolution_hz_; }

 private:
  uint64_t counter_hz_;
  uint64_t resolution_hz_;
  bool quantise_ = false;
  uint64_t mult_ = 0;  // floor(2^64 * resolution_hz / counter_hz), resolution_hz < counter_hz
};

}  // namespace kstacklab::rng
