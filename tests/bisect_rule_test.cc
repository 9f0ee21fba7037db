// The bisect decision rule (include/kstacklab/stats/bisect_rule.h, docs/bisect.md): Fieller's
// paired interval against hand-computed values, the verdicts at the looks, the search's walk, and
// the rule tested the way it is used: simulated bisects with a planted step and per-boot noise of
// the size published for real boot campaigns, against a fixed-count bisect.
#include "kstacklab/stats/bisect_rule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

namespace kstacklab::stats {
namespace {

TEST(BisectRule, LooksAreGeometricAndEndAtTheLast) {
  BisectRule rule;
  EXPECT_EQ(rule.Looks(12), (std::vector<size_t>{3, 5, 8, 12}));
  EXPECT_EQ(rule.Looks(3), (std::vector<size_t>{3}));
  EXPECT_EQ(rule.Looks(20), (std::vector<size_t>{3, 5, 8, 12, 18, 20}));
  EXPECT_DOUBLE_EQ(rule.LookAlpha(12), 0.01 / 4);
  EXPECT_TRUE(rule.IsLook(8, 12));
  EXPECT_FALSE(rule.IsLook(7, 12));
}

TEST(BisectRule, PairedFiellerMatchesTheQuadraticByHand) {
  // x = C - G = {1, 2, 3}, y = B - G = {10, 10, 13}: mx = 2, my = 11, sxx = 1, syy = 3, sxy = 1.5.
  std::vector<BisectBlock> blocks = {{100, 101, 110}, {100, 102, 110}, {100, 103, 113}};
  ThetaInterval r = PairedFiellerTheta(blocks, 0.05);
  ASSERT_TRUE(r.bounded);
  EXPECT_NEAR(r.theta, 2.0 / 11, 1e-12);
  // t(0.975, 2) = 4.302652729911275; k = t^2 / 3. The values were scaled by 113: theta is not.
  const double t = 4.302652729911275, k = t * t / 3;
  const double a = 121 - k * 3, b = -2 * (22 - k * 1.5), c = 4 - k * 1;
  const double lo = (-b - std::sqrt(b * b - 4 * a * c)) / (2 * a);
  const double hi = (-b + std::sqrt(b * b - 4 * a * c)) / (2 * a);
  EXPECT_NEAR(r.low, lo, 1e-9);
  EXPECT_NEAR(r.high, hi, 1e-9);
  EXPECT_LT(r.low, r.theta);
  EXPECT_GT(r.high, r.theta);
}

TEST(BisectRule, EndsThatDoNotDifferGiveAnUnboundedInterval) {
  std::vector<BisectBlock> blocks = {{100, 105, 101}, {101, 99, 100}, {100, 100, 99}};
  EXPECT_FALSE(PairedFiellerTheta(blocks, 0.05).bounded);
  EXPECT_FALSE(PairedFiellerTheta({{1, 2, 3}}, 0.05).bounded);               // one block
  EXPECT_FALSE(PairedFiellerTheta({{1, NAN, 3}, {1, 2, 3}}, 0.05).bounded);  // NaN
}

TEST(BisectRule, VerdictsAtLooksOnly) {
  BisectRule rule;
  // The candidate sits on the good end, the bad end 10 % above, little noise.
  std::vector<BisectBlock> good = {{1000, 1001, 1100}, {1001, 1000, 1101}, {999, 1000, 1099}};
  EXPECT_EQ(JudgeStep(good, rule).verdict, StepVerdict::kGood);
  std::vector<BisectBlock> bad = {{1000, 1101, 1100}, {1001, 1100, 1101}, {999, 1099, 1099}};
  EXPECT_EQ(JudgeStep(bad, rule).verdict, StepVerdict::kBad);
  // Between looks (4 blocks): more, whatever the data say.
  good.push_back({1000, 1000, 1100});
  EXPECT_EQ(JudgeStep(good, rule).verdict, StepVerdict::kMore);
  // A candidate half way stays undecided: more until max_blocks, then undecided (a skip).
  std::vector<BisectBlock> half;
  for (size_t i = 0; i < rule.max_blocks; ++i) {
    // Noise of one unit in each boot, in a pattern whose means put the candidate at 1/2.
    const double e[3] = {0, 2, 1};
    half.push_back({1000 + e[i % 3], 1050 + e[(i + 1) % 3], 1100 + e[(i + 2) % 3]});
    StepVerdict v = JudgeStep(half, rule).verdict;
    EXPECT_EQ(v, i + 1 < rule.max_blocks ? StepVerdict::kMore : StepVerdict::kUndecided) << i;
  }
}

TEST(BisectRule, EndsEstablishedOrNoRegression) {
  BisectRule rule;
  std::vector<std::pair<double, double>> p = {{1000, 1100}, {1001, 1102}, {999, 1099}};
  EXPECT_EQ(JudgeEnds(p, rule).verdict, EndsVerdict::kEstablished);
  std::vector<std::pair<double, double>> same;
  for (size_t i = 0; i < rule.max_end_blocks; ++i) {
    same.push_back({1000.0 + static_cast<double>(i % 2), 1000.5});
  }
  EXPECT_EQ(JudgeEnds(same, rule).verdict, EndsVerdict::kNoRegression);
  same.pop_back();
  EXPECT_EQ(JudgeEnds(same, rule).verdict, EndsVerdict::kMore);
}

TEST(BisectSearch, WalksLikeGitBisectAndSkips) {
  BisectSearch s(8);  // 0 good, 7 bad
  EXPECT_EQ(s.Next(), 3u);
  s.Record(3, StepVerdict::kGood);
  EXPECT_EQ(s.Next(), 5u);
  s.Record(5, StepVerdict::kUndecided);  // skipped: the nearest untested to the middle next
  EXPECT_EQ(s.Next(), 4u);
  s.Record(4, StepVerdict::kGood);
  EXPECT_EQ(s.Next(), 6u);
  s.Record(6, StepVerdict::kBad);
  EXPECT_FALSE(s.Next().has_value());
  EXPECT_EQ(s.FirstBadRange(), (std::vector<size_t>{5, 6}));  // 5 was never decided
  BisectSearch t(2);
  EXPECT_FALSE(t.Next().has_value());
  EXPECT_EQ(t.FirstBadRange(), (std::vector<size_t>{1}));
}

// One simulated bisect: kernels 0..n-1 with the first bad one at `first_bad`; a boot's value is
// mean * (1 + drift_b + noise * e) with e standard normal and drift_b a machine drift shared by
// the boots of one block (SD `noise` too), the model of per-boot variation.
struct SimResult {
  enum { kFound, kRange, kWrong, kNoRegression } outcome;
  size_t boots = 0;
  size_t steps = 0;
};

class Simulator {
 public:
  Simulator(double step, double noise, uint64_t seed) : step_(step), noise_(noise), rng_(seed) {}

  double Boot(size_t kernel, size_t first_bad, double drift) {
    const double mean = kernel >= first_bad ? 1000 * (1 + step_) : 1000;
    return mean * (1 + drift + noise_ * normal_(rng_));
  }
  double Drift() { return noise_ * normal_(rng_); }

  // The rule's bisect (fixed_blocks == 0), or a fixed-count bisect of `fixed_blocks` blocks per
  // step that calls the candidate good when theta-hat < 1/2 (no undecided).
  SimResult Bisect(size_t n, size_t first_bad, const BisectRule& rule, size_t fixed_blocks = 0) {
    SimResult r{SimResult::kFound, 0, 0};
    if (fixed_blocks == 0) {
      std::vector<std::pair<double, double>> ends;
      for (;;) {
        const double d = Drift();
        ends.push_back({Boot(0, first_bad, d), Boot(n - 1, first_bad, d)});
        r.boots += 2;
        EndsVerdict v = JudgeEnds(ends, rule).verdict;
        if (v == EndsVerdict::kNoRegression) {
          r.outcome = SimResult::kNoRegression;
          return r;
        }
        if (v == EndsVerdict::kEstablished) break;
      }
    }
    BisectSearch search(n);
    while (auto k = search.Next()) {
      std::vector<BisectBlock> blocks;
      StepVerdict v = StepVerdict::kMore;
      while (v == StepVerdict::kMore) {
        const double d = Drift();
        blocks.push_back(
            {Boot(0, first_bad, d), Boot(*k, first_bad, d), Boot(n - 1, first_bad, d)});
        r.boots += 3;
        if (fixed_blocks == 0) {
          v = JudgeStep(blocks, rule).verdict;
        } else if (blocks.size() == fixed_blocks) {
          const double theta = PairedFiellerTheta(blocks, 0.05).theta;
          v = theta < 0.5 ? StepVerdict::kGood : StepVerdict::kBad;
        }
      }
      search.Record(*k, v);
    }
    r.steps = search.steps();
    const std::vector<size_t> range = search.FirstBadRange();
    const bool holds = std::find(range.begin(), range.end(), first_bad) != range.end();
    r.outcome = !holds              ? SimResult::kWrong
                : range.size() == 1 ? SimResult::kFound
                                    : SimResult::kRange;
    return r;
  }

 private:
  double step_;
  double noise_;
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_;
};

struct Tally {
  size_t found = 0, range = 0, wrong = 0, no_regression = 0, boots = 0, steps = 0, trials = 0;
  void Add(const SimResult& r) {
    ++trials;
    boots += r.boots;
    steps += r.steps;
    found += r.outcome == SimResult::kFound;
    range += r.outcome == SimResult::kRange;
    wrong += r.outcome == SimResult::kWrong;
    no_regression += r.outcome == SimResult::kNoRegression;
  }
  double Rate(size_t k) const { return static_cast<double>(k) / static_cast<double>(trials); }
  double PerStep() const {
    return steps == 0 ? 0 : static_cast<double>(boots) / static_cast<double>(steps);
  }
};

Tally Simulate(double step, double noise, size_t kernels, size_t trials, size_t fixed_blocks,
               uint64_t seed) {
  BisectRule rule;
  Simulator sim(step, noise, seed);
  std::mt19937_64 where(seed ^ 0x9E3779B97F4A7C15ull);
  Tally t;
  for (size_t i = 0; i < trials; ++i) {
    const size_t first_bad = 1 + where() % (kernels - 1);
    t.Add(sim.Bisect(kernels, first_bad, rule, fixed_blocks));
  }
  return t;
}

void Print(const char* what, double step, double noise, size_t kernels, const Tally& t) {
  std::printf(
      "%-14s step %4.1f%% noise %4.2f%% kernels %2zu: found %5.1f%%  range %4.1f%%  "
      "wrong %4.1f%%  no-regression %5.1f%%  boots/bisect %6.1f  boots/step %5.1f\n",
      what, 100 * step, 100 * noise, kernels, 100 * t.Rate(t.found), 100 * t.Rate(t.range),
      100 * t.Rate(t.wrong), 100 * t.Rate(t.no_regression),
      static_cast<double>(t.boots) / static_cast<double>(t.trials), t.PerStep());
}

// Per-boot noise: 1.5 % and 0.78 % are the coefficients of variation of two rows in the example
// Arm's Fastpath Learning Path publishes (cv 1.52 % and 0.78 %, count 4; docs/bisect.md). The
// planted step: 5 %, the size of 0-day's will-it-scale getppid1 change on a96ef5848cb0 (+4.7 %;
// lseek1 +7.7 %), and 3 %.
TEST(BisectSimulation, ThePlantedStepIsFoundAndAWrongStepIsRare) {
  for (size_t kernels : {16, 64}) {
    for (double noise : {0.0078, 0.015}) {
      Tally t = Simulate(0.05, noise, kernels, 300, 0, 42 + kernels);
      Print("rule", 0.05, noise, kernels, t);
      EXPECT_GE(t.Rate(t.found), 0.95) << kernels << " " << noise;
      EXPECT_LE(t.Rate(t.wrong), 0.02) << kernels << " " << noise;
      EXPECT_EQ(t.no_regression, 0u);
    }
  }
}

TEST(BisectSimulation, ASmallStepGivesRangesNotWrongAnswers) {
  // 3 % against 1.5 % per boot: undecided steps become skips (ranges); wrong stays rare.
  Tally t = Simulate(0.03, 0.015, 32, 300, 0, 7);
  Print("rule", 0.03, 0.015, 32, t);
  EXPECT_LE(t.Rate(t.wrong), 0.05);
  EXPECT_GE(t.Rate(t.found) + t.Rate(t.range), 0.90);
}

TEST(BisectSimulation, AnAAPairOfEndsStopsWithNoRegression) {
  Tally t = Simulate(0.0, 0.015, 32, 400, 0, 11);
  Print("rule (A/A)", 0.0, 0.015, 32, t);
  // At most alpha (1 %) of A/A pairs are taken as a regression; allow sampling error.
  EXPECT_GE(t.Rate(t.no_regression), 0.97);
}

TEST(BisectSimulation, AgainstAFixedCountBisect) {
  // The same bisects with a fixed 3 or 5 blocks per step and a guess at every step: cheaper
  // where the step is large, wrong far more often where it is not.
  for (size_t fixed : {3, 5}) {
    Tally big = Simulate(0.05, 0.015, 32, 300, fixed, 99);
    Tally small = Simulate(0.03, 0.015, 32, 300, fixed, 98);
    Print(fixed == 3 ? "fixed 3 blocks" : "fixed 5 blocks", 0.05, 0.015, 32, big);
    Print(fixed == 3 ? "fixed 3 blocks" : "fixed 5 blocks", 0.03, 0.015, 32, small);
    EXPECT_EQ(big.range, 0u);  // a fixed-count bisect always names one kernel
  }
  Tally rule_small = Simulate(0.03, 0.015, 32, 300, 0, 98);
  Tally fixed_small = Simulate(0.03, 0.015, 32, 300, 3, 98);
  EXPECT_LT(rule_small.wrong, fixed_small.wrong);
}

}  // namespace
}  // namespace kstacklab::stats
