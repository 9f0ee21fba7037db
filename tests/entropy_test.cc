// Offset entropy statistics (include/kstacklab/analysis/entropy.h) against hand-computed values.
#include "kstacklab/analysis/entropy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kstacklab/common/dice.h"
#include "kstacklab/kstack/policies.h"

namespace kstacklab::analysis {
namespace {

std::vector<uint32_t> AllOffsets(int times) {
  std::vector<uint32_t> v;
  for (int t = 0; t < times; ++t) {
    for (uint32_t b = 0; b < kOffsetBins; ++b) v.push_back(b * kOffsetStep);
  }
  return v;
}

TEST(EntropyTest, AllSixtyFourOffsetsOnce) {
  auto s = AnalyzeOffsets(AllOffsets(1));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->samples, 64u);
  EXPECT_EQ(s->distinct, 64);
  EXPECT_DOUBLE_EQ(s->shannon_bits, 6.0);
  EXPECT_DOUBLE_EQ(s->min_entropy_bits, 6.0);
  EXPECT_DOUBLE_EQ(s->chi_square, 0.0);
  EXPECT_DOUBLE_EQ(s->chi_square_p, 1.0);
  EXPECT_EQ(s->script_bits, 7);  // stack-entropy.sh over-reports 64 as 7
  EXPECT_DOUBLE_EQ(s->repeat_rate, 0.0);
}

TEST(EntropyTest, PerfectlyUniformManyTimes) {
  auto s = AnalyzeOffsets(AllOffsets(10));
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->shannon_bits, 6.0);
  EXPECT_DOUBLE_EQ(s->chi_square, 0.0);
  EXPECT_DOUBLE_EQ(s->chi_square_p, 1.0);
}

TEST(EntropyTest, SingleValueIsZeroBits) {
  const std::vector<uint32_t> v(100, 512);
  auto s = AnalyzeOffsets(v);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->distinct, 1);
  EXPECT_DOUBLE_EQ(s->shannon_bits, 0.0);
  EXPECT_DOUBLE_EQ(s->min_entropy_bits, 0.0);
  EXPECT_EQ(s->script_bits, 1);
  EXPECT_DOUBLE_EQ(s->repeat_rate, 1.0);
  // n = 100, E = 100/64 = 1.5625: 63 bins of E^2/E = E, one of (100-E)^2/E.
  const double e = 100.0 / 64;
  EXPECT_NEAR(s->chi_square, 63 * e + (100 - e) * (100 - e) / e, 1e-9);  // = 6300
  EXPECT_NEAR(s->chi_square, 6300.0, 1e-9);
  EXPECT_LT(s->chi_square_p, 1e-100);
}

TEST(EntropyTest, TwoValuesEquallyIsOneBit) {
  const std::vector<uint32_t> v = {0, 16, 0, 16};
  auto s = AnalyzeOffsets(v);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->distinct, 2);
  EXPECT_DOUBLE_EQ(s->shannon_bits, 1.0);
  EXPECT_DOUBLE_EQ(s->min_entropy_bits, 1.0);
  EXPECT_EQ(s->script_bits, 2);
  EXPECT_DOUBLE_EQ(s->repeat_rate, 0.0);
}

TEST(EntropyTest, SmallCaseByHand) {
  // Offsets 0,0,0,32: p = 3/4, 1/4.
  // Shannon = -(3/4 log2 3/4 + 1/4 log2 1/4) = 2 - (3/4) log2 3 = 0.8112781244591328.
  // Min-entropy = -log2(3/4) = 0.4150374992788438.
  // Repeats: (0,0), (0,0) of 3 pairs = 2/3.
  // Chi-square: E = 4/64 = 1/16; bin 0: (3 - 1/16)^2 * 16 = 138.0625; bin 2: (1 - 1/16)^2 * 16
  // = 14.0625; 62 empty bins: 62/16 = 3.875; total 156.
  const std::vector<uint32_t> v = {0, 0, 0, 32};
  auto s = AnalyzeOffsets(v);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->distinct, 2);
  EXPECT_NEAR(s->shannon_bits, 0.8112781244591328, 1e-12);
  EXPECT_NEAR(s->min_entropy_bits, 0.4150374992788438, 1e-12);
  EXPECT_NEAR(s->repeat_rate, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(s->chi_square, 156.0, 1e-9);
  EXPECT_EQ(s->script_bits, 2);
}

TEST(EntropyTest, WeightsAndMillerMadowByHand) {
  // Weights 3 : 1 are the distribution of SmallCaseByHand.
  const std::vector<double> w = {0.75, 0.25, 0.0};
  EXPECT_NEAR(ShannonBits(w), 0.8112781244591328, 1e-12);
  EXPECT_DOUBLE_EQ(ShannonBits(std::vector<double>{0.0, 0.0}), 0.0);
  EXPECT_DOUBLE_EQ(ShannonBits(std::vector<double>{}), 0.0);
  // Counts 3, 1: plug-in 0.811278..., m = 2, n = 4: + 1 / (8 ln 2) bits.
  const std::vector<uint64_t> h = {3, 1, 0};
  EXPECT_NEAR(MillerMadowBits(h), 0.8112781244591328 + 1 / (8 * std::log(2.0)), 1e-12);
  EXPECT_DOUBLE_EQ(MillerMadowBits(std::vector<uint64_t>{0, 0}), 0.0);
  EXPECT_DOUBLE_EQ(MillerMadowBits(std::vector<uint64_t>{7}), 0.0);  // m = 1: no correction
}

TEST(EntropyTest, ConditionalEntropyByHand) {
  // Rows y: y = 0 has x uniform over 2 values (1 bit), y = 1 has x fixed (0 bits), P(y = 0) =
  // 1/2: plug-in 0.5 bits; Miller-Madow adds (3 occupied cells - 2 occupied rows) / (2 * 4 ln 2).
  const std::vector<uint64_t> joint = {1, 1, 2, 0};
  EXPECT_NEAR(ConditionalEntropyBits(joint, 2), 0.5 + 1 / (8 * std::log(2.0)), 1e-12);
  EXPECT_DOUBLE_EQ(ConditionalEntropyBits(std::vector<uint64_t>{}, 64), 0.0);
  // x determined by y in every row: 0, whatever n (one cell per occupied row).
  EXPECT_DOUBLE_EQ(ConditionalEntropyBits(std::vector<uint64_t>{0, 0, 5, 0, 0, 9}, 2), 0.0);
}

// The review's case: x uniform over 64 values, independent of y (64 values), 20 000 pairs. The
// plug-in H(X | Y) sees ~312 samples per row and reports ~5.85 bits; Miller-Madow is within 0.03
// of the true 6 (residual bias ~ -0.007, spread ~0.005 over seeds).
TEST(EntropyTest, ConditionalEntropyOfAUniformSourceIsSixBits) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    Dice dice(seed);
    std::vector<uint64_t> joint(64 * 64, 0);
    std::vector<uint64_t> rows(64, 0);
    for (int i = 0; i < 20000; ++i) {
      const uint64_t y = dice.Below(64);
      ++joint[y * 64 + dice.Below(64)];
      ++rows[y];
    }
    const double corrected = ConditionalEntropyBits(joint, 64);
    EXPECT_LT(std::fabs(corrected - 6.0), 0.03) << "seed " << seed << ": " << corrected;
    const double plugin = ShannonBits(joint) - ShannonBits(rows);
    EXPECT_LT(plugin, 5.9) << "seed " << seed;  // the bias the correction removes
  }
}

TEST(EntropyTest, ChiSquarePValueKnownQuantiles) {
  // Tables: chi-square with 1 dof, P(X >= 3.841458820694124) = 0.05; 2 dof: P(X >= x) =
  // exp(-x/2), so x = 2 ln 2 gives 0.5. 63 dof: the median is close to 62.335.
  EXPECT_NEAR(ChiSquarePValue(3.841458820694124, 1), 0.05, 1e-12);
  EXPECT_NEAR(ChiSquarePValue(2 * std::log(2.0), 2), 0.5, 1e-12);
  EXPECT_NEAR(ChiSquarePValue(62.335, 63), 0.5, 1e-3);
  EXPECT_DOUBLE_EQ(ChiSquarePValue(0.0), 1.0);
}

TEST(EntropyTest, StackEntropyScriptBits) {
  // bits = length of `echo "obase=2; $seen" | bc`; seen 0 prints "0", one digit.
  EXPECT_EQ(StackEntropyScriptBits(0), 1);
  EXPECT_EQ(StackEntropyScriptBits(1), 1);
  EXPECT_EQ(StackEntropyScriptBits(2), 2);
  EXPECT_EQ(StackEntropyScriptBits(3), 2);
  EXPECT_EQ(StackEntropyScriptBits(32), 6);
  EXPECT_EQ(StackEntropyScriptBits(63), 6);
  EXPECT_EQ(StackEntropyScriptBits(64), 7);
  EXPECT_EQ(StackEntropyScriptBits(128), 8);
}

TEST(EntropyTest, EmptyAndRejected) {
  auto empty = AnalyzeOffsets({});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->samples, 0u);
  EXPECT_EQ(empty->distinct, 0);
  EXPECT_DOUBLE_EQ(empty->shannon_bits, 0.0);
  EXPECT_DOUBLE_EQ(empty->chi_square_p, 1.0);
  EXPECT_EQ(empty->script_bits, 1);
  EXPECT_DOUBLE_EQ(RepeatRate(0, 1), 0.0);

  const std::vector<uint32_t> bad = {0, 8};
  auto s = AnalyzeOffsets(bad);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("offset 8"), std::string::npos);
  OffsetTally t;
  EXPECT_FALSE(t.Add(1024));
  EXPECT_TRUE(t.Add(1008));
  EXPECT_EQ(t.samples(), 1u);
}

// The offset geometries of include/linux/randomize_kstack.h's eras (kstack/apply.h), by hand.
TEST(OffsetGeometryTest, V611AndOlderKernels) {
  const kstack::OffsetGeometry& v611 = kstack::kGeometryV611;
  EXPECT_EQ(v611.Apply(0xffffffffu), 1008u);
  EXPECT_EQ(v611.Apply(0x0000000fu), 0u);
  EXPECT_EQ(v611.count(), 64u);
  const kstack::OffsetGeometry& x86 = kstack::kGeometryPreV611X86;
  EXPECT_EQ(x86.Apply(0), 0u);
  EXPECT_EQ(x86.Apply(1), 8u);  // alloca(1) rounded up to 8
  EXPECT_EQ(x86.Apply(8), 8u);
  EXPECT_EQ(x86.Apply(9), 16u);
  EXPECT_EQ(x86.Apply(0x3FF), 1024u);
  EXPECT_EQ(x86.Apply(0xfffffc00u), 0u);  // only the low 10 bits count
  EXPECT_EQ(x86.max(), 1024u);
  EXPECT_EQ(x86.count(), 129u);
  EXPECT_TRUE(x86.Contains(1024));
  EXPECT_FALSE(x86.Contains(1032));
  EXPECT_FALSE(x86.Contains(4));
  EXPECT_EQ(kstack::kGeometryPreV611Align16.count(), 65u);
  // Offset 0 only for x & 0x3FF = 0; 1024 for 1017..1023; every other for 8 values.
  EXPECT_DOUBLE_EQ(x86.Probability(0), 1.0 / 1024);
  EXPECT_DOUBLE_EQ(x86.Probability(1), 8.0 / 1024);
  EXPECT_DOUBLE_EQ(x86.Probability(128), 7.0 / 1024);
  EXPECT_DOUBLE_EQ(v611.Probability(5), 1.0 / 64);
  double total = 0;
  for (uint32_t b = 0; b < x86.count(); ++b) total += x86.Probability(b);
  EXPECT_DOUBLE_EQ(total, 1.0);
  // Ideal entropies and chances: 6 bits and 1/64 for v6.11+;
  // -(1/1024 log2(1/1024) + 127 * 8/1024 log2(8/1024) + 7/1024 log2(7/1024)) for x86-64 before.
  EXPECT_DOUBLE_EQ(analysis::IdealShannonBits(v611), 6.0);
  const double x86_bits =
      -(1.0 / 1024 * std::log2(1.0 / 1024) + 127 * 8.0 / 1024 * std::log2(8.0 / 1024) +
        7.0 / 1024 * std::log2(7.0 / 1024));
  EXPECT_NEAR(analysis::IdealShannonBits(x86), x86_bits, 1e-12);
  EXPECT_NEAR(x86_bits, 7.004, 0.001);
  EXPECT_DOUBLE_EQ(analysis::ChanceOfEqualOffsets(v611), 1.0 / 64);
  EXPECT_DOUBLE_EQ(analysis::BestBlindGuess(x86), 8.0 / 1024);
  EXPECT_NEAR(analysis::ChanceOfEqualOffsets(x86), (1 + 127 * 64 + 49) / (1024.0 * 1024), 1e-15);
}

TEST(EntropyTest, AnalyzeOffsetsOfAnOlderKernel) {
  // Exactly the ideal counts of x86-64 before v6.11 over 1024 draws: chi2 = 0, p = 1, 129 distinct.
  const kstack::OffsetGeometry& g = kstack::kGeometryPreV611X86;
  std::vector<uint32_t> offsets;
  for (uint32_t x = 0; x < 1024; ++x) offsets.push_back(g.Apply(x));
  auto s = analysis::AnalyzeOffsets(offsets, g);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->distinct, 129);
  EXPECT_NEAR(s->chi_square, 0.0, 1e-9);
  EXPECT_DOUBLE_EQ(s->chi_square_p, 1.0);
  EXPECT_NEAR(s->shannon_bits, analysis::IdealShannonBits(g), 1e-12);
  // The same draws are far from uniform over 129 bins only at the two rare ends; an all-equal
  // count per bin (uniform) is not the ideal: chi2 large.
  std::vector<uint32_t> flat;
  for (uint32_t b = 0; b < 129; ++b) flat.insert(flat.end(), 64, b * 8);
  auto f = analysis::AnalyzeOffsets(flat, g);
  ASSERT_TRUE(f.ok());
  EXPECT_LT(f->chi_square_p, 1e-6);
  // Offsets of another geometry are refused with the geometry's name.
  auto bad = analysis::AnalyzeOffsets(std::vector<uint32_t>{4}, g);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("129 offsets"), std::string::npos) << bad.error().message;
}

TEST(EntropyTest, OffPolicyHasNoEntropy) {
  const kstack::PolicyDef* off = kstack::FindPolicy("off");
  ASSERT_NE(off, nullptr);
  auto p = off->boot();
  ASSERT_TRUE(p.ok());
  OffsetTally t;
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(t.Add(off->next_offset(p->get())));
  const EntropyStats s = Analyze(t);
  EXPECT_EQ(s.distinct, 1);
  EXPECT_DOUBLE_EQ(s.shannon_bits, 0.0);
  EXPECT_DOUBLE_EQ(s.repeat_rate, 1.0);
}

TEST(SamplePolicy, BootsAndDrawsFromTheTableRow) {
  auto off = SamplePolicy(*kstack::FindPolicy("off"), 100);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->samples, 100u);
  EXPECT_EQ(off->distinct, 1);
  EXPECT_EQ(off->repeat_rate, 1.0);
  // siphash: 10 offsets per hash; 6400 draws of a keyed PRF see all 64 offsets (a miss has
  // probability < 64 * (63/64)^6400, about 1e-42).
  auto siphash = SamplePolicy(*kstack::FindPolicy("siphash"), 6400);
  ASSERT_TRUE(siphash.ok());
  EXPECT_EQ(siphash->distinct, 64);
}

TEST(MutualInformationTest, HandComputed) {
  // y = x, two equiprobable values: MI = H = 1 bit; H(Y|X) = 0 (Miller-Madow: 2 cells - 2 rows
  // adds nothing). MI Miller-Madow: cells 2, 2, 2 -> correction (1 + 1 - 1) / (2 * 4) nats.
  const std::vector<uint8_t> x = {0, 1, 0, 1};
  auto same = MutualInformationBits(x, x);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->pairs, 4u);
  EXPECT_NEAR(same->plugin_bits, 1.0, 1e-12);
  EXPECT_NEAR(same->conditional_bits, 0.0, 1e-12);
  EXPECT_NEAR(same->miller_madow_bits, 1.0 + 0.125 / std::log(2.0), 1e-12);
  // Independent by construction: every (x, y) cell once. MI = 0; H(Y|X) = 1 plug-in, plus the
  // Miller-Madow term (4 cells - 2 rows) / (2 * 4) nats; MI Miller-Madow: (1 + 1 - 3) / 8 nats
  // below zero.
  auto indep =
      MutualInformationBits(std::vector<uint8_t>{0, 0, 1, 1}, std::vector<uint8_t>{0, 1, 0, 1});
  ASSERT_TRUE(indep.ok());
  EXPECT_NEAR(indep->plugin_bits, 0.0, 1e-12);
  EXPECT_NEAR(indep->conditional_bits, 1.0 + 0.25 / std::log(2.0), 1e-12);
  EXPECT_NEAR(indep->miller_madow_bits, -0.125 / std::log(2.0), 1e-12);
}

TEST(MutualInformationTest, EdgeCases) {
  auto empty = MutualInformationBits({}, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->pairs, 0u);
  EXPECT_EQ(empty->plugin_bits, 0.0);
  EXPECT_FALSE(MutualInformationBits(std::vector<uint8_t>{1}, std::vector<uint8_t>{}).ok());
  EXPECT_FALSE(MutualInformationBits(std::vector<uint8_t>{64}, std::vector<uint8_t>{0}).ok());
  // An older kernel's 129 bins: bin 128 (offset 1024) counts, 129 does not.
  auto wide =
      MutualInformationBits(std::vector<uint8_t>{128, 0}, std::vector<uint8_t>{0, 128}, 129);
  ASSERT_TRUE(wide.ok());
  EXPECT_NEAR(wide->plugin_bits, 1.0, 1e-12);
  EXPECT_FALSE(MutualInformationBits(std::vector<uint8_t>{129}, std::vector<uint8_t>{0}, 129).ok());
  EXPECT_FALSE(MutualInformationBits(std::vector<uint8_t>{0}, std::vector<uint8_t>{0}, 0).ok());
  EXPECT_FALSE(MutualInformationBits(std::vector<uint8_t>{0}, std::vector<uint8_t>{0}, 130).ok());
}

}  // namespace
}  // namespace kstacklab::analysis
