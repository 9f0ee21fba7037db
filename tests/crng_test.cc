// Tests of the CRNG model (drivers/char/random.c v6.x): batch sizes and refill cadence, slot
// erasure, generations, per-CPU key derivation by fast key erasure, and an independent
// recomputation of the outputs from libsodium's ChaCha20 (IETF layout: 32-bit counter in word
// 12, 96-bit nonce in words 13..15; the kernel's CRNG uses the all-zero nonce and counter 0
// for the key-erasure block, counter 1.. for the detached state).
#include "kstacklab/rng/crng.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace kstacklab::rng {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes SeqKey(uint8_t start) {
  Bytes k(32);
  for (int i = 0; i < 32; ++i) k[i] = static_cast<uint8_t>(start + i);
  return k;
}

// libsodium: `len` keystream bytes of ChaCha20-IETF(key, nonce 0) starting at block `counter`.
Bytes Keystream(const Bytes& key, uint32_t counter, size_t len) {
  EXPECT_GE(sodium_init(), 0);
  const uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES] = {};
  Bytes zeros(len, 0), out(len);
  crypto_stream_chacha20_ietf_xor_ic(out.data(), zeros.data(), len, nonce, counter, key.data());
  return out;
}

// Independent model of one batch refill, written against libsodium only. `cpu_key` is the
// per-CPU key in/out; returns the 96 batch bytes.
Bytes RefillFromCpuKey(Bytes& cpu_key) {
  const Bytes s = Keystream(cpu_key, 0, 128);  // erasure block (ctr 0) + detached block (ctr 1)
  cpu_key.assign(s.begin(), s.begin() + 32);
  return Bytes(s.begin() + 32, s.end());
}
// Per-CPU key derived from base_crng by fast key erasure; `base_key` in/out.
Bytes DeriveCpuKey(Bytes& base_key) {
  const Bytes s = Keystream(base_key, 0, 64);
  base_key.assign(s.begin(), s.begin() + 32);
  return Bytes(s.begin() + 32, s.end());
}

template <class T>
T Le(const uint8_t* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(T{p[i]} << (8 * i));
  return v;
}

TEST(Crng, StartsStaleEverywhere) {
  const Bytes key = SeqKey(0);
  Crng crng(2, key.data());
  EXPECT_EQ(crng.base_generation(), 1u);
  for (int cpu = 0; cpu < 2; ++cpu) {
    EXPECT_EQ(crng.CpuGeneration(cpu), Crng::kStaleGeneration);
    for (int w : {1, 2, 4, 8}) EXPECT_EQ(crng.BatchPosition(cpu, w), Crng::kStalePosition);
  }
  uint8_t base[32];
  crng.CopyBaseKey(base);
  EXPECT_EQ(Bytes(base, base + 32), key);
}

TEST(Crng, FirstU32OutputsMatchIndependentLibsodiumRecomputation) {
  const Bytes key = SeqKey(0);
  Crng crng(1, key.data());
  Bytes base = key;
  Bytes cpu_key = DeriveCpuKey(base);
  const Bytes batch1 = RefillFromCpuKey(cpu_key);
  const Bytes batch2 = RefillFromCpuKey(cpu_key);
  for (int i = 0; i < 24; ++i) {
    ASSERT_EQ(crng.GetRandomU32(0), Le<uint32_t>(batch1.data() + 4 * i)) << "call " << i;
  }
  for (int i = 0; i < 24; ++i) {
    ASSERT_EQ(crng.GetRandomU32(0), Le<uint32_t>(batch2.data() + 4 * i)) << "call " << 24 + i;
  }
  uint8_t got[32];
  crng.CopyBaseKey(got);
  EXPECT_EQ(Bytes(got, got + 32), base) << "base key overwritten once by fast key erasure";
  crng.CopyCpuKey(0, got);
  EXPECT_EQ(Bytes(got, got + 32), cpu_key) << "per-CPU key erased on every refill";
  EXPECT_EQ(crng.CpuGeneration(0), crng.base_generation());
}

TEST(Crng, EveryWidthMatchesLibsodiumAndIsLittleEndian) {
  const Bytes key = SeqKey(0x40);
  Crng crng(1, key.data());
  Bytes base = key;
  Bytes cpu_key = DeriveCpuKey(base);
  // Widths on one CPU share the per-CPU key: each first use refills its own batch in turn.
  const Bytes b8 = RefillFromCpuKey(cpu_key);
  const Bytes b16 = RefillFromCpuKey(cpu_key);
  const Bytes b64 = RefillFromCpuKey(cpu_key);
  EXPECT_EQ(crng.GetRandomU8(0), b8[0]);
  EXPECT_EQ(crng.GetRandomU16(0), Le<uint16_t>(b16.data()));
  EXPECT_EQ(crng.GetRandomU64(0), Le<uint64_t>(b64.data()));
  EXPECT_EQ(crng.GetRandomU8(0), b8[1]);
  EXPECT_EQ(crng.GetRandomU16(0), Le<uint16_t>(b16.data() + 2));
  EXPECT_EQ(crng.GetRandomU64(0), Le<uint64_t>(b64.data() + 8));
}

template <class T>
T Call(Crng& crng, bool raw) {
  if constexpr (sizeof(T) == 1) return raw ? crng.RawGetRandomU8(0) : crng.GetRandomU8(0);
  if constexpr (sizeof(T) == 2) return raw ? crng.RawGetRandomU16(0) : crng.GetRandomU16(0);
  if constexpr (sizeof(T) == 4) return raw ? crng.RawGetRandomU32(0) : crng.GetRandomU32(0);
  if constexpr (sizeof(T) == 8) return raw ? crng.RawGetRandomU64(0) : crng.GetRandomU64(0);
}

template <class T>
void CheckRefillCadence(bool raw) {
  constexpr unsigned kPerBatch = 96 / sizeof(T);
  constexpr int kIndex = sizeof(T) == 1 ? 0 : sizeof(T) == 2 ? 1 : sizeof(T) == 4 ? 2 : 3;
  const Bytes key = SeqKey(3);
  Crng crng(1, key.data());
  for (unsigned call = 0; call < 5 * kPerBatch; ++call) {
    Call<T>(crng, raw);
    const CrngCounters c = crng.Counters(0);
    ASSERT_EQ(c.refills[kIndex], call / kPerBatch + 1) << "call " << call;
    ASSERT_EQ(crng.BatchPosition(0, sizeof(T)), call % kPerBatch + 1);
    // 3 blocks for the first refill (stale per-CPU key), 2 for each later one.
    ASSERT_EQ(c.chacha_blocks, 3 + 2 * (call / kPerBatch));
    ASSERT_EQ(c.cpu_key_derivations, 1u);
  }
}

TEST(Crng, RefillEvery96_48_24_12CallsLocked) {
  CheckRefillCadence<uint8_t>(false);
  CheckRefillCadence<uint16_t>(false);
  CheckRefillCadence<uint32_t>(false);
  CheckRefillCadence<uint64_t>(false);
}

TEST(Crng, RefillEvery96_48_24_12CallsRaw) {
  CheckRefillCadence<uint8_t>(true);
  CheckRefillCadence<uint16_t>(true);
  CheckRefillCadence<uint32_t>(true);
  CheckRefillCadence<uint64_t>(true);
}

TEST(Crng, ConsumedSlotsAreZeroedRestIntact) {
  const Bytes key = SeqKey(9);
  Crng crng(1, key.data());
  Bytes base = key;
  Bytes cpu_key = DeriveCpuKey(base);
  const Bytes batch = RefillFromCpuKey(cpu_key);
  for (int n = 1; n <= 48; ++n) {
    crng.GetRandomU16(0);
    const auto bytes = crng.BatchBytes(0, 2);
    for (int i = 0; i < 96; ++i) {
      ASSERT_EQ(bytes[i], i < 2 * n ? 0 : batch[i]) << "after " << n << " calls, byte " << i;
    }
  }
}

TEST(Crng, GenerationChangeForcesRefillAndNewCpuKey) {
  const Bytes key = SeqKey(0);
  const Bytes key2 = SeqKey(100);
  Crng crng(1, key.data());
  crng.GetRandomU16(0);
  crng.GetRandomU16(0);
  ASSERT_EQ(crng.Counters(0).refills[1], 1u);
  crng.Reseed(key2.data());
  EXPECT_EQ(crng.base_generation(), 2u);
  // Independent expectation: the next value comes from a per-CPU key derived from key2.
  Bytes base = key2;
  Bytes cpu_key = DeriveCpuKey(base);
  const Bytes batch = RefillFromCpuKey(cpu_key);
  EXPECT_EQ(crng.GetRandomU16(0), Le<uint16_t>(batch.data()));
  const CrngCounters c = crng.Counters(0);
  EXPECT_EQ(c.refills[1], 2u) << "refilled although 46 slots were left";
  EXPECT_EQ(c.cpu_key_derivations, 2u);
  EXPECT_EQ(crng.BatchPosition(0, 2), 1u);
  EXPECT_EQ(crng.BatchGeneration(0, 2), 2u);
  EXPECT_EQ(crng.CpuGeneration(0), 2u);
}

TEST(Crng, ReseedSkipsUlongMax) {
  const Bytes key = SeqKey(0);
  Crng crng(1, key.data(), Crng::kStaleGeneration - 2);
  crng.Reseed(key.data());
  EXPECT_EQ(crng.base_generation(), Crng::kStaleGeneration - 1);
  crng.Reseed(key.data());
  EXPECT_EQ(crng.base_generation(), 0u) << "ULONG_MAX is skipped (wraps to 0)";
}

TEST(Crng, PrepareCpuMarksEverythingStale) {
  const Bytes key = SeqKey(0);
  Crng crng(1, key.data());
  crng.GetRandomU32(0);
  crng.PrepareCpu(0);
  EXPECT_EQ(crng.CpuGeneration(0), Crng::kStaleGeneration);
  EXPECT_EQ(crng.BatchPosition(0, 4), Crng::kStalePosition);
  crng.GetRandomU32(0);
  EXPECT_EQ(crng.Counters(0).refills[2], 2u);
  EXPECT_EQ(crng.Counters(0).cpu_key_derivations, 2u);
}

TEST(Crng, SecondCpuDerivesFromTheAlreadyErasedBaseKey) {
  const Bytes key = SeqKey(0);
  Crng crng(2, key.data());
  Bytes base = key;
  Bytes cpu0 = DeriveCpuKey(base);
  Bytes cpu1 = DeriveCpuKey(base);
  const Bytes batch0 = RefillFromCpuKey(cpu0);
  const Bytes batch1 = RefillFromCpuKey(cpu1);
  EXPECT_EQ(crng.GetRandomU64(0), Le<uint64_t>(batch0.data()));
  EXPECT_EQ(crng.GetRandomU64(1), Le<uint64_t>(batch1.data()));
  EXPECT_EQ(crng.GetRandomU64(0), Le<uint64_t>(batch0.data() + 8));
  EXPECT_EQ(crng.TotalCounters().refills[3], 2u);
}

TEST(Crng, LockedAndRawGiveTheSameStream) {
  const Bytes key = SeqKey(77);
  Crng a(1, key.data()), b(1, key.data());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.GetRandomU16(0), b.RawGetRandomU16(0)) << i;
}

TEST(Crng, GetRandomBytesMatchesLibsodiumIncludingPartialBlock) {
  const Bytes key = SeqKey(5);
  Crng crng(1, key.data());
  uint8_t out[200];
  crng.GetRandomBytes(0, out, sizeof out);
  Bytes base = key;
  Bytes cpu_key = DeriveCpuKey(base);
  // First 32 bytes: second half of the erasure block; then blocks 1, 2 and 40 bytes of 3.
  const Bytes s = Keystream(cpu_key, 0, 64 + 168);
  EXPECT_EQ(Bytes(out, out + 200), Bytes(s.begin() + 32, s.end()));
  EXPECT_EQ(crng.Counters(0).chacha_blocks, 1u + 1u + 3u);
}

TEST(Crng, LockedVariantKeepsBatchesConsistentUnderSharing) {
  // Two threads deliberately share cpu slot 0: the per-CPU lock must serialise them, so the
  // refill count is exact and every batch is consumed exactly once.
  const Bytes key = SeqKey(1);
  Crng crng(1, key.data());
  constexpr int kCalls = 48 * 500;
  auto worker = [&crng] {
    for (int i = 0; i < kCalls; ++i) crng.GetRandomU16(0);
  };
  std::thread t1(worker), t2(worker);
  t1.join();
  t2.join();
  EXPECT_EQ(crng.Counters(0).refills[1], 2u * kCalls / 48);
  EXPECT_EQ(crng.BatchPosition(0, 2), 48u);
}

}  // namespace
}  // namespace kstacklab::rng
