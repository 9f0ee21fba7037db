// Self-benchmarks of the model random sources (rng/), with libsodium as the reference point in
// the same run: ChaCha20 block (ours vs crypto_stream_chacha20_ietf_xor_ic, one 64-byte block)
// and SipHash-2-4 of 8 bytes (Siphash1u64 vs crypto_shorthash). Never run by ctest.
//   build-rng/bench/bench_rng --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <sodium.h>

#include <cstdint>
#include <cstring>

#include "kstacklab/rng/chacha20.h"
#include "kstacklab/rng/counter.h"
#include "kstacklab/rng/crng.h"
#include "kstacklab/rng/prandom.h"
#include "kstacklab/rng/siphash.h"

namespace kstacklab::rng {
namespace {

void BM_PrandomU32State(benchmark::State& st) {
  PrandomState s;
  PrandomSeedSelftest(s, 1);
  for (auto _ : st) benchmark::DoNotOptimize(PrandomU32State(s));
}
BENCHMARK(BM_PrandomU32State);

uint8_t g_key[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                     17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
uint8_t g_nonce[12] = {0, 0, 0, 9, 0, 0, 0, 0x4a, 0, 0, 0, 0};

// Our block function on a prepared state (the kernel's use: state kept, word 12 advanced).
void BM_Chacha20Block_Ours(benchmark::State& st) {
  ChachaState s;
  ChachaInitRfc(s, g_key, 1, g_nonce);
  alignas(64) uint8_t out[64];
  for (auto _ : st) {
    Chacha20Block(s, out);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_Chacha20Block_Ours);

// Ours including the state set-up, the same work libsodium's call does.
void BM_Chacha20Block_OursWithInit(benchmark::State& st) {
  alignas(64) uint8_t out[64];
  uint32_t counter = 0;
  for (auto _ : st) {
    ChachaState s;
    ChachaInitRfc(s, g_key, counter++, g_nonce);
    Chacha20Block(s, out);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_Chacha20Block_OursWithInit);

void BM_Chacha20Block_Libsodium(benchmark::State& st) {
  if (sodium_init() < 0) st.SkipWithError("sodium_init failed");
  alignas(64) uint8_t zeros[64] = {};
  alignas(64) uint8_t out[64];
  uint32_t counter = 0;
  for (auto _ : st) {
    crypto_stream_chacha20_ietf_xor_ic(out, zeros, sizeof out, g_nonce, counter++, g_key);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_Chacha20Block_Libsodium);

void BM_Siphash1u64_Ours(benchmark::State& st) {
  const SiphashKey key = SiphashKeyFromBytes(g_key);
  uint64_t x = 0;
  for (auto _ : st) {
    benchmark::DoNotOptimize(key);
    benchmark::DoNotOptimize(Siphash1u64(x++, key));
  }
}
BENCHMARK(BM_Siphash1u64_Ours);

void BM_Siphash8Bytes_Libsodium(benchmark::State& st) {
  if (sodium_init() < 0) st.SkipWithError("sodium_init failed");
  uint8_t out[crypto_shorthash_BYTES];
  uint64_t x = 0;
  for (auto _ : st) {
    uint8_t m[8];
    std::memcpy(m, &x, 8);
    ++x;
    crypto_shorthash(out, m, sizeof m, g_key);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_Siphash8Bytes_Libsodium);

void BM_CrngGetRandomU16_Locked(benchmark::State& st) {
  Crng crng(1, g_key);
  for (auto _ : st) benchmark::DoNotOptimize(crng.GetRandomU16(0));
  st.counters["refills/call"] =
      static_cast<double>(crng.Counters(0).refills[1]) / static_cast<double>(st.iterations());
}
BENCHMARK(BM_CrngGetRandomU16_Locked);

void BM_CrngGetRandomU16_Raw(benchmark::State& st) {
  Crng crng(1, g_key);
  for (auto _ : st) benchmark::DoNotOptimize(crng.RawGetRandomU16(0));
  st.counters["refills/call"] =
      static_cast<double>(crng.Counters(0).refills[1]) / static_cast<double>(st.iterations());
}
BENCHMARK(BM_CrngGetRandomU16_Raw);

void BM_CounterRead(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(timing::ReadCounter());
}
BENCHMARK(BM_CounterRead);

void BM_CounterRead_Quantised24MHz(benchmark::State& st) {
  CounterSource src(2445000000ull, 24000000ull);  // nominal TSC of the reference VM
  for (auto _ : st) benchmark::DoNotOptimize(src.Read());
}
BENCHMARK(BM_CounterRead_Quantised24MHz);

}  // namespace
}  // namespace kstacklab::rng
