// The random sources of the kstack designs, one table (STYLE.md rule 3): every source kstacklab
// models has one row and one name, which serves
//   * `kstacklab rng NAME` — the raw output, to check it against a kernel (rows with `raw`; the
//     command's flags and dump function are in cli/rng_cmd.cc, keyed by the row's name), and
//   * the model suite's `model/rng:NAME` — one timed call of the source alone (rows with a
//     `boot`; src/workloads/model.cc), and
//   * docs/models.md, which names every row (a test checks it).
// A thing with two behaviours has two names: `siphash` is the SipHash PRF of given input,
// `siphash-percpu` the model source siphash_1u64(this CPU's counter++) under a boot-time key
// (named `siphash` in model/rng before this table).
//
// A model source is a class with kName, kSummary, Call() (one call of the source: the timed
// call), created as a policy is (kstack::Boot<S>(): a static Boot(), a constructor taking the
// booted crng, or a default constructor). A source built on the crng also has crng() and
// kMinRefillsPer200Calls, the refill cadence its setup check demands; kBaseline marks the
// baseline row. Adding a model source = the class + one row in kSources (CONTRIBUTING.md).
//
// Thread safety: as the policies (percpu.h); the benchmarks run one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "kstacklab/common/error.h"
#include "kstacklab/kstack/percpu.h"
#include "kstacklab/kstack/policies.h"
#include "kstacklab/rng/crng.h"
#include "kstacklab/rng/siphash.h"
#include "kstacklab/timing/timing.h"

namespace kstacklab::kstack {

// --- the model sources (model/rng) -------------------------------------------------------------

// The baseline of the source rows: the same call path and CPU-slot lookup, no randomness.
struct NoSource {
  static constexpr const char* kName = "off";
  static constexpr const char* kSummary =
      "no random source: the shared call path and CPU-slot lookup (baseline of the source rows)";
  static constexpr bool kBaseline = true;  // compare's default baseline among the source rows
  uint32_t Call() { return static_cast<uint32_t>(cpu.Cpu()) & 0u; }
  SchedCpu cpu;
};

// The per-CPU LFSR113 states of the merged kstack design, booted as that policy boots them; the
// call is the v7.3 entry's: this CPU's state, one out-of-line prandom_u32_state(), nothing else.
struct PrandomSource {
  static constexpr const char* kName = "prandom";
  static constexpr const char* kSummary =
      "one prandom_u32_state() on this CPU's LFSR113 state (an out-of-line call, as the kernel's)";
  static Expected<std::unique_ptr<PrandomSource>> Boot() {
    auto policy = kstack::Boot<PercpuPrngIrqsoffPolicy>();
    if (!policy.ok()) return policy.error();
    return std::make_unique<PrandomSource>(PrandomSource{std::move(*policy)});
  }
  uint32_t Call() { return policy->Entry(); }
  std::unique_ptr<PercpuPrngIrqsoffPolicy> policy;
};

// get_random_uN() of the booted crng on this CPU: Get(crng, cpu) is the call.
template <auto Get, uint64_t kMinRefills>
struct CrngSource {
  static constexpr uint64_t kMinRefillsPer200Calls = kMinRefills;
  explicit CrngSource(std::shared_ptr<rng::Crng> c) : crng_(std::move(c)) {}
  auto Call() { return (crng_.get()->*Get)(cpu_.Cpu()); }
  rng::Crng& crng() { return *crng_; }

 private:
  std::shared_ptr<rng::Crng> crng_;
  SchedCpu cpu_;
};

// 200 calls on one cpu = ceil(200 / 48) = 5 u16 refills (ceil(200 / 96) = 3 for u8); a
// migration can only add some.
struct CrngU16Source : CrngSource<&rng::Crng::GetRandomU16, 5> {
  static constexpr const char* kName = "crng-u16";
  static constexpr const char* kSummary =
      "get_random_u16() on this CPU, locked (refill: 2 ChaCha20 blocks / 48)";
  using CrngSource::CrngSource;
};
struct CrngU16RawSource : CrngSource<&rng::Crng::RawGetRandomU16, 5> {
  static constexpr const char* kName = "crng-u16-raw";
  static constexpr const char* kSummary = "get_random_u16() on this CPU without the local lock";
  using CrngSource::CrngSource;
};
struct CrngU8RawSource : CrngSource<&rng::Crng::RawGetRandomU8, 3> {
  static constexpr const char* kName = "crng-u8-raw";
  static constexpr const char* kSummary =
      "get_random_u8() on this CPU without the local lock (refill / 96)";
  using CrngSource::CrngSource;
};

struct SiphashPercpuSource {
  static constexpr const char* kName = "siphash-percpu";
  static constexpr const char* kSummary =
      "siphash_1u64(this CPU's counter++) under a boot-time key";
  explicit SiphashPercpuSource(const rng::SiphashKey& k) : key(k), counters(PossibleCpus()) {}
  static Expected<std::unique_ptr<SiphashPercpuSource>> Boot() {
    auto key = BootSiphashKey();
    if (!key.ok()) return key.error();
    return std::make_unique<SiphashPercpuSource>(*key);
  }
  uint64_t Call() { return rng::Siphash1u64(counters[cpu.Cpu()]++, key); }
  rng::SiphashKey key;
  PerCpu<uint64_t> counters;
  SchedCpu cpu;
};

struct CounterSource {
  static constexpr const char* kName = "counter";
  static constexpr const char* kSummary = "the cycle counter read alone (rdtsc / cntvct_el0)";
  uint64_t Call() { return timing::ReadCounter(); }
};

// --- the table ---------------------------------------------------------------------------------

// One row per source. A row has a model face (`model`) and/or a raw face (raw_summary !=
// nullptr: `kstacklab rng NAME`).
struct SourceDef {
  const char* name;
  // model/rng has a row for it (model_summary..baseline are set). A constant the model suite
  // branches on at compile time (comparing a function pointer with nullptr is not a constant
  // expression under the sanitizers).
  bool model;
  // `kstacklab rng NAME`: what the raw output is (state size, period, cryptographic or not),
  // or nullptr when the rng command does not dump this source.
  const char* raw_summary;
  // model/rng:NAME: what one timed call does, or nullptr (and the fields below unused).
  const char* model_summary;
  Expected<std::shared_ptr<void>> (*boot)();  // create the source as at boot
  uint64_t (*call)(void* source);             // one call (the timed call), its value widened
  // The refill cadence the setup check demands of 200 calls on one CPU; 0 = none.
  uint64_t min_refills_per_200_calls;
  uint64_t (*refills)(void* source);  // crng refills so far (nullptr when not crng-based)
  bool baseline;                      // compare's default baseline among the model/rng rows
};

namespace source_internal {
template <class S>
Expected<std::shared_ptr<void>> BootErased() {
  auto s = Boot<S>();
  if (!s.ok()) return s.error();
  return std::shared_ptr<void>(std::move(*s));
}
template <class S>
uint64_t CallErased(void* s) {
  return static_cast<S*>(s)->Call();
}
template <class S>
uint64_t RefillsErased(void* s) {
  const rng::CrngCounters c = static_cast<S*>(s)->crng().TotalCounters();
  return c.refills[0] + c.refills[1] + c.refills[2] + c.refills[3];  // u8, u16, u32, u64
}
// A model source (with a raw face when raw_summary is given).
template <class S>
constexpr SourceDef Row(const char* raw_summary = nullptr) {
  SourceDef d{S::kName,       true, raw_summary, S::kSummary, &BootErased<S>,
              &CallErased<S>, 0,    nullptr,     false};
  if constexpr (requires { S::kMinRefillsPer200Calls; }) {
    d.min_refills_per_200_calls = S::kMinRefillsPer200Calls;
    d.refills = &RefillsErased<S>;
  }
  d.baseline = requires { S::kBaseline; };
  return d;
}
// A source `kstacklab rng` dumps and the model suite does not time.
constexpr SourceDef RawRow(const char* name, const char* raw_summary) {
  return {name, false, raw_summary, nullptr, nullptr, nullptr, 0, nullptr, false};
}
}  // namespace source_internal

// constexpr, so model.cc indexing it with a constant calls each source's Call() directly, with
// no indirect call in a timed region. `kstacklab rng --help` lists the raw rows in this order,
// `kstacklab list` the model rows.
// clang-format off
inline constexpr SourceDef kSources[] = {
    source_internal::Row<NoSource>(),
    source_internal::Row<PrandomSource>(
        "LFSR113 prandom_u32_state (lib/random32.c): 128-bit state, period ~2^113, not "
        "cryptographic"),
    source_internal::RawRow("chacha20",
        "ChaCha20 block function, RFC 8439 in the kernel layout: 512-bit state, cryptographic"),
    source_internal::RawRow("crng-u8",
        "get_random_u8() (drivers/char/random.c): batched CRNG, 96 per refill"),
    source_internal::Row<CrngU16Source>("get_random_u16(): batched CRNG, 48 per refill"),
    source_internal::Row<CrngU16RawSource>(),
    source_internal::Row<CrngU8RawSource>(),
    source_internal::RawRow("crng-u32", "get_random_u32(): batched CRNG, 24 per refill"),
    source_internal::RawRow("crng-u64", "get_random_u64(): batched CRNG, 12 per refill"),
    source_internal::RawRow("siphash",
        "SipHash-2-4 siphash_1u64/2u64/siphash() (lib/siphash.c), --hsiphash for SipHash-1-3; "
        "keyed PRF, stateless"),
    source_internal::Row<SiphashPercpuSource>(),
    source_internal::Row<CounterSource>(),
};
// clang-format on

inline constexpr std::span<const SourceDef> Sources() { return kSources; }

// The row named `name`, or nullptr.
constexpr const SourceDef* FindSource(std::string_view name,
                                      std::span<const SourceDef> table = Sources()) {
  for (const SourceDef& s : table) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

}  // namespace kstacklab::kstack
