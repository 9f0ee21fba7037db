// Poison strategies against memset, per fill size (docs/benchmarks.md "Stack erasing"): the
// loop-mode cross-check of the `erase/poison` suite.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "kstacklab/erase/erase.h"

namespace {

using kstacklab::erase::kDefaultThreadSize;
using kstacklab::erase::kPoison;

struct Buffer {
  Buffer() : p(std::aligned_alloc(kDefaultThreadSize, kDefaultThreadSize)) {}
  ~Buffer() { std::free(p); }
  uintptr_t high() const { return reinterpret_cast<uintptr_t>(p) + kDefaultThreadSize; }
  void* p;
};

void BM_Poison(benchmark::State& state, const kstacklab::erase::Strategy* s) {
  if (!s->available()) {
    state.SkipWithError("not available on this CPU");
    return;
  }
  Buffer b;
  const uintptr_t high = b.high();
  const uintptr_t low = high - static_cast<uintptr_t>(state.range(0));
  for (auto _ : state) {
    s->fill(low, high, kPoison);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void BM_Memset(benchmark::State& state) {
  Buffer b;
  const uintptr_t high = b.high();
  const uintptr_t low = high - static_cast<uintptr_t>(state.range(0));
  for (auto _ : state) {
    kstacklab::erase::MemsetReference(low, high);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

const bool kRegistered = [] {
  for (const auto& s : kstacklab::erase::Strategies()) {
    benchmark::RegisterBenchmark((std::string("BM_Poison/") + s.name).c_str(), BM_Poison, &s)
        ->Arg(256)
        ->Arg(1024)
        ->Arg(4096)
        ->Arg(8192)
        ->Arg(16384);
  }
  benchmark::RegisterBenchmark("BM_Poison/memset", BM_Memset)
      ->Arg(256)
      ->Arg(1024)
      ->Arg(4096)
      ->Arg(8192)
      ->Arg(16384);
  return true;
}();

}  // namespace
