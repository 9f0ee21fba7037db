// `kstacklab rng SOURCE …`: dump a model random source's raw output, one value per line in
// lowercase zero-padded hex (no 0x), so it can be checked against a kernel (DESIGN.md). The
// sources are the raw rows of the one source table (kstack/sources.h); this file adds how each
// is dumped.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli_util.h"
#include "command.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/kstack/sources.h"
#include "kstacklab/rng/chacha20.h"
#include "kstacklab/rng/crng.h"
#include "kstacklab/rng/prandom.h"
#include "kstacklab/rng/siphash.h"

namespace kstacklab::cli {

namespace {

constexpr uint64_t kMaxCount = 10'000'000;

struct RngOptions {
  std::string source;
  std::string count = "10";
  std::string state, seed, selftest_seed;  // prandom
  std::string key, nonce, counter = "0";   // chacha20 (key also siphash)
  std::string base_key;                    // crng-uN
  std::vector<std::string> u64s;           // siphash
  std::string message;                     // siphash
  bool hsiphash = false;
};

// Buffered stdout: one WriteStdout per ~64 KiB. After a failed write nothing more is written and
// Finish reports that first failure (exit 1).
class Out {
 public:
  void Line(std::string_view s) {
    buf_.append(s);
    buf_.push_back('\n');
    if (buf_.size() > (1u << 16)) Flush();
  }
  int Finish() {
    Flush();
    return status_.ok() ? kExitOk : Fail(status_.error());
  }

 private:
  void Flush() {
    if (status_.ok()) status_ = WriteStdout(buf_);
    buf_.clear();
  }

  std::string buf_;
  Status status_ = OkStatus();
};

Expected<uint64_t> ParseRngCount(const std::string& text) {
  return ParseCount(text, "--count", 1, kMaxCount);
}

int RunPrandom(const CLI::App& sub, const RngOptions& o) {
  const int given =
      (sub.count("--state") > 0) + (sub.count("--seed") > 0) + (sub.count("--selftest-seed") > 0);
  if (given != 1) {
    return Fail(
        UsageError("rng prandom needs exactly one seeding: --state S1,S2,S3,S4 (raw "
                   "rnd_state), --seed U64 (prandom_seed_state) or --selftest-seed U32 "
                   "(self-test seeding + warm-up)"));
  }
  auto count = ParseRngCount(o.count);
  if (!count.ok()) return Fail(count.error());
  rng::PrandomState s;
  if (sub.count("--state") > 0) {
    std::vector<uint32_t> words;
    size_t start = 0;
    while (true) {
      const size_t comma = o.state.find(',', start);
      auto w = ParseUnsigned(o.state.substr(start, comma - start), "--state word", 32);
      if (!w.ok()) return Fail(w.error());
      words.push_back(static_cast<uint32_t>(*w));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (words.size() != 4) {
      return Fail(
          UsageError(fmt::format("--state needs 4 comma-separated u32 words S1,S2,S3,S4, "
                                 "got {}",
                                 words.size())));
    }
    s = rng::PrandomState{words[0], words[1], words[2], words[3]};
  } else if (sub.count("--seed") > 0) {
    auto seed = ParseUnsigned(o.seed, "--seed", 64);
    if (!seed.ok()) return Fail(seed.error());
    rng::PrandomSeedState(s, *seed);
  } else {
    auto seed = ParseUnsigned(o.selftest_seed, "--selftest-seed", 32);
    if (!seed.ok()) return Fail(seed.error());
    rng::PrandomSeedSelftest(s, static_cast<uint32_t>(*seed));
  }
  Out out;
  for (uint64_t i = 0; i < *count; ++i) out.Line(fmt::format("{:08x}", rng::PrandomU32State(s)));
  return out.Finish();
}

int RunChacha(const CLI::App& sub, const RngOptions& o) {
  if (sub.count("--key") == 0 || sub.count("--nonce") == 0) {
    return Fail(
        UsageError("rng chacha20 needs --key HEX64 (32 bytes) and --nonce HEX24 "
                   "(12 bytes); --counter C (default 0) and --count N are optional"));
  }
  auto key = ParseHexBytes(o.key, "--key", rng::kChachaKeySize);
  if (!key.ok()) return Fail(key.error());
  auto nonce = ParseHexBytes(o.nonce, "--nonce", rng::kChachaNonceSize);
  if (!nonce.ok()) return Fail(nonce.error());
  auto counter = ParseUnsigned(o.counter, "--counter", 32);
  if (!counter.ok()) return Fail(counter.error());
  auto count = ParseRngCount(o.count);
  if (!count.ok()) return Fail(count.error());
  rng::ChachaState st;
  rng::ChachaInitRfc(st, key->data(), static_cast<uint32_t>(*counter), nonce->data());
  Out out;
  uint8_t block[rng::kChachaBlockSize];
  for (uint64_t i = 0; i < *count; ++i) {
    rng::Chacha20Block(st, block);
    out.Line(HexBytes(block, sizeof block));
  }
  return out.Finish();
}

template <int kWidth>
int RunCrng(const CLI::App& sub, const RngOptions& o) {
  if (sub.count("--base-key") == 0) {
    return Fail(UsageError(
        fmt::format("rng {} needs --base-key HEX64 (base_crng.key, 32 bytes)", o.source)));
  }
  auto key = ParseHexBytes(o.base_key, "--base-key", rng::kChachaKeySize);
  if (!key.ok()) return Fail(key.error());
  auto count = ParseRngCount(o.count);
  if (!count.ok()) return Fail(count.error());
  rng::Crng crng(1, key->data());
  Out out;
  for (uint64_t i = 0; i < *count; ++i) {
    if constexpr (kWidth == 1) {
      out.Line(fmt::format("{:02x}", crng.GetRandomU8(0)));
    } else if constexpr (kWidth == 2) {
      out.Line(fmt::format("{:04x}", crng.GetRandomU16(0)));
    } else if constexpr (kWidth == 4) {
      out.Line(fmt::format("{:08x}", crng.GetRandomU32(0)));
    } else {
      out.Line(fmt::format("{:016x}", crng.GetRandomU64(0)));
    }
  }
  return out.Finish();
}

int RunSiphash(const CLI::App& sub, const RngOptions& o) {
  if (sub.count("--key") == 0) {
    return Fail(UsageError("rng siphash needs --key HEX32 (the 16 key bytes in memory order)"));
  }
  const bool have_u64 = !o.u64s.empty();
  const bool have_message = sub.count("--message") > 0;
  if (have_u64 == have_message) {
    return Fail(
        UsageError("rng siphash needs either --u64 X [--u64 Y] (siphash_1u64 / "
                   "siphash_2u64) or --message HEX (siphash), not both"));
  }
  if (o.u64s.size() > 2) {
    return Fail(
        UsageError("rng siphash takes at most two --u64 values (siphash_2u64); use "
                   "--message HEX for longer input"));
  }
  if (o.hsiphash && !have_message) {
    return Fail(
        UsageError("--hsiphash hashes a --message HEX (the kernel has no hsiphash_1u64); "
                   "give --message instead of --u64"));
  }
  auto key_bytes = ParseHexBytes(o.key, "--key", 16);
  if (!key_bytes.ok()) return Fail(key_bytes.error());
  const rng::SiphashKey key = rng::SiphashKeyFromBytes(key_bytes->data());
  Out out;
  if (have_message) {
    auto msg = ParseHexBytes(o.message, "--message", 0);
    if (!msg.ok()) return Fail(msg.error());
    if (o.hsiphash) {
      out.Line(fmt::format("{:08x}", rng::Hsiphash(msg->data(), msg->size(), key)));
    } else {
      out.Line(fmt::format("{:016x}", rng::Siphash(msg->data(), msg->size(), key)));
    }
  } else {
    std::vector<uint64_t> v;
    for (const std::string& text : o.u64s) {
      auto x = ParseUnsigned(text, "--u64", 64);
      if (!x.ok()) return Fail(x.error());
      v.push_back(*x);
    }
    const uint64_t h =
        v.size() == 1 ? rng::Siphash1u64(v[0], key) : rng::Siphash2u64(v[0], v[1], key);
    out.Line(fmt::format("{:016x}", h));
  }
  return out.Finish();
}

// --- the table: one row per raw row of kstack::kSources ------------------------------------

// How `kstacklab rng NAME` dumps the kstack::kSources row NAME: the flags it takes (the other
// sources' flags are errors) and its function. Every raw row has one, and only raw rows do
// (checked when the table is first built: at start-up, for the help footer).
struct Dumper {
  std::string_view name;
  std::vector<std::string_view> flags;
  int (*run)(const CLI::App& sub, const RngOptions& o);
};

const std::vector<Dumper>& Dumpers() {
  static const std::vector<Dumper> k = {
      {"prandom", {"--count", "--state", "--seed", "--selftest-seed"}, &RunPrandom},
      {"chacha20", {"--count", "--key", "--nonce", "--counter"}, &RunChacha},
      {"crng-u8", {"--count", "--base-key"}, &RunCrng<1>},
      {"crng-u16", {"--count", "--base-key"}, &RunCrng<2>},
      {"crng-u32", {"--count", "--base-key"}, &RunCrng<4>},
      {"crng-u64", {"--count", "--base-key"}, &RunCrng<8>},
      {"siphash", {"--key", "--u64", "--message", "--hsiphash"}, &RunSiphash},
  };
  return k;
}

struct SourceRow {
  std::string_view name;  // `kstacklab rng NAME`
  const char* summary;    // one line: what it models, state size, period, cryptographic or not
  std::vector<std::string_view> flags;  // the flags it takes; the other sources' flags are errors
  int (*run)(const CLI::App& sub, const RngOptions& o);
};

// The raw rows of kstack::kSources, in table order, each with its dumper.
const std::vector<SourceRow>& Sources() {
  static const std::vector<SourceRow> k = [] {
    std::vector<SourceRow> rows;
    for (const kstack::SourceDef& def : kstack::Sources()) {
      if (def.raw_summary == nullptr) continue;
      const auto d = std::find_if(Dumpers().begin(), Dumpers().end(),
                                  [&](const Dumper& x) { return x.name == def.name; });
      KSTACKLAB_CHECK(d != Dumpers().end());  // a raw row without its dump function
      rows.push_back({def.name, def.raw_summary, d->flags, d->run});
    }
    KSTACKLAB_CHECK(rows.size() == Dumpers().size());  // a dumper without its raw row
    return rows;
  }();
  return k;
}

std::string SourceNames() {
  std::string names;
  for (const SourceRow& s : Sources()) {
    if (!names.empty()) names += ", ";
    names += s.name;
  }
  return names;
}

// Flags that belong to other sources are errors (they would be silently ignored otherwise);
// checked in table order, so the first wrong flag named is stable.
Status RejectOtherSourcesFlags(const CLI::App& sub, const SourceRow& source) {
  for (const SourceRow& other : Sources()) {
    for (std::string_view flag : other.flags) {
      const bool allowed =
          std::find(source.flags.begin(), source.flags.end(), flag) != source.flags.end();
      if (!allowed && sub.count(std::string(flag)) > 0) {
        return UsageError(
            fmt::format("{} does not apply to `rng {}`; remove it (see `kstacklab rng --help`)",
                        flag, source.name));
      }
    }
  }
  return OkStatus();
}

}  // namespace

Runner SetupRngCommand(CLI::App& sub) {
  auto o = std::make_shared<RngOptions>();
  sub.add_option("source", o->source, "Source: " + SourceNames());
  sub.add_option("--count", o->count,
                 "Number of values (blocks for chacha20), 1..10^7; default 10");
  sub.add_option("--state", o->state, "prandom: raw rnd_state S1,S2,S3,S4 (decimal or 0x-hex)");
  sub.add_option("--seed", o->seed, "prandom: prandom_seed_state(U64), no warm-up");
  sub.add_option("--selftest-seed", o->selftest_seed,
                 "prandom: self-test seeding (LCG 69069 chain) + 10 warm-up steps");
  sub.add_option("--key", o->key, "chacha20: HEX64 key; siphash: HEX32 key bytes in memory order");
  sub.add_option("--nonce", o->nonce, "chacha20: HEX24 nonce (RFC 8439, words 13..15)");
  sub.add_option("--counter", o->counter, "chacha20: initial 32-bit block counter (default 0)");
  sub.add_option("--base-key", o->base_key, "crng-uN: HEX64 base_crng.key");
  sub.add_option("--u64", o->u64s, "siphash: siphash_1u64(X) or, given twice, siphash_2u64(X, Y)");
  sub.add_option("--message", o->message, "siphash: generic siphash() of these hex bytes");
  sub.add_flag("--hsiphash", o->hsiphash,
               "siphash: hsiphash (64-bit kernels: SipHash-1-3, 32-bit result) of --message");
  std::string footer = "Sources:\n";
  for (const SourceRow& s : Sources()) footer += fmt::format("  {:<10} {}\n", s.name, s.summary);
  footer +=
      "Output: one value per line, lowercase hex zero-padded to the type width, no 0x.\n"
      "crng-uN: successive get_random_uN() on one CPU, per-CPU crng initially stale, "
      "base_crng.key = --base-key, crng ready, no reseed.\n";
  sub.footer(footer);
  return [&sub, o]() -> int {
    const std::string& src = o->source;
    if (src.empty()) {
      return Fail(UsageError("rng needs a SOURCE: one of " + SourceNames()));
    }
    for (const SourceRow& row : Sources()) {
      if (row.name != src) continue;
      const Status flags = RejectOtherSourcesFlags(sub, row);
      if (!flags.ok()) return Fail(flags.error());
      return row.run(sub, *o);
    }
    return Fail(
        UsageError(fmt::format("unknown rng source '{}'; choose one of {}", src, SourceNames())));
  };
}

}  // namespace kstacklab::cli
