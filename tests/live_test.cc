// Live probe (include/kstacklab/live/): offsets from recorded addresses, serial dependence and
// the input diagnosis on hand-made records and on a recorded fixture (tests/data/live/), then the
// probe itself on this kernel (skipped, with the reason, only where BPF is unavailable).
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kstacklab/analysis/entropy.h"
#include "kstacklab/live/attacks.h"
#include "kstacklab/live/infer.h"
#include "kstacklab/live/probe.h"
#include "kstacklab/live/records.h"
#include "kstacklab/rng/prandom.h"
#include "test_support.h"

namespace kstacklab::live {
namespace {

constexpr uint64_t kBase = 0xffffc90000000000ull;
constexpr uint64_t kAnchor = 16032;  // any height: the tests only use differences

LiveRecord At(uint32_t offset, uint32_t tid = 1, uint32_t cpu = 0) {
  LiveRecord r;
  r.stack_base = kBase;
  r.local_addr = kBase + kAnchor - offset;
  r.tid = tid;
  r.cpu = cpu;
  r.nr = SYS_getpid;
  return r;
}

std::vector<LiveRecord> LoadFixture(const std::string& name) {
  std::ifstream in(std::string(KSTACKLAB_TEST_DATA) + "/live/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  auto records = RecordsFromCsv(ss.str());
  EXPECT_TRUE(records.ok());
  return records.ok() ? *records : std::vector<LiveRecord>{};
}

TEST(DeriveOffsetsTest, LargestHeightIsOffsetZero) {
  std::vector<LiveRecord> recs = {At(32), At(0), At(1008), At(16)};
  auto d = DeriveOffsets(recs);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->offsets, (std::vector<uint32_t>{32, 0, 1008, 16}));
  EXPECT_EQ(d->anchor_height, kAnchor);
  EXPECT_EQ(d->spread, 1008u);
  EXPECT_EQ(d->state_checked, 0u);
}

TEST(DeriveOffsetsTest, ChecksAgainstTaskState) {
  std::vector<LiveRecord> recs = {At(0), At(48), At(16)};
  recs[0].task_state = 0x12345400;  // & 0x3F0 = 0
  recs[1].task_state = 0xabcd0031;  // & 0x3F0 = 0x030 = 48
  recs[2].task_state = 0x00000020;  // 32, not 16: disagrees
  for (LiveRecord& r : recs) r.flags = kHasTaskState;
  auto d = DeriveOffsets(recs);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->state_checked, 3u);
  EXPECT_EQ(d->state_agreeing, 2u);
}

TEST(DeriveOffsetsTest, RejectsWhatIsNotOneCallPathWithTheMask) {
  EXPECT_FALSE(DeriveOffsets({}).ok());
  // Spread 1032 > 1024: no kernel's mask gives that; two call paths.
  EXPECT_FALSE(DeriveOffsets(std::vector<LiveRecord>{At(0), At(1032)}).ok());
  // 4 bytes apart: no kernel rounds to less than 8.
  auto r = DeriveOffsets(std::vector<LiveRecord>{At(0), At(4)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("steps of 4"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("sample one syscall"), std::string::npos);
  // Local below its stack base: not on the task stack.
  LiveRecord off_stack = At(0);
  off_stack.local_addr = kBase - 16;
  EXPECT_FALSE(DeriveOffsets(std::vector<LiveRecord>{off_stack}).ok());
}

TEST(DeriveOffsetsTest, ReadsTheGeometryOffTheHeights) {
  // Steps of 16 within 1008 bytes: v6.11+.
  auto v611 = DeriveOffsets(std::vector<LiveRecord>{At(0), At(16), At(1008)});
  ASSERT_TRUE(v611.ok());
  EXPECT_EQ(v611->geometry.mask, 0x3F0u);
  EXPECT_EQ(v611->geometry.count(), 64u);
  // Steps of 8, 1024 bytes: v5.13-v6.10 on x86-64 (x & 0x3FF rounded up to 8), both ends seen.
  auto old = DeriveOffsets(std::vector<LiveRecord>{At(8), At(0), At(1024), At(520)});
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(old->geometry.mask, 0x3FFu);
  EXPECT_EQ(old->geometry.align, 8u);
  EXPECT_EQ(old->offsets, (std::vector<uint32_t>{8, 0, 1024, 520}));
  EXPECT_EQ(old->anchor_height, kAnchor);
  // Steps of 16 up to 1024: the older mask on a 16-byte aligned kernel (65 offsets).
  auto a16 = DeriveOffsets(std::vector<LiveRecord>{At(0), At(1024)});
  ASSERT_TRUE(a16.ok());
  EXPECT_EQ(a16->geometry.align, 16u);
  EXPECT_EQ(a16->geometry.count(), 65u);
}

TEST(DeriveOffsetsTest, OlderKernelMissingOffsetZeroIsAnchoredAtOffset1024) {
  // Heights spanning 1016 bytes in steps of 8: offset 0 (1 in 1024 draws) is the end not seen,
  // so the smallest height is offset 1024 (7 in 1024) and the largest is 8.
  std::vector<LiveRecord> recs = {At(8), At(1024), At(16)};
  recs[0].task_state = 0xfff00001;  // & 0x3FF = 1 -> rounded up to 8
  recs[1].task_state = 0x000003f9;  // 1017 -> 1024
  recs[2].task_state = 0x00000010;  // 16
  for (LiveRecord& r : recs) r.flags = kHasTaskState;
  auto d = DeriveOffsets(recs);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->offsets, (std::vector<uint32_t>{8, 1024, 16}));
  EXPECT_EQ(d->anchor_height, kAnchor);
  EXPECT_EQ(d->state_agreeing, 3u);  // geometry.Apply(task_state), rounding included
}

// Records whose offsets are g.Apply of every state 0..1023 `reps` times: exactly g's ideal
// distribution.
std::vector<LiveRecord> IdealRecords(const kstack::OffsetGeometry& g, int reps,
                                     std::vector<uint32_t>* offsets) {
  std::vector<LiveRecord> recs;
  for (int rep = 0; rep < reps; ++rep) {
    for (uint32_t x = 0; x < 1024; ++x) {
      offsets->push_back(g.Apply(x));
      recs.push_back(At(g.Apply(x)));
    }
  }
  return recs;
}

// Synthetic samples of every era and arch: the fit names the geometry that made them, with its
// number of offsets, and gets every offset right — also the plain-XOR era (v5.13-v6.8), which
// has fewer offsets than any later kernel.
TEST(DeriveOffsetsTest, NamesTheEraOfEveryGeometry) {
  for (const kstack::OffsetGeometry& g : kstack::kGeometries) {
    std::vector<uint32_t> offsets;
    const std::vector<LiveRecord> recs = IdealRecords(g, 16, &offsets);
    auto d = DeriveOffsets(recs);
    ASSERT_TRUE(d.ok()) << g.name << ": " << d.error().message;
    EXPECT_STREQ(d->geometry.name, g.name);
    EXPECT_EQ(d->geometry.count(), g.count()) << g.name;
    EXPECT_EQ(d->offsets, offsets) << g.name;
    EXPECT_EQ(d->spread, g.max()) << g.name;
    EXPECT_TRUE(d->also_consistent.empty()) << g.name << " also: " << d->also_consistent[0].name;
    // Random states instead of every state: the same answer.
    std::mt19937 gen(7);
    std::vector<LiveRecord> drawn;
    std::vector<uint32_t> drawn_offsets;
    for (int i = 0; i < 4096; ++i) {
      drawn_offsets.push_back(g.Apply(static_cast<uint32_t>(gen())));
      drawn.push_back(At(drawn_offsets.back()));
    }
    auto r = DeriveOffsets(drawn);
    ASSERT_TRUE(r.ok()) << g.name << ": " << r.error().message;
    EXPECT_STREQ(r->geometry.name, g.name);
    EXPECT_EQ(r->offsets, drawn_offsets) << g.name;
  }
  // The x86-64 plain-XOR era by hand: 33 offsets {0, 8, ..., 256}, about 5 bits (1/256 for 0,
  // 8/256 for 8..248, 7/256 for 256).
  std::vector<uint32_t> offsets;
  auto x86 = DeriveOffsets(IdealRecords(kstack::kGeometryPreV69X86, 1, &offsets));
  ASSERT_TRUE(x86.ok());
  EXPECT_EQ(x86->geometry.mask, 0xFFu);
  EXPECT_EQ(x86->geometry.align, 8u);
  EXPECT_EQ(x86->geometry.count(), 33u);
  EXPECT_NE(std::string(x86->geometry.name).find("v5.13-v6.8"), std::string::npos);
  const double bits = -(1.0 / 256 * std::log2(1.0 / 256) + 31 * 8.0 / 256 * std::log2(8.0 / 256) +
                        7.0 / 256 * std::log2(7.0 / 256));
  EXPECT_NEAR(analysis::IdealShannonBits(x86->geometry), bits, 1e-12);
  EXPECT_NEAR(bits, 5.017, 0.001);
  // ... and arm64's: 33 offsets {0, 16, ..., 512}.
  offsets.clear();
  auto arm64 = DeriveOffsets(IdealRecords(kstack::kGeometryPreV69Arm64, 1, &offsets));
  ASSERT_TRUE(arm64.ok());
  EXPECT_EQ(arm64->geometry.max(), 512u);
  EXPECT_EQ(arm64->geometry.count(), 33u);
  EXPECT_EQ(arm64->offsets, offsets);
}

TEST(DeriveOffsetsTest, PlainXorEraMissingOffsetZeroIsAnchoredAtItsLargestOffset) {
  // x86-64 before v6.9: heights spanning 248 bytes in steps of 8. Offset 0 (1 in 256 draws) is
  // the end not seen, not 256 (7 in 256).
  auto d = DeriveOffsets(std::vector<LiveRecord>{At(8), At(256), At(128), At(16)});
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->geometry.count(), 33u);
  EXPECT_EQ(d->offsets, (std::vector<uint32_t>{8, 256, 128, 16}));
  EXPECT_EQ(d->anchor_height, kAnchor);
}

// Where the heights fit two geometries about as well, both are named; more samples decide.
TEST(DeriveOffsetsTest, NamesTheGeometriesTheHeightsCannotTellApart) {
  // Offsets 16..1024 once each: the ror32 era rounded to 16 with offset 0 (1 in 1024) not drawn,
  // or v6.11+ shifted by 16 — 15/16 as likely. v6.11+ (fewer offsets) is taken, the other named.
  std::vector<LiveRecord> few;
  for (uint32_t o = 16; o <= 1024; o += 16) few.push_back(At(o));
  auto d = DeriveOffsets(few);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_STREQ(d->geometry.name, kstack::kGeometryV611.name);
  ASSERT_EQ(d->also_consistent.size(), 1u);
  EXPECT_STREQ(d->also_consistent[0].name, kstack::kGeometryPreV611Align16.name);
  // 100 draws of each: (15/16)^100 < 0.002, below kAlsoConsistentLikelihood.
  std::vector<LiveRecord> many;
  for (int rep = 0; rep < 100; ++rep) many.insert(many.end(), few.begin(), few.end());
  auto m = DeriveOffsets(many);
  ASSERT_TRUE(m.ok());
  EXPECT_STREQ(m->geometry.name, kstack::kGeometryV611.name);
  EXPECT_TRUE(m->also_consistent.empty());
  // Every height equal (randomization off): nothing to fit; the first row, offset 0.
  auto same = DeriveOffsets(std::vector<LiveRecord>{At(0), At(0), At(0)});
  ASSERT_TRUE(same.ok());
  EXPECT_STREQ(same->geometry.name, kstack::kGeometries[0].name);
  EXPECT_EQ(same->offsets, (std::vector<uint32_t>{0, 0, 0}));
  EXPECT_TRUE(same->also_consistent.empty());
}

TEST(SerialDependenceTest, PairsOnlyWithinOneThreadOnOneCpu) {
  // Thread 1: CPU 0, 0, 1, 1; thread 2 interleaved on CPU 0. Lag 1 pairs of thread 1: (0,1) and
  // (2,3) (the 1->2 pair changes CPU); thread 2: (0,1). Offsets follow y = x + 16 within a pair.
  std::vector<LiveRecord> recs = {At(0, 1, 0),  At(100 * 0, 2, 0), At(16, 1, 0),
                                  At(16, 2, 0), At(320, 1, 1),     At(336, 1, 1)};
  std::vector<uint32_t> offsets = {0, 0, 16, 16, 320, 336};
  auto deps = SerialDependence(recs, offsets, kstack::kGeometryV611, 2, 4, 1);
  ASSERT_TRUE(deps.ok());
  ASSERT_EQ(deps->size(), 2u);
  EXPECT_EQ((*deps)[0].lag, 1);
  EXPECT_EQ((*deps)[0].mi.pairs, 3u);
  EXPECT_EQ((*deps)[1].mi.pairs, 0u);  // thread 1 lag 2: (0,2) and (1,3) both change CPU
  EXPECT_EQ((*deps)[0].shuffles, 4);
  EXPECT_FALSE(
      SerialDependence(recs, std::vector<uint32_t>{0}, kstack::kGeometryV611, 1, 0, 1).ok());
}

TEST(SerialDependenceTest, DependentSequenceStandsOutOfTheShuffledBaseline) {
  // offset_{i+1} = (offset_i + 16 * 5) mod 1024 with a pseudo-random start every 4 calls: lag 1
  // is mostly determined, so MI is far above the shuffled baseline.
  std::vector<LiveRecord> recs;
  std::vector<uint32_t> offsets;
  uint32_t x = 0;
  uint64_t lcg = 7;
  for (int i = 0; i < 20000; ++i) {
    if (i % 4 == 0) {
      lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
      x = static_cast<uint32_t>(lcg >> 58) * 16;
    } else {
      x = (x + 80) % 1024;
    }
    recs.push_back(At(x));
    offsets.push_back(x);
  }
  auto deps = SerialDependence(recs, offsets, kstack::kGeometryV611, 1, 4, 42);
  ASSERT_TRUE(deps.ok());
  const LagDependence& d = (*deps)[0];
  EXPECT_GT(d.mi.miller_madow_bits, 3.0);
  EXPECT_LT(d.shuffled_plugin_max_bits, 0.5);
  // Deterministic shuffles: the same seed gives the same baseline.
  auto again = SerialDependence(recs, offsets, kstack::kGeometryV611, 1, 4, 42);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].shuffled_plugin_bits, d.shuffled_plugin_bits);
}

TEST(DiagnoseInputsTest, CounterInputsIncreaseRandomOnesDoNot) {
  std::vector<LiveRecord> tsc;
  std::vector<LiveRecord> random;
  uint32_t s1 = 0;
  uint32_t s2 = 0;
  uint64_t lcg = 3;
  for (uint32_t i = 0; i < 1000; ++i) {
    LiveRecord a = At(0);
    a.flags = kHasTaskState;
    a.task_state = s1;
    tsc.push_back(a);
    s1 = std::rotr(s1, 5) ^ (0xe0000000u + i * 3000u);  // a counter wrapping past 2^32
    LiveRecord b = a;
    b.task_state = s2;
    random.push_back(b);
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    s2 = std::rotr(s2, 5) ^ static_cast<uint32_t>(lcg >> 32);
  }
  const InputDiagnosis t = DiagnoseInputs(tsc);
  EXPECT_EQ(t.inputs, 999u);
  EXPECT_EQ(t.pairs, 998u);
  EXPECT_EQ(t.increasing, 998u);
  EXPECT_EQ(t.median_step, 3000.0);
  EXPECT_EQ(InferDesign(true, false, false, t).input, "tsc-like");
  const InputDiagnosis r = DiagnoseInputs(random);
  EXPECT_GT(r.increasing, 400u);
  EXPECT_LT(r.increasing, 600u);
  EXPECT_EQ(InferDesign(true, false, false, r).input, "random-like");
  EXPECT_EQ(InferDesign(false, false, false, InputDiagnosis{}).state, "unknown");
  EXPECT_EQ(InferDesign(true, true, false, t).state, "per-cpu-prng");
  EXPECT_EQ(InferDesign(false, false, true, t).state, "per-cpu-counter");
}

// A per-CPU counter is both the plain-XOR era (v5.13-v6.8) and the ror32 era: BTF cannot tell
// them apart, so the design line must not claim ror32 for both; the offset geometry tells.
TEST(InferDesignTest, PerCpuCounterNamesBothMixings) {
  const std::string s = InferDesign(false, false, true, InputDiagnosis{}).summary;
  EXPECT_NE(s.find("ror32(state, 5) ^ input"), std::string::npos) << s;
  EXPECT_NE(s.find("state ^ input"), std::string::npos) << s;
  EXPECT_NE(s.find("offset geometry"), std::string::npos) << s;
}

TEST(RecordsCsvTest, RoundTripAndErrors) {
  std::vector<LiveRecord> recs = {At(16, 7, 1), At(0, 8, 0)};
  recs[0].task_state = 0xdeadbeef;
  recs[0].flags = kHasTaskState;
  recs[1].ktime_ns = 123456789;
  auto back = RecordsFromCsv(RecordsToCsv(recs));
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].local_addr, recs[0].local_addr);
  EXPECT_EQ((*back)[0].task_state, 0xdeadbeefu);
  EXPECT_EQ((*back)[0].tid, 7u);
  EXPECT_EQ((*back)[1].ktime_ns, 123456789u);
  auto bad =
      RecordsFromCsv("local_addr,stack_base,ktime_ns,cpu,tid,nr,task_state,flags\n0x1,0x2,3\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("line 2"), std::string::npos);
  // The first line is skipped only when it is the header: a file without one keeps
  // its first record, and a first line that is neither is an error naming line 1.
  auto headless = RecordsFromCsv("0x10,0x1,2,1,7,39,0xff,1\n0x20,0x1,3,1,7,39,0xff,1\n");
  ASSERT_TRUE(headless.ok()) << headless.error().message;
  ASSERT_EQ(headless->size(), 2u);
  EXPECT_EQ((*headless)[0].local_addr, 0x10u);
  auto junk = RecordsFromCsv("header\n0x10,0x1,2,1,7,39,0xff,1\n");
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.error().message.find("line 1"), std::string::npos) << junk.error().message;
  // A long field is quoted cut to 40 bytes.
  auto longf = RecordsFromCsv("0x10," + std::string(100000, '7') + ",2,1,7,39,0xff,1\n");
  ASSERT_FALSE(longf.ok());
  EXPECT_LT(longf.error().message.size(), 300u);
  // Strict fields: sscanf took a sign, a leading space and 17 hex digits (saturated); now each is
  // refused naming the field. A CRLF file reads like an LF one.
  const std::string h = "local_addr,stack_base,ktime_ns,cpu,tid,nr,task_state,flags\n";
  for (const char* line : {"0x10,0x1,2,-1,7,39,0x0,0", " 0x10,0x1,2,1,7,39,0x0,0",
                           "0x10,0x1ffffffffffffffff,2,1,7,39,0x0,0", "0x10,0x1,2,1,7,39,0x0,",
                           "0x10,0x1,2,4294967296,7,39,0x0,0"}) {
    auto r = RecordsFromCsv(h + line + "\n");
    EXPECT_FALSE(r.ok()) << line;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("is not an unsigned number"), std::string::npos);
    }
  }
  auto crlf = RecordsFromCsv(h + "0x10,0x1,2,1,7,39,0xff,1\r\n");
  ASSERT_TRUE(crlf.ok()) << crlf.error().message;
  EXPECT_EQ((*crlf)[0].task_state, 0xffu);
  EXPECT_EQ((*crlf)[0].flags, 1u);
}

TEST(RecordsCsvTest, PrngColumnsRoundTripAndOldFilesStillParse) {
  std::vector<LiveRecord> recs = {At(16, 7, 1), At(0, 7, 0)};
  recs[0].flags = kHasPrngState;
  recs[0].prng_state = {0x80000001u, 0x12345678u, 0xfedcba98u, 0x00000080u};
  const std::string csv = RecordsToCsv(recs);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "local_addr,stack_base,ktime_ns,cpu,tid,nr,task_state,flags,prng_s1,prng_s2,prng_s3,"
            "prng_s4");
  auto back = RecordsFromCsv(csv);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].prng_state, recs[0].prng_state);
  EXPECT_EQ((*back)[0].flags, kHasPrngState);
  EXPECT_EQ((*back)[1].prng_state, rng::PrandomState{});
  // The 8-column form (tests/data/live, files saved before the prng columns): no state.
  auto old = RecordsFromCsv(
      "local_addr,stack_base,ktime_ns,cpu,tid,nr,task_state,flags\n0x10,0x1,2,1,7,39,0xff,1\n");
  ASSERT_TRUE(old.ok()) << old.error().message;
  ASSERT_EQ(old->size(), 1u);
  EXPECT_EQ((*old)[0].task_state, 0xffu);
  EXPECT_EQ((*old)[0].flags, kHasTaskState);
  EXPECT_EQ((*old)[0].prng_state, rng::PrandomState{});
  // An 8-column line cannot claim a state it does not hold; 9..11 or 13 fields are neither form.
  auto claims = RecordsFromCsv("0x10,0x1,2,1,7,39,0xff,2\n");
  ASSERT_FALSE(claims.ok());
  EXPECT_NE(claims.error().message.find("no prng_s1..prng_s4"), std::string::npos);
  for (const char* line : {"0x10,0x1,2,1,7,39,0xff,2,0x1", "0x10,0x1,2,1,7,39,0xff,2,1,2,3",
                           "0x10,0x1,2,1,7,39,0xff,2,1,2,3,4,5"}) {
    auto r = RecordsFromCsv(std::string(line) + "\n");
    ASSERT_FALSE(r.ok()) << line;
    EXPECT_NE(r.error().message.find("expected 12"), std::string::npos) << r.error().message;
  }
  // A state word over 32 bits is refused, naming its column.
  auto wide = RecordsFromCsv("0x10,0x1,2,1,7,39,0xff,2,1,2,0x100000000,4\n");
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.error().message.find("prng_s3"), std::string::npos) << wide.error().message;
}

// A v7.1+ kernel by the model: one LFSR113 state per CPU (kstack_rnd_state), stepped by every
// syscall's entry on that CPU (rng::PrandomU32State); the probe reads the state of the CPU the
// syscall exits on.
class PrngKernel {
 public:
  explicit PrngKernel(int cpus) : states_(static_cast<size_t>(cpus)) {
    for (size_t c = 0; c < states_.size(); ++c) {
      rng::PrandomSeedState(states_[c], 0x9e3779b97f4a7c15ull * (c + 1));
      for (int i = 0; i < 10; ++i) rng::PrandomU32State(states_[c]);
    }
  }
  // The entry's draw on `cpu`: the offset (v6.11+ geometry) of one syscall.
  uint32_t Draw(uint32_t cpu) {
    return kstack::kGeometryV611.Apply(rng::PrandomU32State(states_[cpu]));
  }
  // Syscalls of other tasks on `cpu`.
  void Others(uint32_t cpu, int n) {
    for (int i = 0; i < n; ++i) rng::PrandomU32State(states_[cpu]);
  }
  // The record of a syscall that drew `offset` and exited on `cpu`.
  LiveRecord Probe(uint32_t offset, uint32_t cpu) const {
    LiveRecord r = At(offset, 1, cpu);
    r.flags = kHasPrngState;
    r.prng_state = states_[cpu];
    return r;
  }
  // A syscall that entered and exited on `cpu` with nothing in between.
  LiveRecord Syscall(uint32_t cpu) { return Probe(Draw(cpu), cpu); }
  const rng::PrandomState& State(uint32_t cpu) const { return states_[cpu]; }

 private:
  std::vector<rng::PrandomState> states_;
};

std::vector<uint32_t> TrueOffsets(const std::vector<LiveRecord>& recs) {
  std::vector<uint32_t> o;
  for (const LiveRecord& r : recs)
    o.push_back(static_cast<uint32_t>(kAnchor - (r.local_addr - r.stack_base)));
  return o;
}

TEST(PrngCheckTest, EveryRecordOfTheModelAgreesAndFollows) {
  PrngKernel kernel(2);
  std::mt19937 gen(3);
  std::vector<LiveRecord> recs;
  std::vector<uint64_t> steps;              // k of each pair, as the test made it
  std::vector<bool> seen = {false, false};  // a CPU's first record starts its chain
  for (int i = 0; i < 3000; ++i) {
    const auto cpu = static_cast<uint32_t>(gen() % 2);
    const int others = static_cast<int>(gen() % 4);  // other tasks' syscalls there first
    kernel.Others(cpu, others);
    if (seen[cpu]) steps.push_back(static_cast<uint64_t>(others + 1));
    seen[cpu] = true;
    recs.push_back(kernel.Syscall(cpu));
  }
  auto d = DeriveOffsets(recs);  // the offsets as entropy --kernel derives them
  ASSERT_TRUE(d.ok()) << d.error().message;
  ASSERT_STREQ(d->geometry.name, kstack::kGeometryV611.name);
  auto c = CheckPrngStates(recs, d->offsets, d->geometry);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->checked, 3000u);
  EXPECT_EQ(c->agreeing, 3000u);
  EXPECT_TRUE(c->mismatches.empty());
  EXPECT_EQ(c->pairs, 2998u);
  EXPECT_EQ(c->following, 2998u);
  EXPECT_EQ(c->unchanged, 0u);
  EXPECT_EQ(c->broken, 0u);
  EXPECT_TRUE(c->breaks.empty());
  std::sort(steps.begin(), steps.end());
  ASSERT_EQ(steps.size(), 2998u);
  EXPECT_EQ(c->median_steps, steps[(steps.size() - 1) / 2]);
  EXPECT_EQ(c->max_steps, steps.back());
  EXPECT_EQ(c->max_steps, 4u);
  // Records without the state are not checked; the sizes must match.
  for (LiveRecord& r : recs) r.flags = kHasTaskState;
  auto none = CheckPrngStates(recs, d->offsets, d->geometry);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->checked, 0u);
  EXPECT_EQ(none->pairs, 0u);
  EXPECT_FALSE(CheckPrngStates(recs, std::vector<uint32_t>{0}, d->geometry).ok());
}

TEST(PrngCheckTest, AStateSteppedOnceMoreThanItsDrawIsAMismatchThatStillFollows) {
  // Record 2 was preempted between its draw and its probe, and another task's syscall drew on
  // the same CPU: the state it carries is one step past its offset's draw.
  PrngKernel kernel(1);
  std::vector<LiveRecord> recs = {kernel.Syscall(0), kernel.Syscall(0)};
  const uint32_t offset = kernel.Draw(0);
  kernel.Others(0, 1);
  recs.push_back(kernel.Probe(offset, 0));
  ASSERT_NE(kstack::kGeometryV611.Apply(recs.back().prng_state.s1 ^ recs.back().prng_state.s2 ^
                                        recs.back().prng_state.s3 ^ recs.back().prng_state.s4),
            offset);  // this seed's extra draw gives another offset
  recs.push_back(kernel.Syscall(0));
  auto c = CheckPrngStates(recs, TrueOffsets(recs), kstack::kGeometryV611);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->checked, 4u);
  EXPECT_EQ(c->agreeing, 3u);
  EXPECT_EQ(c->mismatches, (std::vector<size_t>{2}));
  EXPECT_EQ(c->pairs, 3u);
  EXPECT_EQ(c->following, 3u);
  EXPECT_EQ(c->broken, 0u);
  EXPECT_EQ(c->max_steps, 2u);  // record 1 -> 2: its own draw and the other task's
}

TEST(PrngCheckTest, AnotherCpusStateIsAMismatchAndBreaksTheChain) {
  // Record 2 says CPU 0 and holds CPU 0's offset, but the state of CPU 1: the chain of CPU 0
  // breaks into it and out of it.
  PrngKernel kernel(2);
  std::vector<LiveRecord> recs = {kernel.Syscall(0), kernel.Syscall(1), kernel.Syscall(0)};
  recs[2].prng_state = kernel.State(1);
  recs.push_back(kernel.Syscall(0));
  auto c = CheckPrngStates(recs, TrueOffsets(recs), kstack::kGeometryV611);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->agreeing, 3u);
  EXPECT_EQ(c->mismatches, (std::vector<size_t>{2}));
  EXPECT_EQ(c->pairs, 2u);  // CPU 0: 0 -> 2, 2 -> 3
  EXPECT_EQ(c->following, 0u);
  EXPECT_EQ(c->broken, 2u);
  EXPECT_EQ(c->breaks, (std::vector<size_t>{2, 3}));
}

TEST(PrngCheckTest, AMigrationBetweenDrawAndProbeIsAMismatchOnly) {
  // Record 2 drew on CPU 0 and exited on CPU 1, where the probe read CPU 1's state; record 4
  // likewise after another task's syscall on CPU 1.
  PrngKernel kernel(2);
  std::vector<LiveRecord> recs = {kernel.Syscall(0), kernel.Syscall(1)};
  recs.push_back(kernel.Probe(kernel.Draw(0), 1));  // CPU 1's state unchanged since record 1
  recs.push_back(kernel.Syscall(0));                // CPU 0: 2 steps since record 0
  const uint32_t migrated = kernel.Draw(0);
  kernel.Others(1, 1);
  recs.push_back(kernel.Probe(migrated, 1));
  recs.push_back(kernel.Syscall(1));
  const std::vector<uint32_t> offsets = TrueOffsets(recs);
  auto c = CheckPrngStates(recs, offsets, kstack::kGeometryV611);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->checked, 6u);
  // Each migrated record disagrees unless CPU 1's state happens to give the same offset.
  std::vector<size_t> expected;
  for (size_t i : {size_t{2}, size_t{4}}) {
    const rng::PrandomState& s = recs[i].prng_state;
    if (kstack::kGeometryV611.Apply(s.s1 ^ s.s2 ^ s.s3 ^ s.s4) != offsets[i]) expected.push_back(i);
  }
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(c->mismatches, expected);
  EXPECT_EQ(c->agreeing, 6u - expected.size());
  // CPU 1: 1 -> 2 repeats the state, 2 -> 4 one step, 4 -> 5 one; CPU 0: 0 -> 3 two steps.
  EXPECT_EQ(c->pairs, 4u);
  EXPECT_EQ(c->unchanged, 1u);
  EXPECT_EQ(c->following, 3u);
  EXPECT_EQ(c->broken, 0u);
  EXPECT_EQ(c->median_steps, 1u);
  EXPECT_EQ(c->max_steps, 2u);
}

TEST(PrngCheckTest, StepsBeyondTheBoundAreABreak) {
  PrngKernel kernel(1);
  std::vector<LiveRecord> recs = {kernel.Syscall(0)};
  kernel.Others(0, static_cast<int>(kMaxPrngSteps) - 1);
  recs.push_back(kernel.Syscall(0));  // exactly kMaxPrngSteps steps: follows
  kernel.Others(0, static_cast<int>(kMaxPrngSteps));
  recs.push_back(kernel.Syscall(0));  // one more: a break
  auto c = CheckPrngStates(recs, TrueOffsets(recs), kstack::kGeometryV611);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->agreeing, 3u);
  EXPECT_EQ(c->following, 1u);
  EXPECT_EQ(c->max_steps, kMaxPrngSteps);
  EXPECT_EQ(c->breaks, (std::vector<size_t>{2}));
}

// A per-task counter fed by tsc_after + delta: with an exact clock the full-state attacker always
// wins and the leak attacker converges; with a random input both are at chance.
TimerAttackData CounterRun(bool tsc_input, size_t n,
                           const kstack::OffsetGeometry& g = kstack::kGeometryV611) {
  TimerAttackData d;
  uint32_t state = 0;
  uint64_t tsc = 0x2d296e0000000ull;
  uint64_t lcg = 11;
  for (size_t k = 0; k < n; ++k) {
    LiveRecord r = At(g.Apply(state));
    r.task_state = state;
    r.flags = kHasTaskState;
    d.records.push_back(r);
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    tsc += 2000 + (lcg >> 54);  // 2000..3023 ticks between calls
    d.tsc_after.push_back(tsc);
    const uint32_t input =
        tsc_input ? static_cast<uint32_t>(tsc - 800) : static_cast<uint32_t>(lcg >> 20);
    state = std::rotr(state, 5) ^ input;
  }
  return d;
}

std::vector<uint32_t> OffsetsOf(const TimerAttackData& d,
                                const kstack::OffsetGeometry& g = kstack::kGeometryV611) {
  std::vector<uint32_t> o;
  for (const LiveRecord& r : d.records) o.push_back(g.Apply(r.task_state));
  return o;
}

TEST(TimerAttackTest, ExactClockIsFullyPredictable) {
  const TimerAttackData d = CounterRun(true, 4000);
  auto rep = AnalyzeTimerAttack(d, OffsetsOf(d), kstack::kGeometryV611);
  ASSERT_TRUE(rep.ok()) << rep.error().message;
  EXPECT_EQ(rep->delta, -800);
  EXPECT_EQ(rep->within_16, 1.0);
  ASSERT_EQ(rep->attackers.size(), 3u);
  EXPECT_EQ(rep->attackers[0].name, "guess");
  EXPECT_EQ(rep->attackers[1].name, "tsc+leaks");
  EXPECT_EQ(rep->attackers[2].name, "tsc+state");
  EXPECT_EQ(rep->attackers[2].predictions, 1999u);
  EXPECT_EQ(rep->attackers[2].correct, 1999u);
  EXPECT_EQ(rep->attackers[1].correct, 1999u);  // converged long before the scored half
  EXPECT_NEAR(rep->attackers[2].conditional_entropy_bits, 0.0, 1e-9);
  EXPECT_LT(rep->attackers[0].correct_fraction, 0.05);
}

TEST(TimerAttackTest, ExactClockIsFullyPredictableOnAnOlderKernelToo) {
  // x & 0x3FF rounded up to 8 (Debian 12's 6.1): the state attacker still always wins, and the
  // leak attacker, whose estimate supplies the 3 low bits the rounding hides, converges too.
  const kstack::OffsetGeometry& g = kstack::kGeometryPreV611X86;
  const TimerAttackData d = CounterRun(true, 4000, g);
  auto rep = AnalyzeTimerAttack(d, OffsetsOf(d, g), g);
  ASSERT_TRUE(rep.ok()) << rep.error().message;
  EXPECT_EQ(rep->attackers[2].correct, 1999u);
  EXPECT_EQ(rep->attackers[1].correct, 1999u);
  EXPECT_LT(rep->attackers[0].correct_fraction, 0.05);
}

TEST(TimerAttackTest, RandomInputIsAtChance) {
  const TimerAttackData d = CounterRun(false, 3000);
  auto rep = AnalyzeTimerAttack(d, OffsetsOf(d), kstack::kGeometryV611);
  ASSERT_TRUE(rep.ok());
  for (const AttackerScore& a : rep->attackers) EXPECT_LT(a.correct_fraction, 0.05) << a.name;
}

TEST(TimerAttackTest, NeedsStateAndEnoughCalls) {
  TimerAttackData d = CounterRun(true, 1000);
  const kstack::OffsetGeometry& g = kstack::kGeometryV611;
  EXPECT_FALSE(AnalyzeTimerAttack(d, std::vector<uint32_t>(10), g).ok());
  for (LiveRecord& r : d.records) r.flags = 0;
  EXPECT_FALSE(AnalyzeTimerAttack(d, OffsetsOf(d), g).ok());
  TimerAttackData small = CounterRun(true, 100);
  EXPECT_FALSE(AnalyzeTimerAttack(small, OffsetsOf(small), g).ok());
}

TEST(MigrationScoreTest, CountsStaleOffsetsOfMigratedRounds) {
  MigrationData d;
  d.records = {At(16), At(16), At(32), At(48), At(64), At(64)};
  const std::vector<uint32_t> offsets = {16, 16, 32, 48, 64, 64};
  d.rounds = {{0, 1, 0, 1},   // migrated, stale (16 == 16)
              {1, 0, 2, 3},   // migrated, not stale
              {0, 0, 4, 5}};  // did not migrate: not scored
  const MigrationScore s = ScoreMigration(d, offsets, kstack::kGeometryV611);
  EXPECT_EQ(s.rounds, 3u);
  EXPECT_EQ(s.migrated, 2u);
  EXPECT_EQ(s.stale, 1u);
  EXPECT_DOUBLE_EQ(s.stale_fraction, 0.5);
}

// Recorded with `kstacklab entropy --kernel --samples 4096 --save-records` on the project's
// machine (Linux 6.18.44, per-task counter design, see docs/live.md).
TEST(FixtureTest, RecordedGetpidOffsets) {
  const std::vector<LiveRecord> recs = LoadFixture("getpid-4096.csv");
  ASSERT_EQ(recs.size(), 4096u);
  auto d = DeriveOffsets(recs);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->spread, 1008u);
  EXPECT_EQ(d->state_checked, 4096u);
  EXPECT_EQ(d->state_agreeing, 4096u);  // every derived offset = task_struct.kstack_offset & 0x3F0
  std::set<uint32_t> distinct(d->offsets.begin(), d->offsets.end());
  EXPECT_EQ(distinct.size(), 64u);
  auto stats = analysis::AnalyzeOffsets(d->offsets);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->distinct, 64);
  EXPECT_EQ(stats->script_bits, 7);
  // The kernel input of this design is the TSC: it increases between consecutive syscalls.
  const InputDiagnosis in = DiagnoseInputs(recs);
  EXPECT_EQ(in.pairs, 4094u);
  EXPECT_EQ(InferDesign(true, false, false, in).input, "tsc-like");
  // Serial dependence at lag 1 on this recording: no more than the estimator's own bias.
  EXPECT_EQ(d->geometry.mask, 0x3F0u);
  auto deps = SerialDependence(recs, d->offsets, d->geometry, 1, 8, 1);
  ASSERT_TRUE(deps.ok());
  const LagDependence& lag1 = (*deps)[0];
  EXPECT_EQ(lag1.mi.pairs, 4095u);
  // With 4095 pairs over 4096 cells the plug-in bias is large (~0.8 bit) and Miller-Madow
  // under-corrects; the shuffled baseline is the reference: the real MI lies within it.
  EXPECT_GT(lag1.mi.plugin_bits, 0.5);
  EXPECT_LT(lag1.mi.plugin_bits, lag1.shuffled_plugin_max_bits + 0.02);
  EXPECT_GT(lag1.mi.plugin_bits, lag1.shuffled_plugin_bits - 0.05);
}

// Recorded the same way on Debian 12's own kernel (6.1.0-57-amd64, 6.1.192) booted under QEMU
// (scripts/pku-qemu.sh's guest): the older KSTACK_OFFSET_MAX (x & 0x3FF, rounded up to the 8-byte
// stack alignment), with the per-task state of the 2026 series backported to 6.1 stable.
TEST(FixtureTest, RecordedGetpidOffsetsOfAnOlderKernel) {
  const std::vector<LiveRecord> recs = LoadFixture("getpid-4096-debian-6.1.csv");
  ASSERT_EQ(recs.size(), 4096u);
  auto d = DeriveOffsets(recs);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->geometry.mask, 0x3FFu);
  EXPECT_EQ(d->geometry.align, 8u);
  EXPECT_EQ(d->spread, 1024u);
  EXPECT_EQ(d->state_checked, 4096u);
  EXPECT_EQ(d->state_agreeing, 4096u);  // every offset = (kstack_offset & 0x3FF) rounded up to 8
  auto stats = analysis::AnalyzeOffsets(d->offsets, d->geometry);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->distinct, 129);
  EXPECT_GT(stats->shannon_bits, 6.9);   // ideal 7.00 (plug-in biased low at n = 4096)
  EXPECT_GT(stats->chi_square_p, 1e-3);  // consistent with the uneven ideal distribution
  // ... which the v6.11+ analysis would refuse: 8 is not one of its offsets.
  EXPECT_FALSE(analysis::AnalyzeOffsets(d->offsets).ok());
  EXPECT_EQ(InferDesign(true, false, false, DiagnoseInputs(recs)).input, "tsc-like");
  auto deps = SerialDependence(recs, d->offsets, d->geometry, 1, 8, 1);
  ASSERT_TRUE(deps.ok()) << deps.error().message;
  EXPECT_LT((*deps)[0].mi.plugin_bits, (*deps)[0].shuffled_plugin_max_bits + 0.05);
}

// The probe on this kernel. CI runs as root on the project's machine, so this runs there.
TEST(LiveProbeTest, FindsSixtyFourOffsetsOnThisKernel) {
  if (!ProbeBuilt()) GTEST_SKIP() << "this build has no BPF probe (libbpf/clang/bpftool)";
  // qemu-user hands bpf() to the host kernel, which is another architecture than the program's:
  // the arm64 probe is run on an arm64 kernel by tests/cross/campaign_qemu_arm64.sh instead.
  KSTACKLAB_SKIP_IF_EMULATED("the BPF program would load into the host's (x86-64) kernel");
  std::string prng_unreadable;
  auto recs = Collect(CollectOptions{SYS_getpid, 4096, -1}, &prng_unreadable);
  if (!recs.ok() && geteuid() != 0) {
    GTEST_SKIP() << "BPF unavailable: " << recs.error().message;
  }
  ASSERT_TRUE(recs.ok()) << recs.error().message;
  ASSERT_EQ(recs->size(), 4096u);
  for (const LiveRecord& r : *recs) {
    ASSERT_EQ(r.nr, SYS_getpid);
    ASSERT_EQ(r.tid, static_cast<uint32_t>(syscall(SYS_gettid)));
  }
  auto d = DeriveOffsets(*recs);
  ASSERT_TRUE(d.ok()) << d.error().message;
  std::set<uint32_t> distinct(d->offsets.begin(), d->offsets.end());
  // Uniform offsets miss one of 64 values in 4096 draws with probability < 64 (63/64)^4096
  // ~ 1e-26.
  // The number of distinct offsets depends on the kernel's geometry: all 64 on v6.11+; on an
  // older x86-64 kernel offset 0 is drawn once in 1024 calls and is missed in 4096 with
  // probability 1.8 %, every other one with probability < 1e-12.
  if (d->geometry.mask == kstack::kGeometryV611.mask) {
    EXPECT_EQ(distinct.size(), 64u);
  } else {
    EXPECT_GE(distinct.size(), d->geometry.count() - 1);
  }
  for (uint32_t o : d->offsets) EXPECT_TRUE(d->geometry.Contains(o)) << o;
  if (d->state_checked > 0) {
    EXPECT_EQ(d->state_agreeing, d->state_checked);
  }
  // The generator's state is in every record where BTF declares kstack_rnd_state (v7.1+) and the
  // kernel accepts the program that reads it, in none elsewhere.
  const std::optional<BtfDesignHints> hints = ReadBtfDesignHints();
  ASSERT_TRUE(hints.has_value());
  const bool expect_prng = hints->prng_state && prng_unreadable.empty();
  if (!hints->prng_state) {
    EXPECT_EQ(prng_unreadable, "");
  }
  for (const LiveRecord& r : *recs) {
    ASSERT_EQ((r.flags & kHasPrngState) != 0, expect_prng) << prng_unreadable;
  }
  auto c = CheckPrngStates(*recs, d->offsets, d->geometry);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->checked, expect_prng ? 4096u : 0u);
  if (expect_prng) {
    // Only a preemption or a migration between a draw and its probe disagrees.
    EXPECT_GE(c->agreeing, c->checked * 99 / 100);
    EXPECT_EQ(c->broken, 0u);
  }
}

}  // namespace
}  // namespace kstacklab::live
