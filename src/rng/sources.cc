#include "kstacklab/rng/sources.h"

namespace kstacklab::rng {

std::span<const RngSourceInfo> RngSources() {
  static constexpr RngSourceInfo kSources[] = {
      {"prandom",
       "LFSR113 prandom_u32_state (lib/random32.c): 128-bit state, period ~2^113, not "
       "cryptographic"},
      {"chacha20",
       "ChaCha20 block function, RFC 8439 in the kernel layout: 512-bit state, "
       "cryptographic"},
      {"crng-u8", "get_random_u8() (drivers/char/random.c): batched CRNG, 96 per refill"},
      {"crng-u16", "get_random_u16(): batched CRNG, 48 per refill"},
      {"crng-u32", "get_random_u32(): batched CRNG, 24 per refill"},
      {"crng-u64", "get_random_u64(): batched CRNG, 12 per refill"},
      {"siphash",
       "SipHash-2-4 siphash_1u64/2u64/siphash() (lib/siphash.c), --hsiphash for "
       "SipHash-1-3; keyed PRF, stateless"},
  };
  return kSources;
}

}  // namespace kstacklab::rng
