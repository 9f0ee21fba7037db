// Statistics (include/kstacklab/stats/stats.h) and the comparison table
// (include/kstacklab/stats/compare.h). Reference values, and where each comes from:
//  * "R": the classic t.test(1:5, 3:7) / wilcox.test(1:3, 4:6) outputs (t = -2, df = 8,
//    p = 0.08052; p = 0.1), re-derived below by hand.
//  * "closed form": Student-t CDF for even df, 1/2 + t/(2 sqrt(nu+t^2)) sum_j C(2j,j)/4^j
//    (nu/(nu+t^2))^j, evaluated in python3 (no scipy) -> p(t=-2, df=8) = 0.080516237957.
//  * "numerical integration": Simpson's rule (200000 panels) of the t density in python3 for a
//    fractional df; agrees with the closed form to 1e-14 where both apply.
//  * "enumeration": all C(9,4) = 126 rank arrangements enumerated in python3 (exact MWU).
//  * "t tables": standard two-sided t quantiles (t(0.975, 4) = 2.776445, ...).
#include "kstacklab/stats/stats.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kstacklab/report/compare_report.h"
#include "kstacklab/results/bench_glob.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/results/result_reader.h"
#include "kstacklab/stats/compare.h"
#include "kstacklab/stats/sample_size.h"
#include "kstacklab/stats/timer_step.h"

namespace kstacklab {
namespace {

using stats::DetectDrift;
using stats::FiellerRatioCi;
using stats::HolmAdjust;
using stats::MannWhitneyU;
using stats::Mean;
using stats::RepetitionsNeeded;
using stats::StdDev;
using stats::Variance;
using stats::WelchTTest;

const double kNan = std::nan("");

TEST(Summary, HandComputed) {
  EXPECT_DOUBLE_EQ(Mean({1, 2, 3, 4, 5}), 3.0);
  EXPECT_DOUBLE_EQ(Variance({1, 2, 3, 4, 5}), 2.5);
  EXPECT_DOUBLE_EQ(StdDev({2, 4, 4, 4, 5, 5, 7, 9}), std::sqrt(32.0 / 7));
  // Large common offset: the two-pass mean keeps the small part exact.
  EXPECT_DOUBLE_EQ(Variance({1e9 + 1, 1e9 + 2, 1e9 + 3}), 1.0);
}

TEST(Summary, EdgeCases) {
  EXPECT_TRUE(std::isnan(Mean({})));
  EXPECT_DOUBLE_EQ(Mean({7}), 7.0);
  EXPECT_TRUE(std::isnan(Variance({7})));
  EXPECT_TRUE(std::isnan(Variance({})));
  EXPECT_DOUBLE_EQ(Variance({3, 3, 3}), 0.0);
  EXPECT_TRUE(std::isnan(Mean({1, kNan})));
}

TEST(Welch, MatchesRClassicExample) {
  // R: t.test(1:5, 3:7): t = -2, df = 8, p-value = 0.08052.
  auto r = WelchTTest({1, 2, 3, 4, 5}, {3, 4, 5, 6, 7});
  EXPECT_DOUBLE_EQ(r.t, -2.0);
  EXPECT_NEAR(r.df, 8.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.se, 1.0);
  EXPECT_NEAR(r.p, 0.08051623795726259, 1e-12);  // closed form
}

TEST(Welch, FractionalDf) {
  // a = 1..5, b = 2,4,..,12: hand formula t = -2.376354103144, df = 6.972255729795;
  // p by numerical integration of the t density = 0.0492843382067.
  auto r = WelchTTest({1, 2, 3, 4, 5}, {2, 4, 6, 8, 10, 12});
  EXPECT_NEAR(r.t, -2.3763541031440183, 1e-12);
  EXPECT_NEAR(r.df, 6.9722557297949335, 1e-12);
  EXPECT_NEAR(r.p, 0.049284338206725065, 1e-9);
}

TEST(Welch, EdgeCases) {
  EXPECT_TRUE(std::isnan(WelchTTest({1}, {1, 2, 3}).p));
  EXPECT_TRUE(std::isnan(WelchTTest({}, {}).p));
  EXPECT_TRUE(std::isnan(WelchTTest({1, 2, kNan}, {1, 2, 3}).p));
  EXPECT_DOUBLE_EQ(WelchTTest({5, 5, 5}, {5, 5, 5}).p, 1.0);  // zero variance, equal means
  EXPECT_DOUBLE_EQ(WelchTTest({5, 5, 5}, {6, 6, 6}).p, 0.0);  // zero variance, different means
  EXPECT_TRUE(std::isinf(WelchTTest({5, 5, 5}, {6, 6, 6}).t));
}

TEST(Fieller, ZeroVarianceDenominatorIsAScaledTInterval) {
  // den exact: the ratio's CI is (mean(num) +- t(0.975, 4) s/sqrt(n)) / 10, df = n_num - 1 = 4.
  // t(0.975, 4) = 2.776445 (t tables); s^2/n = 2.5/5 = 0.5.
  auto r = FiellerRatioCi({9, 10, 11, 12, 13}, {10, 10, 10}, 0.05);
  ASSERT_TRUE(r.bounded);
  EXPECT_DOUBLE_EQ(r.ratio, 1.1);
  EXPECT_NEAR(r.df, 4.0, 1e-12);
  EXPECT_NEAR(r.low, 1.1 - 2.776445 * std::sqrt(0.5) / 10, 1e-6);
  EXPECT_NEAR(r.high, 1.1 + 2.776445 * std::sqrt(0.5) / 10, 1e-6);
}

TEST(Fieller, LimitsSatisfyTheDefiningEquation) {
  std::vector<double> num = {105, 107, 103, 106, 104, 108}, den = {100, 102, 99, 101, 98, 100};
  auto r = FiellerRatioCi(num, den, 0.05);
  ASSERT_TRUE(r.bounded);
  double mn = Mean(num), md = Mean(den);
  double vn = Variance(num) / 6, vd = Variance(den) / 6;
  double t = stats::StudentTQuantile(0.975, r.df);
  for (double R : {r.low, r.high}) {
    EXPECT_NEAR((mn - R * md) * (mn - R * md), t * t * (vn + R * R * vd), 1e-9);
  }
  EXPECT_LT(r.low, r.ratio);
  EXPECT_GT(r.high, r.ratio);
  // Welch-Satterthwaite df of mn - R_hat md, by hand.
  double a = vn, b = r.ratio * r.ratio * vd;
  EXPECT_NEAR(r.df, (a + b) * (a + b) / (a * a / 5 + b * b / 5), 1e-9);
}

TEST(Fieller, UnboundedWhenDenominatorNotDistinctFromZero) {
  auto r = FiellerRatioCi({1, 2, 3}, {-1, 0, 1.5}, 0.05);
  EXPECT_FALSE(r.bounded);
  EXPECT_TRUE(std::isnan(r.low));
  EXPECT_FALSE(FiellerRatioCi({1}, {1, 2}, 0.05).bounded);
  EXPECT_FALSE(FiellerRatioCi({1, 2}, {}, 0.05).bounded);
}

TEST(MannWhitney, ExactSmall) {
  // R: wilcox.test(1:3, 4:6): W = 0, p-value = 0.1 (= 2 / C(6,3)).
  auto r = MannWhitneyU({1, 2, 3}, {4, 5, 6});
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 0);
  EXPECT_NEAR(r.p, 0.1, 1e-15);
  // Enumeration of all 126 arrangements: U = 9, P[U <= 9] = 57/126, P[U >= 9] = 80/126.
  auto s = MannWhitneyU({1.1, 2.2, 3.3, 4.4}, {0.5, 1.5, 2.5, 5.5, 6.5});
  EXPECT_DOUBLE_EQ(s.u, 9);
  EXPECT_NEAR(s.p, 114.0 / 126, 1e-15);
}

TEST(MannWhitney, TiesUseNormalApproximation) {
  // Formula by hand (python3): W = 6.5, tie-corrected sigma, continuity 0.5 -> p = 0.0434339631.
  // R's wilcox.test(c(1,2,2,3,4,5), c(3,3,4,6,7,8,8)) uses the same construction.
  auto r = MannWhitneyU({1, 2, 2, 3, 4, 5}, {3, 3, 4, 6, 7, 8, 8});
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 6.5);
  EXPECT_NEAR(r.p, 0.04343396310576022, 1e-12);
}

TEST(MannWhitney, TiedSmallSamplesAreFlooredAtTheExactMinimum) {
  // 3 tied vs 3 tied: the normal approximation says p = 0.0469 (R's wilcox.test, scipy
  // mannwhitneyu asymptotic), below 2 / C(6, 3) = 0.1, the smallest p any arrangement of six
  // values into 3 + 3 can give; per-repetition percentiles tie in whole timer steps like this.
  auto r = MannWhitneyU({100, 100, 100}, {110, 110, 110});
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.p, 0.1);
  // 3 vs 4 with ties (0.0357 unfloored): floored at 2 / C(7, 3) = 0.0571.
  EXPECT_DOUBLE_EQ(MannWhitneyU({881.85, 881.85, 881.85}, {891.87, 891.87, 891.87, 901.89}).p,
                   2.0 / 35);
}

TEST(MannWhitney, EdgeCases) {
  EXPECT_TRUE(std::isnan(MannWhitneyU({}, {1, 2}).p));
  EXPECT_TRUE(std::isnan(MannWhitneyU({1, kNan}, {1, 2}).p));
  EXPECT_DOUBLE_EQ(MannWhitneyU({4, 4, 4}, {4, 4, 4}).p, 1.0);  // all tied: sigma 0
  EXPECT_DOUBLE_EQ(MannWhitneyU({1}, {2}).p, 1.0);              // exact, n = 1 each
}

TEST(Holm, HandComputed) {
  // Sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.06.
  auto adj = HolmAdjust({0.01, 0.04, 0.03, 0.005});
  EXPECT_NEAR(adj[0], 0.03, 1e-15);
  EXPECT_NEAR(adj[1], 0.06, 1e-15);
  EXPECT_NEAR(adj[2], 0.06, 1e-15);
  EXPECT_NEAR(adj[3], 0.02, 1e-15);
  auto with_nan = HolmAdjust({0.5, kNan, 0.01});
  EXPECT_NEAR(with_nan[0], 0.5, 1e-15);  // m = 2: 0.01*2 = 0.02, then max(0.02, 0.5*1)
  EXPECT_TRUE(std::isnan(with_nan[1]));
  EXPECT_NEAR(with_nan[2], 0.02, 1e-15);
  EXPECT_DOUBLE_EQ(HolmAdjust({0.6, 0.7})[1], 1.0);  // capped at 1
  EXPECT_TRUE(HolmAdjust({}).empty());
}

TEST(Power, RepetitionsNeededFromTTables) {
  // cv 1 %, effect 1 %: n = 16 gives (t(.975,30) + t(.8,30)) sqrt(2/16) = (2.0423 + 0.8538)
  // * 0.35355 = 1.024 > 1; n = 17: (2.0369 + 0.8530) * 0.34300 = 0.991 <= 1 (t tables).
  EXPECT_EQ(RepetitionsNeeded(0.01, 0.01, 0.05, 0.8), 17u);
  EXPECT_EQ(RepetitionsNeeded(0, 0.01, 0.05, 0.8), 2u);
  EXPECT_EQ(RepetitionsNeeded(kNan, 0.01, 0.05, 0.8), 0u);
  EXPECT_EQ(RepetitionsNeeded(0.01, 0, 0.05, 0.8), 0u);
  // Halving the effect roughly quadruples n.
  size_t n1 = RepetitionsNeeded(0.02, 0.02, 0.05, 0.8),
         n2 = RepetitionsNeeded(0.02, 0.01, 0.05, 0.8);
  EXPECT_GT(n2, 3 * n1);
  EXPECT_LT(n2, 5 * n1);
}

TEST(Power, MinimalDetectableDifference) {
  // Equal variances 1, n = 16 each: df = 30, (2.042272 + 0.853767) * sqrt(2/16) = 1.023905.
  EXPECT_NEAR(stats::MinimalDetectableDifference(1, 16, 1, 16, 0.05, 0.8), 1.023905, 1e-5);
  EXPECT_TRUE(std::isnan(stats::MinimalDetectableDifference(1, 1, 1, 16, 0.05, 0.8)));
}

TEST(Drift, LinearTrendIsFlaggedNoiseIsNot) {
  std::vector<double> trend;
  for (int i = 0; i < 10; ++i) trend.push_back(100 + i + (i % 2 ? 0.1 : -0.1));
  auto d = DetectDrift(trend, 0.001);
  EXPECT_TRUE(d.drifting);
  EXPECT_NEAR(d.slope, 1.0, 0.05);
  EXPECT_NEAR(d.fitted_change, 9.0, 0.5);
  // Alternating values around a constant: no slope.
  auto flat = DetectDrift({100, 101, 100, 101, 100, 101, 100, 101, 100.5, 100.5}, 0.001);
  EXPECT_FALSE(flat.drifting);
  EXPECT_FALSE(DetectDrift({1, 2, 3}, 0.05).drifting);        // n < 4
  EXPECT_FALSE(DetectDrift({5, 5, 5, 5, 5}, 0.05).drifting);  // constant
  // Exactly linear: residual SD 0, p 0, fitted change 3 > 0.
  auto exact = DetectDrift({1, 2, 3, 4}, 0.05);
  EXPECT_TRUE(exact.drifting);
  EXPECT_DOUBLE_EQ(exact.slope, 1.0);
}

// A falling tail's size on a time's scale: {8, 4, 2, 1} halves at every step, so the fitted last
// value is 1/8 of the first (-87.5 %), where the linear fit's change over the run (slope -2.3
// over 3 steps: -6.9) is -184 % of the mean 3.75: a fall no time can make.
TEST(Drift, ItsSizeIsARatioOfTheFittedEndsNeverBelowMinus100Percent) {
  auto d = DetectDrift({8, 4, 2, 1}, 0.05);
  EXPECT_DOUBLE_EQ(d.slope, -2.3);
  EXPECT_NEAR(100 * d.fitted_change / 3.75, -184, 1e-9);
  EXPECT_NEAR(d.ratio, 0.125, 1e-12);
  auto up = DetectDrift({1, 2, 4, 8}, 0.05);
  EXPECT_NEAR(up.ratio, 8, 1e-12);
  // A value <= 0 (an overhead-corrected time at or below the overhead) has no log: no ratio.
  EXPECT_TRUE(std::isnan(DetectDrift({3, 2, 1, 0}, 0.05).ratio));
  EXPECT_TRUE(std::isnan(DetectDrift({3, 2, 1, -1}, 0.05).ratio));
}

TEST(VarianceComponents, SdPercentOfTheValueWithItsEdgeCases) {
  EXPECT_DOUBLE_EQ(stats::ComponentSdPercent(4, 100), 2.0);       // sqrt(4) / 100
  EXPECT_DOUBLE_EQ(stats::ComponentSdPercent(4, -50), 4.0);       // of |value|
  EXPECT_DOUBLE_EQ(stats::ComponentSdPercent(0, 100), 0.0);       // a level that varied by 0
  EXPECT_TRUE(std::isnan(stats::ComponentSdPercent(kNan, 100)));  // a level that did not vary
  EXPECT_TRUE(std::isnan(stats::ComponentSdPercent(4, 0)));       // no % of zero
  EXPECT_TRUE(std::isnan(stats::ComponentSdPercent(4, kNan)));
}

// ---- BuildCompareTable ----

BenchmarkResult Bench(const std::string& name, const std::vector<double>& means,
                      const std::string& variant = "", std::vector<int> sessions = {}) {
  BenchmarkResult b;
  b.name = name;
  b.variant = variant;
  for (size_t i = 0; i < means.size(); ++i) {
    Repetition r;
    r.iterations = 1000;
    r.session = sessions.empty() ? 0 : sessions[i];
    r.metrics["mean"] = means[i];
    r.metrics["p99"] = means[i] * 1.5;
    b.repetitions.push_back(r);
  }
  return b;
}

stats::CompareInput Input(const std::string& label, std::vector<BenchmarkResult> benches) {
  stats::CompareInput in;
  in.source = label + ".json";
  in.run.label = label;
  in.run.benchmarks = std::move(benches);
  return in;
}

// One run holding each series as a variant of "s/x": compared within the run, on repetitions.
stats::CompareInput OneRun(const std::vector<std::pair<std::string, std::vector<double>>>& series) {
  std::vector<BenchmarkResult> benches;
  for (const auto& [variant, values] : series) benches.push_back(Bench("s/x", values, variant));
  return Input("run", std::move(benches));
}

stats::CompareOptions MeanOnly() {
  stats::CompareOptions o;
  o.metrics = {"mean"};
  return o;
}

// A row measured only outside the baseline column (a benchmark without the baseline's variant)
// cannot be compared: the table says so in a note naming it, instead of leaving blank cells
// unexplained. A row the baseline column has is compared as usual.
TEST(CompareTable, RowWithoutTheBaselineColumnIsNamedInANote) {
  auto flagged = Bench("s/x", {100, 100.1, 99.9, 100.2, 99.8}, "raw");
  flagged.baseline = true;
  std::vector<BenchmarkResult> benches = {
      flagged, Bench("s/x", {110, 110.1, 109.9, 110.2, 109.8}, "libc"),
      Bench("s/plain", {50, 50.1, 49.9, 50.2, 49.8})};  // no variant: column "run", not "run:raw"
  auto t = stats::BuildCompareTable({Input("run", std::move(benches))}, MeanOnly());
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->columns[0].variant, "raw");
  const std::vector<std::string> notes = report::CompareNoteLines(*t);
  const std::string* note = nullptr;
  for (const std::string& n : notes)
    if (n.rfind("not compared:", 0) == 0) note = &n;
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->find("s/plain"), std::string::npos) << *note;
  EXPECT_EQ(note->find("s/x"), std::string::npos) << *note;
  EXPECT_NE(note->find("'raw'"), std::string::npos) << *note;
  EXPECT_EQ(note->find("--"), std::string::npos) << "a library note names no flag: " << *note;
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_NEAR(t->rows[0].variants[0].change_pct, 10.0, 0.01);  // s/x libc vs raw: compared
}

// A row whose every input was measured in loop mode (mean only) gets no p99 row; a note names it
// with its params instead of leaving the metric out silently. Rows that have p99 keep it.
TEST(CompareTable, AMetricNoInputHasIsNamedInANoteWithTheRowsParams) {
  auto loop_row = [](double mean) {
    BenchmarkResult b = Bench("s/loop", {mean, mean + 0.1, mean - 0.1, mean + 0.2});
    b.params = Json{{"n", 16}};
    for (Repetition& r : b.repetitions) r.metrics.erase("p99");
    return b;
  };
  stats::CompareOptions o;
  o.metrics = {"mean", "p99"};
  auto t = stats::BuildCompareTable(
      {Input("a", {Bench("s/x", {100, 100.1, 99.9, 100.2}), loop_row(50)}),
       Input("b", {Bench("s/x", {101, 101.1, 100.9, 101.2}), loop_row(51)})},
      o);
  ASSERT_TRUE(t.ok()) << t.error().message;
  std::vector<std::string> rows;
  for (const stats::CompareRow& r : t->rows) rows.push_back(CompareRowName(r.key) + " " + r.metric);
  EXPECT_EQ(rows, (std::vector<std::string>{"s/x mean", "s/x p99", "s/loop mean"}));  // input order
  const std::vector<std::string> notes = report::CompareNoteLines(*t);
  EXPECT_NE(std::find(notes.begin(), notes.end(),
                      "s/loop n:16: no 'p99' values (loop-mode results carry mean only)"),
            notes.end());
}

// A file mixing suites: syscall rows (raw flagged, libc) with a raw-only row, and erase rows of
// another variant set (generic flagged, simd) and a third (off flagged, generic). One part per
// compatible set, each table compares every row against its own baseline; the raw-only row stays
// with the raw/libc rows (its set holds their baseline).
TEST(CompareTable, MixedSuitesGetOneTablePerVariantSet) {
  auto flag = [](BenchmarkResult b) {
    b.baseline = true;
    return b;
  };
  const std::vector<double> base = {100, 100.1, 99.9, 100.2, 99.8};
  const std::vector<double> slower = {110, 110.1, 109.9, 110.2, 109.8};
  std::vector<BenchmarkResult> benches = {
      flag(Bench("syscall/getpid", base, "raw")), Bench("syscall/getpid", slower, "libc"),
      flag(Bench("syscall/deep", base, "raw")),   flag(Bench("erase/poison", base, "generic")),
      Bench("erase/poison", slower, "simd"),      flag(Bench("erase/syscall", base, "off")),
      Bench("erase/syscall", slower, "generic")};
  const std::vector<stats::CompareInput> inputs = {Input("run", benches)};
  const auto parts = stats::SplitByVariantSet(inputs);
  ASSERT_EQ(parts.size(), 3u);
  auto names = [](const std::vector<stats::CompareInput>& part) {
    std::vector<std::string> n;
    for (const BenchmarkResult& b : part[0].run.benchmarks) n.push_back(b.name + ":" + b.variant);
    return n;
  };
  EXPECT_EQ(names(parts[0]), (std::vector<std::string>{"syscall/getpid:raw", "syscall/getpid:libc",
                                                       "syscall/deep:raw"}));
  EXPECT_EQ(names(parts[1]),
            (std::vector<std::string>{"erase/poison:generic", "erase/poison:simd"}));
  EXPECT_EQ(names(parts[2]),
            (std::vector<std::string>{"erase/syscall:off", "erase/syscall:generic"}));
  for (const auto& part : parts) {
    auto t = stats::BuildCompareTable(part, MeanOnly());
    ASSERT_TRUE(t.ok()) << t.error().message;
    for (const std::string& n : report::CompareNoteLines(*t))
      EXPECT_EQ(n.rfind("not compared:", 0), std::string::npos) << n;
    EXPECT_NEAR(t->rows[0].variants[0].change_pct, 10.0, 0.01) << CompareRowName(t->rows[0].key);
  }
  // Every benchmark with the same variants: the inputs unchanged, one table as before.
  const std::vector<stats::CompareInput> same = {OneRun({{"a", base}, {"b", slower}})};
  ASSERT_EQ(stats::SplitByVariantSet(same).size(), 1u);
}

// Two kernels, each measured with raw and libc call paths: the libc path costs +50 % in both.
// Across labels each variant is a row of its own and b's libc row is compared with a's libc
// row: no change. (As columns, b:libc was compared with a:raw and showed the wrapper's +50 %.)
TEST(CompareTable, AcrossLabelsEachVariantIsARowComparedLikeWithLike) {
  auto runs_of = [](const std::string& label, double scale) {
    std::vector<stats::CompareInput> in;
    for (int r = 0; r < 3; ++r) {
      const double d = 0.2 * r;
      BenchmarkResult raw = Bench("syscall/getpid", {100 + d, 100.1 + d, 99.9 + d}, "raw");
      raw.baseline = true;
      std::vector<double> libc = {150 + d, 150.1 + d, 149.9 + d};
      for (double& v : libc) v *= scale;
      in.push_back(Input(label, {raw, Bench("syscall/getpid", libc, "libc")}));
      in.back().source = label + std::to_string(r) + ".json";
    }
    return in;
  };
  std::vector<stats::CompareInput> inputs = runs_of("a", 1.0);
  for (stats::CompareInput& in : runs_of("b", 1.1))
    inputs.push_back(std::move(in));  // b's libc +10 %
  ASSERT_TRUE(stats::VariantsAreRows(inputs, ""));
  const auto parts = stats::CompareParts(inputs, "");
  ASSERT_EQ(parts.size(), 1u);
  auto t = stats::BuildCompareTable(parts[0], MeanOnly());
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->columns.size(), 2u);
  EXPECT_EQ(t->columns[0].name, "a");
  EXPECT_EQ(t->columns[1].name, "b");
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(CompareRowName(t->rows[0].key), "syscall/getpid [raw]");
  EXPECT_NEAR(t->rows[0].variants[0].change_pct, 0.0, 0.01);
  EXPECT_EQ(t->rows[0].variants[0].verdict, stats::Verdict::kNone);
  EXPECT_EQ(CompareRowName(t->rows[1].key), "syscall/getpid [libc]");
  EXPECT_NEAR(t->rows[1].variants[0].change_pct, 10.0, 0.01);
  EXPECT_EQ(t->rows[1].variants[0].verdict, stats::Verdict::kRegression);
  // --baseline LABEL is a column in this layout (it named no column before: the columns were
  // a:raw, a:libc, b:raw, b:libc).
  ASSERT_TRUE(stats::CheckBaseline(inputs, "b").ok());
  stats::CompareOptions o = MeanOnly();
  o.baseline = "b";
  t = stats::BuildCompareTable(stats::CompareParts(inputs, "b")[0], o);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->columns[0].name, "b");
  EXPECT_NEAR(t->rows[1].variants[0].change_pct, 100 * (1 / 1.1 - 1), 0.01);
  // A baseline naming a variant keeps the variants as columns, on purpose.
  EXPECT_FALSE(stats::VariantsAreRows(inputs, "a:raw"));
  o.baseline = "a:raw";
  t = stats::BuildCompareTable(stats::CompareParts(inputs, "a:raw")[0], o);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->columns.size(), 4u);
  // A variant both labels hold is ambiguous: the error lists the columns it matches and asks
  // for LABEL:VARIANT.
  const Status ambiguous = stats::CheckBaseline(inputs, "libc");
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_EQ(ambiguous.error().exit_code, kExitUsage);
  EXPECT_EQ(ambiguous.error().message,
            "baseline 'libc' matches 2 columns; name one as LABEL:VARIANT: a:libc, b:libc");
  // One label: variants stay columns (compared within the run).
  EXPECT_FALSE(stats::VariantsAreRows(runs_of("a", 1.0), ""));
}

// An --ab file of the syscall suite: raw and libc rows under kernel.stack_erasing=0 and =1, the
// libc wrapper +50 % under both values and the knob doing nothing. The knob's values are the
// columns and each call path a row, so the knob's change is 0 on both rows; as plain variants
// libc,=1 was compared with raw,=0 and showed the wrapper's +50 % as the knob's effect.
TEST(CompareTable, AnAbFileComparesTheKnobsValuesWithinEachCallPath) {
  const std::vector<double> raw = {100, 100.1, 99.9, 100.2, 99.8};
  const std::vector<double> libc = {150, 150.1, 149.9, 150.2, 149.8};
  std::vector<BenchmarkResult> benches;
  for (const char* value : {"0", "1"}) {
    const std::string tag = std::string("kernel.stack_erasing=") + value;
    benches.push_back(Bench("syscall/getpid", raw, "raw"));
    benches.back().knob = tag;
    benches.back().baseline = tag.back() == '0';
    benches.push_back(Bench("syscall/getpid", libc, "libc"));
    benches.back().knob = tag;
  }
  std::vector<stats::CompareInput> inputs = {Input("ab", benches)};
  inputs[0].run.run.ab = {"sysctl:kernel.stack_erasing=0,1"};
  ASSERT_TRUE(stats::CheckBaseline(inputs, "").ok());
  const auto parts = stats::CompareParts(inputs, "");
  ASSERT_EQ(parts.size(), 1u);
  auto t = stats::BuildCompareTable(parts[0], MeanOnly());
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->columns.size(), 2u);
  EXPECT_EQ(t->columns[0].name, "kernel.stack_erasing=0");
  EXPECT_EQ(t->columns[1].name, "kernel.stack_erasing=1");
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(CompareRowName(t->rows[0].key), "syscall/getpid [raw]");
  EXPECT_EQ(CompareRowName(t->rows[1].key), "syscall/getpid [libc]");
  for (const stats::CompareRow& row : t->rows) {
    EXPECT_NEAR(row.variants[0].change_pct, 0.0, 1e-9) << CompareRowName(row.key);
    EXPECT_EQ(row.variants[0].verdict, stats::Verdict::kNone) << CompareRowName(row.key);
  }
  // The second value as the baseline, by its tag.
  ASSERT_TRUE(stats::CheckBaseline(inputs, "kernel.stack_erasing=1").ok());
  // Written and read back, the file is the same table: the reader decodes the key once.
  auto back = ResultFromJson(ResultToJson(inputs[0].run), "ab.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->benchmarks[1].Key(),
            (RowKey{"syscall/getpid", Json::object(), "libc", "kernel.stack_erasing=0"}));
  auto t2 = stats::BuildCompareTable(
      stats::CompareParts({stats::CompareInput{inputs[0].source, *back}}, "")[0], MeanOnly());
  ASSERT_TRUE(t2.ok()) << t2.error().message;
  EXPECT_EQ(report::RenderCompareJson(*t2), report::RenderCompareJson(*t));
  // A file without --ab keeps each stored variant as its column, even one holding '=': the
  // reader splits no variant there.
  Json doc = Json::parse(ResultToJson(*back));
  doc["run"].erase("ab");
  auto plain = ResultFromJson(doc.dump(), "plain.json");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->benchmarks[0].variant, "raw,kernel.stack_erasing=0");
  EXPECT_EQ(plain->benchmarks[0].knob, "");
  t = stats::BuildCompareTable(stats::CompareParts({stats::CompareInput{"plain", *plain}}, "")[0],
                               MeanOnly());
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->columns.size(), 4u);
  EXPECT_EQ(t->columns[1].name, "libc,kernel.stack_erasing=0");
}

// Both --ab layouts as rows: two labels put the variant and the value in the row, by name.
TEST(CompareTable, TwoAbFilesOfTwoLabelsHaveTheVariantAndTheValueInTheRow) {
  std::vector<stats::CompareInput> inputs;
  for (const char* label : {"a", "b"}) {
    std::vector<BenchmarkResult> benches = {Bench("syscall/getpid", {100, 101, 99, 100}, "raw"),
                                            Bench("syscall/getpid", {100, 101, 99, 100}, "")};
    benches[0].knob = "kernel.stack_erasing=0";
    benches[1].knob = "kernel.stack_erasing=1";
    inputs.push_back(Input(label, benches));
    inputs.back().run.run.ab = {"sysctl:kernel.stack_erasing=0,1"};
  }
  const auto parts = stats::CompareParts(inputs, "");
  ASSERT_EQ(parts.size(), 1u);
  auto t = stats::BuildCompareTable(parts[0], MeanOnly());
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(CompareRowName(t->rows[0].key), "syscall/getpid [raw] [kernel.stack_erasing=0]");
  EXPECT_EQ(t->rows[0].key,
            (RowKey{"syscall/getpid", Json::object(), "raw", "kernel.stack_erasing=0"}));
  EXPECT_EQ(CompareRowName(t->rows[1].key), "syscall/getpid [kernel.stack_erasing=1]");
}

// A baseline "A:raw" that is both a label (a file written before run refused ':') and label A's
// variant raw is refused rather than taken as either.
TEST(CompareTable, ABaselineThatIsALabelAndALabelsVariantIsRefused) {
  const std::vector<double> v = {100, 101, 99, 100};
  std::vector<stats::CompareInput> inputs = {Input("a", {Bench("s/x", v, "raw")}),
                                             Input("a:raw", {Bench("s/x", v, "")})};
  const Status st = stats::CheckBaseline(inputs, "a:raw");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("is ambiguous"), std::string::npos) << st.error().message;
  EXPECT_TRUE(stats::CheckBaseline(inputs, "a").ok());
}

TEST(StoredVariant, JoinsAndSplits) {
  EXPECT_EQ(StoredVariant("raw", "kernel.stack_erasing=0"), "raw,kernel.stack_erasing=0");
  EXPECT_EQ(StoredVariant("", "kernel.stack_erasing=0"), "kernel.stack_erasing=0");
  EXPECT_EQ(StoredVariant("raw", ""), "raw");
  EXPECT_EQ(StoredVariant("", ""), "");
  using Parts = std::pair<std::string, std::string>;
  EXPECT_EQ(SplitStoredVariant("raw,kernel.stack_erasing=0"),
            (Parts{"raw", "kernel.stack_erasing=0"}));
  EXPECT_EQ(SplitStoredVariant("generic,x,k=v"), (Parts{"generic,x", "k=v"}));
  EXPECT_EQ(SplitStoredVariant("kernel.stack_erasing=1"), (Parts{"", "kernel.stack_erasing=1"}));
  EXPECT_EQ(SplitStoredVariant("percpu-prng"), (Parts{"percpu-prng", ""}));
  EXPECT_EQ(SplitStoredVariant("a=b,raw"), (Parts{"a=b,raw", ""}));
  EXPECT_EQ(SplitStoredVariant(""), (Parts{"", ""}));
}

// Every label of a row is built from its key by naming.h.
TEST(RowNames, EachFormOfARowFromItsKey) {
  const RowKey k{"syscall/fork", {{"h", 1}, {"mode", "x"}}, "raw", "kernel.stack_erasing=0"};
  EXPECT_EQ(BenchmarkLabel(k), "syscall/fork h:1, mode:x [raw,kernel.stack_erasing=0]");
  EXPECT_EQ(CompareRowName(k), "syscall/fork [raw] [kernel.stack_erasing=0]");
  EXPECT_EQ(FastpathRowName(k), "syscall/fork h:1 mode:\"x\" [raw,kernel.stack_erasing=0]");
  EXPECT_EQ(TestCaseName(k), "syscall_fork_h1_mode_x__raw_kernel.stack_erasing_0");
  EXPECT_EQ(CompareRowName(RowKey{"syscall/getpid", Json::object(), "", ""}), "syscall/getpid");
  EXPECT_EQ(ComparisonName("syscall/getpid [raw]", "mean (ns)", "b", "a"),
            "syscall/getpid [raw] mean (ns): b vs a");
}

// One glob rule for `run --bench` and `compare --bench`: the full id, or with the params or the
// variant left out.
TEST(BenchGlob, MatchesTheIdAndItsShortForms) {
  const Json params = {{"depth", 256}};
  auto m = [&](const char* g) {
    return MatchesBenchGlob(g, RowKey{"erase/poison", params, "generic", ""});
  };
  EXPECT_TRUE(m("erase/poison(depth:256):generic"));
  EXPECT_TRUE(m("erase/poison(depth:256)"));
  EXPECT_TRUE(m("erase/poison:generic"));
  EXPECT_TRUE(m("erase/poison"));
  EXPECT_TRUE(m("erase/*"));
  EXPECT_TRUE(m("*:gen*"));
  EXPECT_FALSE(m("erase/poison:simd"));
  EXPECT_FALSE(m("erase/poison(depth:512)"));
  EXPECT_FALSE(m("erase"));
  EXPECT_TRUE(MatchesBenchGlob("syscall/getpid", RowKey{"syscall/getpid", Json::object(), "", ""}));
  // A row of an --ab file answers to its own variant too, and to the stored one.
  const RowKey ab{"syscall/getpid", Json::object(), "raw", "kernel.stack_erasing=1"};
  EXPECT_TRUE(MatchesBenchGlob("syscall/getpid:raw", ab));
  EXPECT_TRUE(MatchesBenchGlob("syscall/getpid:raw,kernel.stack_erasing=1", ab));
  EXPECT_FALSE(MatchesBenchGlob("syscall/getpid:libc", ab));
  EXPECT_EQ(BenchmarkId("model/kstack", {{"handler", "getpid"}}, "percpu-prng"),
            "model/kstack(handler:getpid):percpu-prng");
}

TEST(CompareTable, OneRunGivenTwiceIsRefused) {
  const stats::CompareInput a = Input("a", {Bench("s/x", {100, 101, 99})});
  stats::CompareInput again = a;
  again.source = "7";  // the same run from the store
  const Status st =
      stats::CheckInputsCompare({a, Input("b", {Bench("s/x", {100, 101, 99.5})}), again});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().exit_code, kExitUsage);
  EXPECT_NE(st.error().message.find("'a.json' and '7' are the same run"), std::string::npos)
      << st.error().message;
  stats::CompareInput other_time = a;
  other_time.run.created = "2026-01-02T03:04:05Z";  // another run with the same values: fine
  EXPECT_TRUE(stats::CheckInputsCompare({a, other_time}).ok());
  EXPECT_FALSE(stats::CheckInputsCompare({Input("a", {})}).ok());  // no benchmark at all
}

// Per-call percentiles move in whole timer steps: a p99 change below one step is marked and
// footnoted; the mean (a per-repetition average) never is. p99 = 1.5 x mean in Bench().
TEST(CompareTable, PercentileChangeBelowOneTimerStepIsMarked) {
  stats::CompareInput in =
      OneRun({{"base", {100, 101, 99, 100, 100}}, {"var", {104, 105, 103, 104, 104}}});
  in.run.timer.resolution_ns = 10.0;  // p99 change: 1.5 x 4 = 6 ns < 10 ns
  stats::CompareOptions o;
  o.metrics = {"mean", "p99"};
  auto t = stats::BuildCompareTable({in}, o);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_FALSE(t->rows[0].variants[0].below_timer_step);  // mean
  EXPECT_TRUE(t->rows[1].variants[0].below_timer_step);   // p99
  bool footnote = false;
  for (const auto& n : report::CompareNoteLines(*t))
    footnote = footnote || n.find("timer step") != std::string::npos;
  EXPECT_TRUE(footnote);
  in.run.timer.resolution_ns = 5.0;  // 6 ns >= one step: not marked
  auto t2 = stats::BuildCompareTable({in}, o);
  ASSERT_TRUE(t2.ok());
  EXPECT_FALSE(t2->rows[1].variants[0].below_timer_step);
}

// A per-call baseline above 0 but below one timer step (a p50 that is 0 in almost every
// repetition) has no % change: the real case made +1 230 000 % (R). The cell shows the
// variant's own value with '#', no CI or verdict, and a note says why; the mean of the same
// rows is compared as usual, and a baseline of one step or more is compared too.
TEST(CompareTable, PercentileBaselineBelowOneTimerStepHasNoChange) {
  // p99 = 1.5 x mean: base p99 1.5 x 0.002 = 0.003 ns, var p99 1.5 x 20 = 30 ns.
  stats::CompareInput in = OneRun(
      {{"base", {0.001, 0.003, 0.002, 0.002, 0.002}}, {"var", {19.0, 21.0, 20.0, 20.0, 20.0}}});
  in.run.timer.resolution_ns = 10.0;
  stats::CompareOptions o;
  o.metrics = {"mean", "p99"};
  auto t = stats::BuildCompareTable({in}, o);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 2u);
  const stats::CompareCell& mean = t->rows[0].variants[0];
  EXPECT_FALSE((mean.status == stats::CellStatus::kBaselineBelowTimerStep));
  EXPECT_EQ(mean.verdict, stats::Verdict::kRegression);
  const stats::CompareCell& p99 = t->rows[1].variants[0];
  EXPECT_TRUE((p99.status == stats::CellStatus::kBaselineBelowTimerStep));
  EXPECT_FALSE((p99.status == stats::CellStatus::kBaselineNotPositive));
  EXPECT_FALSE(p99.below_timer_step);
  EXPECT_TRUE(std::isnan(p99.change_pct));
  EXPECT_TRUE(std::isnan(p99.p_value));
  EXPECT_EQ(p99.verdict, stats::Verdict::kNone);
  bool noted = false;
  for (const std::string& n : report::CompareNoteLines(*t))
    noted = noted || n.rfind("# the baseline's value is above 0 but below one timer step", 0) == 0;
  EXPECT_TRUE(noted);
  const std::string grid = report::RenderCompareGrid(*t);
  EXPECT_NE(grid.find("30.00 ns #"), std::string::npos) << grid;
  const std::string json = report::RenderCompare(*t, report::CompareFormat::kJson);
  EXPECT_NE(json.find("\"baseline_below_timer_step\": true"), std::string::npos) << json;

  // No step known (an old file): nothing to judge by, compared as before.
  in.run.timer.resolution_ns.reset();
  auto unknown = stats::BuildCompareTable({in}, o);
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE((unknown->rows[1].variants[0].status == stats::CellStatus::kBaselineBelowTimerStep));
  EXPECT_EQ(unknown->rows[1].variants[0].verdict, stats::Verdict::kRegression);
  // A baseline of one step or more is resolved: compared as usual.
  in.run.timer.resolution_ns = 0.003;
  auto resolved = stats::BuildCompareTable({in}, o);
  ASSERT_TRUE(resolved.ok());
  EXPECT_FALSE(
      (resolved->rows[1].variants[0].status == stats::CellStatus::kBaselineBelowTimerStep));
  EXPECT_EQ(resolved->rows[1].variants[0].verdict, stats::Verdict::kRegression);
}

// Runs of two labels measured in blocks (all of one before all of the other) get a note naming
// both spans; runs measured in cycles, one run per side, a missing or foreign time, or a shared
// second get none.
TEST(CompareTable, RunsMeasuredInBlocksAreNoted) {
  const auto runs = [](const std::vector<std::pair<std::string, std::string>>& label_time) {
    std::vector<stats::CompareInput> in;
    double m = 100;
    for (const auto& [label, created] : label_time) {
      in.push_back(Input(label, {Bench("s/x", {m - 1, m, m + 1})}));
      in.back().run.created = created;
      m += 0.5;
    }
    return in;
  };
  const auto block_notes = [](const std::vector<stats::CompareInput>& in) {
    auto t = stats::BuildCompareTable(in, MeanOnly());
    EXPECT_TRUE(t.ok());
    std::vector<std::string> found;
    if (!t.ok()) return found;
    for (const std::string& n : report::CompareNoteLines(*t))
      if (n.find("were all measured") != std::string::npos) found.push_back(n);
    return found;
  };
  const std::string t1 = "2026-11-30T10:00:01Z", t2 = "2026-11-30T10:00:02Z",
                    t3 = "2026-11-30T10:00:03Z", t4 = "2026-11-30T10:00:04Z",
                    t5 = "2026-11-30T10:00:05Z", t6 = "2026-11-30T10:00:06Z";
  auto blocks =
      block_notes(runs({{"a", t1}, {"a", t2}, {"a", t3}, {"b", t4}, {"b", t5}, {"b", t6}}));
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].rfind("the runs of 'b' were all measured after those of 'a' (3 runs " + t1 +
                                " to " + t3 + ", then 3 runs " + t4 + " to " + t6 + ")",
                            0),
            0u)
      << blocks[0];
  // The baseline measured last: "before".
  blocks = block_notes(runs({{"a", t4}, {"a", t5}, {"b", t1}, {"b", t2}}));
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_NE(blocks[0].find("the runs of 'b' were all measured before those of 'a'"),
            std::string::npos);
  // Cycles (a b, b a, a b): the spans overlap.
  EXPECT_TRUE(block_notes(runs({{"a", t1}, {"b", t2}, {"b", t3}, {"a", t4}, {"a", t5}, {"b", t6}}))
                  .empty());
  // One run a side: nothing (no verdict there anyway).
  EXPECT_TRUE(block_notes(runs({{"a", t1}, {"b", t2}})).empty());
  // A shared second, a missing time, a time in another form: the order is unknown.
  EXPECT_TRUE(block_notes(runs({{"a", t1}, {"a", t2}, {"b", t2}, {"b", t3}})).empty());
  EXPECT_TRUE(block_notes(runs({{"a", t1}, {"a", ""}, {"b", t3}, {"b", t4}})).empty());
  EXPECT_TRUE(
      block_notes(runs({{"a", t1}, {"a", "2026-11-30 10:00:02"}, {"b", t3}, {"b", t4}})).empty());
}

TEST(CompareTable, FastpathVersusCiOnKnownData) {
  // base 10..14: mean 12, s = 1.5811, 95 % t-interval 12 +- 2.776445*1.5811/sqrt(5) =
  // [10.037, 13.963]. var 13..17: [13.037, 16.963] overlaps -> fastpath "-"; Welch t = 3, df 8, p =
  // 0.017 -> ci (R). var 14..18: [14.037, 17.963] does not overlap -> (R) under both.
  std::vector<stats::CompareInput> in = {OneRun({{"base", {10, 11, 12, 13, 14}},
                                                 {"overlap", {13, 14, 15, 16, 17}},
                                                 {"apart", {14, 15, 16, 17, 18}}})};
  stats::CompareOptions o = MeanOnly();
  o.method = stats::VerdictMethod::kFastpath;
  auto fp = stats::BuildCompareTable(in, o);
  ASSERT_TRUE(fp.ok()) << fp.error().message;
  ASSERT_EQ(fp->rows.size(), 1u);
  EXPECT_EQ(fp->rows[0].variants[0].verdict, stats::Verdict::kNone);
  EXPECT_EQ(fp->rows[0].variants[1].verdict, stats::Verdict::kRegression);
  auto ci = stats::BuildCompareTable(in, MeanOnly());
  ASSERT_TRUE(ci.ok());
  const stats::CompareCell& c = ci->rows[0].variants[0];
  EXPECT_EQ(c.verdict, stats::Verdict::kRegression);
  EXPECT_DOUBLE_EQ(c.change_pct, 25.0);
  EXPECT_NEAR(c.p_value, 0.01707168, 1e-6);  // closed form, t = 3, df = 8: 0.0170716812
  EXPECT_GT(c.ci_low_pct, 0);
}

TEST(CompareTable, SignConventionAndHigherIsBetter) {
  auto up = Bench("s/x", {105, 105.1, 104.9, 105.2, 104.8}, "v");
  auto base = Bench("s/x", {100, 100.1, 99.9, 100.2, 99.8}, "b");
  auto t = stats::BuildCompareTable({Input("run", {base, up})}, MeanOnly());
  ASSERT_TRUE(t.ok());
  EXPECT_NEAR(t->rows[0].variants[0].change_pct, 5.0, 1e-9);
  EXPECT_EQ(t->rows[0].variants[0].verdict, stats::Verdict::kRegression);
  base.lower_is_better = false;
  up.lower_is_better = false;
  t = stats::BuildCompareTable({Input("run", {base, up})}, MeanOnly());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows[0].variants[0].verdict, stats::Verdict::kImprovement);
  // --min-effect above the change: no verdict.
  stats::CompareOptions o = MeanOnly();
  o.min_effect_pct = 6;
  t = stats::BuildCompareTable({Input("run", {base, up})}, o);
  EXPECT_EQ(t->rows[0].variants[0].verdict, stats::Verdict::kNone);
}

TEST(CompareTable, TooFewSamplesShowsChangeOnly) {
  auto t = stats::BuildCompareTable(
      {Input("b", {Bench("s/x", {100, 101, 99, 100})}), Input("v", {Bench("s/x", {150, 151})})},
      MeanOnly());
  ASSERT_TRUE(t.ok());
  const stats::CompareCell& c = t->rows[0].variants[0];
  EXPECT_EQ(c.status, stats::CellStatus::kTooFew);
  EXPECT_NEAR(c.change_pct, 50.5, 1e-9);
  EXPECT_EQ(c.verdict, stats::Verdict::kNone);
  EXPECT_TRUE(std::isnan(c.p_value));
  ASSERT_FALSE(report::CompareNoteLines(*t).empty());
  EXPECT_NE(report::CompareNoteLines(*t)[0].find("fewer than 3"), std::string::npos);
}

TEST(CompareTable, SessionsAreTheSamples) {
  // Three sessions of two repetitions: samples are the session means 100, 110, 90.
  auto b = Bench("s/x", {99, 101, 109, 111, 89, 91}, "", {0, 0, 1, 1, 2, 2});
  auto t = stats::BuildCompareTable({Input("b", {b}), Input("v", {b})}, MeanOnly());
  ASSERT_TRUE(t.ok());
  const stats::CompareCell& c = t->rows[0].baseline;
  EXPECT_NE(c.unit, stats::SampleUnit::kRepetition);
  EXPECT_EQ(c.n, 3);
  EXPECT_EQ(c.repetitions, 6);
  EXPECT_EQ(c.sessions, 3);
  EXPECT_DOUBLE_EQ(c.value, 100);
  EXPECT_DOUBLE_EQ(c.sd, 10);  // between-session SD, not the within-session 1.41
}

TEST(CompareTable, VariantsOfOneFileAndDefaultBaseline) {
  std::vector<stats::CompareInput> in = {
      Input("model", {Bench("model/kstack", {50, 50.1, 49.9}, "prng"),
                      Bench("model/kstack", {40, 40.1, 39.9}, "off")})};
  // Without a flagged row (files written before the flag), the first variant is the baseline.
  auto t = stats::BuildCompareTable(in, MeanOnly());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->columns[0].name, "prng");
  in[0].run.benchmarks[1].baseline = true;  // the workload row's flag, not its name, decides
  t = stats::BuildCompareTable(in, MeanOnly());
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->columns.size(), 2u);
  // One file: the common label is dropped from the column names and stated in a note.
  EXPECT_EQ(t->columns[0].name, "off");
  EXPECT_EQ(t->columns[1].name, "prng");
  EXPECT_NE(report::CompareNoteLines(*t)[0].find("variants of one run: 'model'"),
            std::string::npos);
  EXPECT_NEAR(t->rows[0].variants[0].change_pct, 25.0, 1e-9);
  stats::CompareOptions o = MeanOnly();
  o.baseline = "prng";
  t = stats::BuildCompareTable(in, o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->columns[0].name, "prng");
  o.baseline = "model:prng";  // the full label:variant form names the same column
  t = stats::BuildCompareTable(in, o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->columns[0].name, "prng");
  o.baseline = "nope";
  t = stats::BuildCompareTable(in, o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().exit_code, kExitUsage);
  EXPECT_NE(t.error().message.find("the columns are: prng, off"), std::string::npos);
}

TEST(CompareTable, InputsWithOneLabelAreRunsOfOneColumn) {
  // Label "a": runs with means 100, 102, 104 (repetitions 99/101, ...); label "b": 110, 111, 112.
  std::vector<stats::CompareInput> in;
  for (double m : {100.0, 102.0, 104.0}) in.push_back(Input("a", {Bench("s/x", {m - 1, m + 1})}));
  for (double m : {110.0, 111.0, 112.0}) in.push_back(Input("b", {Bench("s/x", {m - 1, m + 1})}));
  in[1].source = "dir/a2.json";
  auto t = stats::BuildCompareTable(in, MeanOnly());
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->columns.size(), 2u);
  EXPECT_EQ(t->columns[0].name, "a");
  EXPECT_EQ(t->columns[0].sources, (std::vector<std::string>{"a.json", "dir/a2.json", "a.json"}));
  const stats::CompareCell& b = t->rows[0].baseline;
  const stats::CompareCell& v = t->rows[0].variants[0];
  EXPECT_EQ(b.unit, stats::SampleUnit::kRun);
  EXPECT_EQ(b.n, 3);
  EXPECT_EQ(b.runs, 3);
  EXPECT_EQ(b.repetitions, 6);
  EXPECT_DOUBLE_EQ(b.value, 102);
  EXPECT_DOUBLE_EQ(b.sd, 2);  // SD of the run means, not of the repetitions
  EXPECT_NE(v.status, stats::CellStatus::kNoRunVariance);
  // Welch on run means: t = (111 - 102) / sqrt(4/3 + 1/3) = 6.97, df = 2.94: p < 0.01.
  EXPECT_NEAR(v.change_pct, 100 * (111.0 / 102 - 1), 1e-9);
  EXPECT_EQ(v.verdict, stats::Verdict::kRegression);
  // Components of "a": repetition 2 (each session 99/101 etc.), run 4 - 2/2 = 3.
  EXPECT_DOUBLE_EQ(b.components.repetition, 2);
  EXPECT_DOUBLE_EQ(b.components.run, 3);
  EXPECT_TRUE(std::isnan(b.components.session));
  // Two files with one label and no others: a single column (and the caller warns).
  t = stats::BuildCompareTable({in[0], in[1]}, MeanOnly());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->columns.size(), 1u);
}

TEST(CompareTable, SingleRunAcrossRunsHasNoVerdict) {
  // A 5 % change on low-noise repetitions: within one run (variants) it is (R); as two files
  // of one run each it is shown with its CI but not marked, and a footnote says why.
  std::vector<double> base = {100, 100.1, 99.9, 100.2, 99.8},
                      up = {105, 105.1, 104.9, 105.2, 104.8};
  auto within = stats::BuildCompareTable({OneRun({{"b", base}, {"v", up}})}, MeanOnly());
  ASSERT_TRUE(within.ok());
  EXPECT_EQ(within->rows[0].variants[0].verdict, stats::Verdict::kRegression);
  EXPECT_NE(within->rows[0].variants[0].status, stats::CellStatus::kNoRunVariance);
  auto across = stats::BuildCompareTable(
      {Input("b", {Bench("s/x", base)}), Input("v", {Bench("s/x", up)})}, MeanOnly());
  ASSERT_TRUE(across.ok());
  const stats::CompareCell& c = across->rows[0].variants[0];
  EXPECT_EQ(c.status, stats::CellStatus::kNoRunVariance);
  EXPECT_EQ(c.verdict, stats::Verdict::kNone);
  EXPECT_NEAR(c.change_pct, 5.0, 1e-9);
  EXPECT_GT(c.ci_low_pct, 0);  // the within-run CI is still reported
  bool noted = false;
  for (const std::string& n : report::CompareNoteLines(*across))
    noted = noted || n.find("measure >= 3 runs per configuration") != std::string::npos;
  EXPECT_TRUE(noted);
  // Several sessions on both sides carry the process-to-process variance but not the run's
  // (boot, the machine's drift between runs): still no verdict across runs.
  std::vector<int> sessions = {0, 1, 2, 3, 4};
  auto sess = stats::BuildCompareTable({Input("b", {Bench("s/x", base, "", sessions)}),
                                        Input("v", {Bench("s/x", up, "", sessions)})},
                                       MeanOnly());
  ASSERT_TRUE(sess.ok());
  EXPECT_EQ(sess->rows[0].variants[0].unit, stats::SampleUnit::kSession);
  EXPECT_EQ(sess->rows[0].variants[0].status, stats::CellStatus::kNoRunVariance);
  EXPECT_EQ(sess->rows[0].variants[0].verdict, stats::Verdict::kNone);
  EXPECT_TRUE(std::isnan(sess->rows[0].variants[0].p_adjusted));
  // The same sessions as variants of one run: decided (they share the run).
  std::vector<BenchmarkResult> both = {Bench("s/x", base, "b", sessions),
                                       Bench("s/x", up, "v", sessions)};
  auto one_run = stats::BuildCompareTable({Input("run", both)}, MeanOnly());
  ASSERT_TRUE(one_run.ok());
  EXPECT_NE(one_run->rows[0].variants[0].status, stats::CellStatus::kNoRunVariance);
  EXPECT_EQ(one_run->rows[0].variants[0].verdict, stats::Verdict::kRegression);
  // One side with sessions, the other a single process: still no verdict.
  auto mixed = stats::BuildCompareTable(
      {Input("b", {Bench("s/x", base, "", sessions)}), Input("v", {Bench("s/x", up)})}, MeanOnly());
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->rows[0].variants[0].status, stats::CellStatus::kNoRunVariance);
}

TEST(CompareTable, InputErrors) {
  auto base = Input("b", {Bench("s/x", {1, 2, 3})});
  auto us = Input("v", {Bench("s/x", {1, 2, 3})});
  us.run.benchmarks[0].unit = "us";
  auto t = stats::BuildCompareTable({base, us}, MeanOnly());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().exit_code, kExitUsage);
  EXPECT_NE(t.error().message.find("s/x"), std::string::npos);
  stats::CompareOptions o;
  o.metrics = {"p95"};
  t = stats::BuildCompareTable({base}, o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("p99"), std::string::npos);  // names the stored metrics
  o = MeanOnly();
  o.alpha = 0;
  EXPECT_FALSE(stats::BuildCompareTable({base}, o).ok());
  EXPECT_FALSE(stats::BuildCompareTable({}, MeanOnly()).ok());
}

// The library's errors name the value, never a command-line flag (the CLI adds it).
TEST(CompareTable, ValueChecksNameTheValueNotAFlag) {
  auto in = Input("b", {Bench("s/x", {1, 2, 3})});
  std::vector<Status> errors = {stats::CheckAlpha(0.5),
                                stats::CheckAlpha(0),
                                stats::CheckPower(1),
                                stats::CheckPower(NAN),
                                stats::CheckMinEffect(-1),
                                stats::CheckMinEffect(INFINITY),
                                stats::CheckTargetEffect(0),
                                stats::CheckTargetEffect(NAN),
                                stats::CheckBaseline({in}, "zzz"),
                                stats::CheckMetricsStored({in}, {"p95"})};
  for (const Status& st : errors) {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().exit_code, kExitUsage);
    EXPECT_EQ(st.error().message.find("--"), std::string::npos) << st.error().message;
  }
  EXPECT_EQ(errors[0].error().message,
            "alpha 0.5 is out of range; give a value in (0, 0.5), e.g. 0.05");
  EXPECT_EQ(errors[2].error().message,
            "power 1 is out of range; give a value in [0.5, 1), e.g. 0.8 (the chance that the "
            "planned runs detect the target effect)");
  EXPECT_EQ(errors[8].error().message, "baseline 'zzz' does not name a column; the columns are: b");
  EXPECT_EQ(errors[9].error().message.rfind("unknown metric 'p95'; the inputs store: mean", 0), 0u);
  for (const Status& st :
       {stats::CheckAlpha(0.05), stats::CheckAlpha(0.49), stats::CheckPower(0.8),
        stats::CheckMinEffect(0), stats::CheckTargetEffect(0.1), stats::CheckBaseline({in}, ""),
        stats::CheckBaseline({in}, "b"), stats::CheckMetricsStored({in}, {"mean"})}) {
    EXPECT_TRUE(st.ok()) << st.error().message;
  }
  // BuildCompareTable and PlanSampleSizes return the same value-only errors.
  stats::CompareOptions o = MeanOnly();
  o.alpha = 0.5;
  auto t = stats::BuildCompareTable({in}, o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, errors[0].error().message);
  stats::SampleSizeOptions p;
  p.target_pct = 0;
  auto rows = stats::PlanSampleSizes({in}, p);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.error().message, errors[6].error().message);
}

TEST(CompareTable, MissingBenchmarkIsBlankWithNote) {
  auto t = stats::BuildCompareTable({Input("b", {Bench("s/x", {1, 2, 3}), Bench("s/y", {1, 2, 3})}),
                                     Input("v", {Bench("s/x", {1, 2, 3})})},
                                    MeanOnly());
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_FALSE(t->rows[1].variants[0].present());
  bool noted = false;
  for (const std::string& n : report::CompareNoteLines(*t))
    noted = noted || n.find("s/y: absent from v") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(CompareTable, HolmNeedsAdjustedP) {
  // Base 10..14 (var 2.5, se of the difference 1, df 8) in both rows; shifts 2.5 and 2.6 give
  // Welch t = 2.5 and 2.6, raw p in (0.025, 0.05): both (R) uncorrected. Holm with m = 2:
  // smallest p x 2 > 0.05, the other max(that, p x 1): both lose the verdict.
  std::vector<double> b = {10, 11, 12, 13, 14};
  std::vector<double> x = {12.5, 13.5, 14.5, 15.5, 16.5}, y = {12.6, 13.6, 14.6, 15.6, 16.6};
  std::vector<stats::CompareInput> in = {Input(
      "run",
      {Bench("s/x", b, "b"), Bench("s/y", b, "b"), Bench("s/x", x, "v"), Bench("s/y", y, "v")})};
  auto raw = stats::BuildCompareTable(in, MeanOnly());
  ASSERT_TRUE(raw.ok());
  double px = raw->rows[0].variants[0].p_value, py = raw->rows[1].variants[0].p_value;
  ASSERT_LT(px, 0.05);
  ASSERT_GT(py, 0.025);
  ASSERT_LT(py, px);
  EXPECT_EQ(raw->rows[0].variants[0].verdict, stats::Verdict::kRegression);
  EXPECT_EQ(raw->rows[1].variants[0].verdict, stats::Verdict::kRegression);
  stats::CompareOptions o = MeanOnly();
  o.correction = stats::Correction::kHolm;
  auto holm = stats::BuildCompareTable(in, o);
  ASSERT_TRUE(holm.ok());
  EXPECT_NEAR(holm->rows[1].variants[0].p_adjusted, 2 * py, 1e-12);
  EXPECT_NEAR(holm->rows[0].variants[0].p_adjusted, std::max(px, 2 * py), 1e-12);
  EXPECT_EQ(holm->rows[0].variants[0].verdict, stats::Verdict::kNone);
  EXPECT_EQ(holm->rows[1].variants[0].verdict, stats::Verdict::kNone);
}

// A/A: both sides from one normal distribution; the fraction of (R)/(I) must be alpha +- 2 points.
double FalsePositiveRate(stats::SignificanceTest test, stats::VerdictMethod method, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(100.0, 2.0);
  stats::CompareOptions o = MeanOnly();
  o.test = test;
  o.method = method;
  const int kTrials = 2000;
  int flagged = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::vector<double> a(10), b(10);
    for (double& v : a) v = noise(rng);
    for (double& v : b) v = noise(rng);
    auto t = stats::BuildCompareTable({OneRun({{"a", a}, {"b", b}})}, o);
    if (t.ok() && t->rows[0].variants[0].verdict != stats::Verdict::kNone) ++flagged;
  }
  return static_cast<double>(flagged) / kTrials;
}

TEST(CompareTable, AaFalsePositiveRateIsAlpha) {
  EXPECT_NEAR(FalsePositiveRate(stats::SignificanceTest::kWelch, stats::VerdictMethod::kCi, 42),
              0.05, 0.02);
  EXPECT_NEAR(
      FalsePositiveRate(stats::SignificanceTest::kMannWhitney, stats::VerdictMethod::kCi, 43), 0.05,
      0.02);
  // The overlap rule is conservative (Schenker & Gentleman 2001): well below alpha.
  EXPECT_LT(FalsePositiveRate(stats::SignificanceTest::kWelch, stats::VerdictMethod::kFastpath, 44),
            0.03);
}

TEST(CompareTable, PlantedFivePercentIsAlwaysFlaggedWithTheRightSign) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 0.5);  // 0.5 % CV on a value of 100
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> base(10), up(10), down(10);
    for (size_t i = 0; i < 10; ++i) {
      base[i] = 100 + noise(rng);
      up[i] = 105 + noise(rng);
      down[i] = 95 + noise(rng);
    }
    auto t =
        stats::BuildCompareTable({OneRun({{"b", base}, {"up", up}, {"down", down}})}, MeanOnly());
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->rows[0].variants[0].verdict, stats::Verdict::kRegression) << trial;
    EXPECT_EQ(t->rows[0].variants[1].verdict, stats::Verdict::kImprovement) << trial;
  }
}

// Runs of two configurations with a planted run-level random effect: each run's level is
// shifted by N(0, run_sd) (a boot, a process), its repetitions vary by N(0, rep_sd) around it.
std::vector<stats::CompareInput> SimulatedRuns(std::mt19937_64& rng, const std::string& label,
                                               int runs, double level, double run_sd,
                                               double rep_sd) {
  std::normal_distribution<double> run_effect(0, run_sd), noise(0, rep_sd);
  std::vector<stats::CompareInput> out;
  for (int r = 0; r < runs; ++r) {
    double m = level + run_effect(rng);
    std::vector<double> reps(15);
    for (double& v : reps) v = m + noise(rng);
    out.push_back(Input(label, {Bench("s/x", reps)}));
    out.back().source = fmt::format("{}{}.json", label, r);
  }
  return out;
}

int CountFlagged(uint64_t seed, int runs, double change, int trials, int* no_run_variance) {
  std::mt19937_64 rng(seed);
  int flagged = 0;
  for (int t = 0; t < trials; ++t) {
    // Run effect SD 2 % dwarfs the repetitions' 0.5 %: repetitions alone would flag most A/A.
    auto in = SimulatedRuns(rng, "a", runs, 100, 2, 0.5);
    auto b = SimulatedRuns(rng, "b", runs, 100 * (1 + change), 2, 0.5);
    in.insert(in.end(), b.begin(), b.end());
    auto table = stats::BuildCompareTable(in, MeanOnly());
    EXPECT_TRUE(table.ok());
    const stats::CompareCell& c = table->rows[0].variants[0];
    if (c.verdict != stats::Verdict::kNone) ++flagged;
    if (no_run_variance && c.status == stats::CellStatus::kNoRunVariance) ++*no_run_variance;
  }
  return flagged;
}

TEST(CompareTable, AaRunsWithARunLevelEffectStayAtAlpha) {
  // The promise is <= 5 %: Welch on 3 per-run means with the Fieller CI is somewhat conservative
  // (about 3 %), so the bound is alpha + 2 points (SE of the rate at 600 trials: 0.9 points) with a
  // floor that catches a rule that never marks. Treating the repetitions as samples (the old
  // rule) flags most of these A/A pairs: the run SD is 4x the repetition SD.
  const int kTrials = 600;
  double rate = static_cast<double>(CountFlagged(11, 3, 0, kTrials, nullptr)) / kTrials;
  EXPECT_LE(rate, 0.07) << "3 vs 3 runs";
  EXPECT_GE(rate, 0.01) << "3 vs 3 runs";
  rate = static_cast<double>(CountFlagged(12, 5, 0, kTrials, nullptr)) / kTrials;
  EXPECT_LE(rate, 0.07) << "5 vs 5 runs";
  EXPECT_GE(rate, 0.01) << "5 vs 5 runs";
  // One run per label: never marked, every cell says why.
  int unmarked = 0;
  EXPECT_EQ(CountFlagged(13, 1, 0, 100, &unmarked), 0);
  EXPECT_EQ(unmarked, 100);
}

// One run per label with several sessions each, and a run-level effect: session means leave
// the run effect out, so deciding on them flags A/A pairs far above alpha (13-38 % with this
// machine's variance components). They must stay unmarked.
TEST(CompareTable, AaSessionsOfSingleRunsAreNeverMarked) {
  std::mt19937_64 rng(31);
  std::normal_distribution<double> run_effect(0, 2.6), session_effect(0, 3.8), noise(0, 5.3);
  int marked = 0, unmarked = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<stats::CompareInput> in;
    for (const char* label : {"a", "b"}) {
      const double run_level = 100 + run_effect(rng);
      std::vector<double> reps;
      std::vector<int> sessions;
      for (int s = 0; s < 5; ++s) {
        const double level = run_level + session_effect(rng);
        for (int r = 0; r < 20; ++r) {
          reps.push_back(level + noise(rng));
          sessions.push_back(s);
        }
      }
      in.push_back(Input(label, {Bench("s/x", reps, "", sessions)}));
    }
    auto t = stats::BuildCompareTable(in, MeanOnly());
    ASSERT_TRUE(t.ok());
    const stats::CompareCell& c = t->rows[0].variants[0];
    if (c.verdict != stats::Verdict::kNone) ++marked;
    if (c.status == stats::CellStatus::kNoRunVariance) ++unmarked;
  }
  EXPECT_EQ(marked, 0);
  EXPECT_EQ(unmarked, 200);
}

// An overhead-corrected baseline at or below 0: no % change, no verdict, and the cell shows the
// column's own value with a note (a negative base used to flip the sign of the verdict).
TEST(CompareTable, BaselineAtOrBelowZeroHasNoChange) {
  for (double base : {-2.0, 0.0}) {
    std::vector<double> b = {base - 0.1, base, base + 0.1, base}, v = {-1.1, -1, -0.9, -1};
    auto t = stats::BuildCompareTable({OneRun({{"b", b}, {"v", v}})}, MeanOnly());
    ASSERT_TRUE(t.ok());
    const stats::CompareCell& c = t->rows[0].variants[0];
    EXPECT_EQ(c.status, stats::CellStatus::kBaselineNotPositive) << base;
    EXPECT_TRUE(std::isnan(c.change_pct)) << base;
    EXPECT_EQ(c.verdict, stats::Verdict::kNone) << base;
    bool noted = false;
    for (const std::string& n : report::CompareNoteLines(*t))
      noted = noted || n.rfind("# the baseline", 0) == 0;
    EXPECT_TRUE(noted) << base;
    const std::string grid = report::RenderCompareGrid(*t);
    EXPECT_NE(grid.find("-1.00 ns #"), std::string::npos) << grid;
  }
}

TEST(CompareTable, ConflictingLowerIsBetterIsAUsageError) {
  auto a = Input("a", {Bench("s/x", {1, 2, 3})});
  auto b = Input("b", {Bench("s/x", {1, 2, 3})});
  b.run.benchmarks[0].lower_is_better = false;
  auto t = stats::BuildCompareTable({a, b}, MeanOnly());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().exit_code, kExitUsage);
  EXPECT_NE(t.error().message.find("lower-is-better in 'a' but higher-is-better in 'b'"),
            std::string::npos)
      << t.error().message;
}

// Mann-Whitney with 3 vs 3 samples: its smallest two-sided p is 2 / C(6, 3) = 0.1, so a clear
// +5 % is never marked at alpha 0.05; the table says why instead of staying silent.
TEST(CompareTable, MannWhitneyTooFewSamplesIsExplained) {
  EXPECT_DOUBLE_EQ(stats::MannWhitneyMinP(3, 3), 0.1);
  EXPECT_DOUBLE_EQ(stats::MannWhitneyMinP(4, 4), 2.0 / 70);
  EXPECT_DOUBLE_EQ(stats::MannWhitneyMinP(1, 1), 1.0);
  stats::CompareOptions o = MeanOnly();
  o.test = stats::SignificanceTest::kMannWhitney;
  auto t = stats::BuildCompareTable(
      {OneRun({{"b", {100, 100.1, 99.9}}, {"v", {105, 105.1, 104.9}}})}, o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows[0].variants[0].verdict, stats::Verdict::kNone);
  EXPECT_DOUBLE_EQ(t->rows[0].variants[0].p_value, 0.1);
  bool noted = false;
  for (const std::string& n : report::CompareNoteLines(*t))
    noted = noted || n.find("smallest attainable p is 0.1") != std::string::npos;
  EXPECT_TRUE(noted);
  // Tied values (per-repetition percentiles move in whole timer steps) take the normal
  // approximation, which must not slip under the note's promise: still no mark.
  t = stats::BuildCompareTable({OneRun({{"b", {100, 100, 100}}, {"v", {110, 110, 110}}})}, o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows[0].variants[0].verdict, stats::Verdict::kNone);
  // 4 vs 4 can (p = 0.0286): marked, no note.
  t = stats::BuildCompareTable(
      {OneRun({{"b", {100, 100.1, 99.9, 100.2}}, {"v", {105, 105.1, 104.9, 105.2}}})}, o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows[0].variants[0].verdict, stats::Verdict::kRegression);
  for (const std::string& n : report::CompareNoteLines(*t))
    EXPECT_EQ(n.find("smallest attainable"), std::string::npos);
}

// A tail metric of short repetitions is an extreme-value estimate: a repetition of 500 calls
// has 5 calls above its p99. The table says so; with 1000 calls (10 above) it stays quiet.
TEST(CompareTable, ThinTailsAreNoted) {
  stats::CompareOptions o;
  o.metrics = {"p99"};
  auto short_reps = Bench("s/x", {100, 101, 99, 100});
  for (Repetition& r : short_reps.repetitions) r.iterations = 500;
  auto t = stats::BuildCompareTable({Input("run", {short_reps})}, o);
  ASSERT_TRUE(t.ok());
  bool noted = false;
  for (const std::string& n : report::CompareNoteLines(*t))
    noted = noted || n.find(
                         "p99: a cell is the mean of per-repetition p99s, and a repetition "
                         "of 500 calls has only 5 calls above its p99: the value rests on a "
                         "few extreme calls; measure tails with more iterations per repetition "
                         "(>= 1000 for p99)") == 0;
  EXPECT_TRUE(noted);
  t = stats::BuildCompareTable({Input("run", {Bench("s/x", {100, 101, 99, 100})})}, o);
  ASSERT_TRUE(t.ok());
  for (const std::string& n : report::CompareNoteLines(*t))
    EXPECT_EQ(n.find("calls above its"), std::string::npos);
  // p99.9 of 10000 calls has exactly 10 above it: quiet (it was noted as "10.0 calls ... >=
  // 10000" while 1 - 99.9/100 was 0.000999999999999889); 9000 calls have 9 and are noted.
  o.metrics = {"p99.9"};
  auto reps_of = [](uint64_t calls) {
    auto b = Bench("s/x", {100, 101, 99, 100});
    for (Repetition& r : b.repetitions) {
      r.iterations = calls;
      r.metrics["p99.9"] = r.metrics["mean"];
    }
    return b;
  };
  t = stats::BuildCompareTable({Input("run", {reps_of(10000)})}, o);
  ASSERT_TRUE(t.ok());
  for (const std::string& n : report::CompareNoteLines(*t))
    EXPECT_EQ(n.find("calls above its"), std::string::npos);
  t = stats::BuildCompareTable({Input("run", {reps_of(9000)})}, o);
  ASSERT_TRUE(t.ok());
  noted = false;
  for (const std::string& n : report::CompareNoteLines(*t))
    noted = noted || (n.find("repetition of 9000 calls has only 9 calls above its p99.9") !=
                          std::string::npos &&
                      n.find("(>= 10000 for p99.9)") != std::string::npos);
  EXPECT_TRUE(noted);
}

TEST(Welch, HugeValuesAreTestedAtScaleOne) {
  // Squaring deviations of 1e300 overflows: scipy's ttest_ind says p = 1 here. At scale 1
  // (stats.h) the test is the one on {1, -1, 0.5} vs {~0}: scipy gives 0.8075499102701248.
  const stats::WelchResult r = stats::WelchTTest({1e300, -1e300, 5e299}, {1, 2, 3});
  EXPECT_NEAR(r.p, 0.8075499102701248, 1e-12);
  EXPECT_NEAR(r.se / 6.009252125773316e299, 1, 1e-12);
}

// A statistic that does not depend on the scale gives the same answer at 1e-170 and 1e300 as at
// 1 (the variance underflowed to 0 at 1e-170, p = 0 and --method fastpath marked +50 %; at 1e300
// it overflowed and the cell lost its p and CI). scipy: ttest_ind([2,3,4],[1,2,3]).pvalue =
// 0.2878641347266908, ([1.3,1.4,1.5],[1.0,1.1,1.2]) = 0.021311641128756657.
TEST(Stats, ScaleInvariantStatisticsHoldAtExtremeMagnitudes) {
  auto times = [](std::vector<double> x, double k) {
    for (double& v : x) v *= k;
    return x;
  };
  for (const double k : {1e-170, 1e-310, 1.0, 1e300}) {
    SCOPED_TRACE(k);
    const std::vector<double> a = times({2, 3, 4}, k), b = times({1, 2, 3}, k);
    EXPECT_NEAR(stats::WelchTTest(a, b).p, 0.2878641347266908, 1e-9);
    const stats::RatioInterval ci = stats::FiellerRatioCi(a, b, 0.05);
    const stats::RatioInterval ci1 = stats::FiellerRatioCi({2, 3, 4}, {1, 2, 3}, 0.05);
    EXPECT_EQ(ci.bounded, ci1.bounded);
    EXPECT_NEAR(ci.ratio, 1.5, 1e-9);
    EXPECT_NEAR(stats::StdDev(a) / k, 1, 1e-9);
  }
  for (const double k : {1e-170, 1e300}) {
    SCOPED_TRACE(k);
    const std::vector<double> a = times({1.3, 1.4, 1.5}, k), b = times({1.0, 1.1, 1.2}, k);
    EXPECT_NEAR(stats::WelchTTest(a, b).p, 0.021311641128756657, 1e-9);
    const stats::RatioInterval ci = stats::FiellerRatioCi(a, b, 0.05);
    ASSERT_TRUE(ci.bounded);
    EXPECT_GT(ci.low, 1);
  }
  EXPECT_DOUBLE_EQ(stats::Mean({1.5e308, 1.7e308}), 1.6e308);  // the sum overflows
  // Ordinary magnitudes are bit-identical to the unscaled formulas (scaling by 2^e is exact).
  const std::vector<double> x = {101.25, 99.5, 100.75, 98.0};
  double m = 0, ss = 0;
  for (double v : x) m += v;
  m /= 4;
  for (double v : x) ss += (v - m) * (v - m);
  EXPECT_EQ(stats::StdDev(x), std::sqrt(ss / 3));
}

TEST(CompareTable, ExtremeMagnitudesKeepTheirVerdict) {
  // 1e-170: no verdict (p 0.29; fastpath used to mark (R) 50 %). 1e300: (R) with p 0.021 (the
  // cell used to lose its p and CI without a note).
  for (const stats::VerdictMethod method :
       {stats::VerdictMethod::kCi, stats::VerdictMethod::kFastpath}) {
    stats::CompareOptions o = MeanOnly();
    o.method = method;
    auto t = stats::BuildCompareTable(
        {OneRun({{"b", {1e-170, 2e-170, 3e-170}}, {"v", {2e-170, 3e-170, 4e-170}}})}, o);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->rows[0].variants[0].verdict, stats::Verdict::kNone);
    EXPECT_NEAR(t->rows[0].variants[0].p_value, 0.2878641347266908, 1e-9);
  }
  auto t = stats::BuildCompareTable(
      {OneRun({{"b", {1.0e300, 1.1e300, 1.2e300}}, {"v", {1.3e300, 1.4e300, 1.5e300}}})},
      MeanOnly());
  ASSERT_TRUE(t.ok());
  const stats::CompareCell& v = t->rows[0].variants[0];
  EXPECT_NEAR(v.p_value, 0.021311641128756657, 1e-9);
  EXPECT_EQ(v.verdict, stats::Verdict::kRegression);
  EXPECT_TRUE(std::isfinite(v.ci_low_pct) && std::isfinite(v.mdc_pct));
  EXPECT_NEAR(t->rows[0].baseline.sd / 1e299, 1, 1e-9);
}

TEST(CompareTable, PlantedChangeAcrossRunsIsFound) {
  // +10 % against a run SD of 2 %: with 5 runs per side the MDC is ~4 %, so it is found in
  // (nearly) every trial, always with the right sign.
  const int kTrials = 100;
  EXPECT_GE(CountFlagged(21, 5, 0.10, kTrials, nullptr), kTrials * 98 / 100);
  // -10 %: (I).
  std::mt19937_64 rng(22);
  auto in = SimulatedRuns(rng, "a", 5, 100, 2, 0.5);
  auto b = SimulatedRuns(rng, "b", 5, 90, 2, 0.5);
  in.insert(in.end(), b.begin(), b.end());
  auto table = stats::BuildCompareTable(in, MeanOnly());
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(table->rows[0].variants[0].verdict, stats::Verdict::kImprovement);
}

TEST(VarianceComponents, HandComputedBalancedDesign) {
  // 2 runs x 2 sessions x 2 repetitions. Within sessions: variance 2 each -> repetition 2.
  // Session means 2, 6 | 12, 16: variance 8 in each run -> session = 8 - 2/2 = 7.
  // Run means 4, 14: variance 50 -> run = 50 - 8/2 = 46.
  auto vc = stats::NestedVarianceComponents({{{1, 3}, {5, 7}}, {{11, 13}, {15, 17}}});
  EXPECT_DOUBLE_EQ(vc.repetition, 2);
  EXPECT_DOUBLE_EQ(vc.session, 7);
  EXPECT_DOUBLE_EQ(vc.run, 46);
  EXPECT_EQ(vc.runs, 2u);
  EXPECT_DOUBLE_EQ(vc.sessions_per_run, 2);
  EXPECT_DOUBLE_EQ(vc.repetitions_per_session, 2);
  // Run means equal (4, 4): 0 - 8/2 < 0 is clipped to 0.
  auto clipped = stats::NestedVarianceComponents({{{1, 3}, {5, 7}}, {{5, 7}, {1, 3}}});
  EXPECT_DOUBLE_EQ(clipped.run, 0);
  // One run, one session: only the repetition level varies.
  auto one = stats::NestedVarianceComponents({{{1, 2, 3}}});
  EXPECT_DOUBLE_EQ(one.repetition, 1);
  EXPECT_TRUE(std::isnan(one.session));
  EXPECT_TRUE(std::isnan(one.run));
  EXPECT_TRUE(std::isnan(stats::NestedVarianceComponents({}).repetition));
  // RunMeanVariance: 46 + 7/2 + 2/(2*2) = 50 (= the observed variance of the run means).
  EXPECT_DOUBLE_EQ(stats::RunMeanVariance(vc, 2, 2), 50);
}

TEST(VarianceComponents, PlanLevelsMatchesKaliberaJonesClosedForm) {
  // var rep 100, session 1, run 1 (unit^2); costs rep 0.01 s, session 1 s, run 100 s.
  // K&J: reps = sqrt(1 * 100 / (0.01 * 1)) = 100, sessions = sqrt(100 * 1 / (1 * 1)) = 10.
  stats::VarianceComponents vc;
  vc.repetition = 100;
  vc.session = 1;
  vc.run = 1;
  stats::LevelCosts costs{100, 1, 0.01};
  // Mean 100, effect 1 % = 1 unit; run-mean variance 1 + 0.1 + 0.1 = 1.2 -> ~19 runs.
  auto plan = stats::PlanLevels(vc, 100, 0.01, 0.05, 0.8, costs, 3);
  EXPECT_NEAR(static_cast<double>(plan.repetitions), 100, 10);
  EXPECT_NEAR(static_cast<double>(plan.sessions), 10, 1);
  EXPECT_GE(plan.runs, 18u);
  EXPECT_LE(plan.runs, 21u);
  EXPECT_LE(plan.mdc, 0.01);
  // No run-level variance: the floor of 3 runs, replication moved into sessions/repetitions.
  vc.run = 0;
  plan = stats::PlanLevels(vc, 100, 0.01, 0.05, 0.8, costs, 3);
  EXPECT_EQ(plan.runs, 3u);
  EXPECT_LE(plan.mdc, 0.01);
  EXPECT_EQ(stats::PlanLevels(vc, 0, 0.01, 0.05, 0.8, costs, 3).runs, 0u);  // mean 0
  EXPECT_FALSE(stats::PlanLevels(vc, 0, 0.01, 0.05, 0.8, costs, 3).unreachable);
  // A 0.01 % effect against a run SD of 1 %: about (2.8^2 * 2) / 1e-4 = 157 000 runs, more than
  // the search's 10 000: no plan (it used to print the cap as if it were one).
  vc.run = 1;
  auto far = stats::PlanLevels(vc, 100, 0.0001, 0.05, 0.8, costs, 3);
  EXPECT_EQ(far.runs, 0u);
  EXPECT_TRUE(far.unreachable);
}

TEST(Plan, NeededRepetitionsFromPilot) {
  RunResult run;
  run.label = "pilot";
  run.benchmarks = {Bench("s/x", {99, 101, 99, 101, 99, 101})};  // sd sqrt(1.2), cv 1.0954 %
  stats::SampleSizeOptions o;
  o.metrics = {"mean"};
  o.target_pct = 1.0;
  auto rows = stats::PlanSampleSizes({{"pilot.json", run}}, o);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_NEAR((*rows)[0].cv_pct, 100 * std::sqrt(1.2) / 100, 1e-12);
  // t tables: n = 20 (df 38): (2.024394 + 0.851042) * 1.095445 * sqrt(2/20) = 0.99608 <= 1;
  // n = 19 (df 36): (2.028094 + 0.851570) * 1.095445 * sqrt(2/19) = 1.02347 > 1.
  EXPECT_EQ((*rows)[0].needed, 20u);
  EXPECT_EQ((*rows)[0].sample_unit, stats::SampleUnit::kRepetition);
  EXPECT_TRUE(std::isnan((*rows)[0].components.run));  // one pilot run: unknown
  EXPECT_EQ((*rows)[0].plan.runs, 3u);                 // assumed 0: the floor
  o.target_pct = 0;
  EXPECT_FALSE(stats::PlanSampleSizes({{"pilot.json", run}}, o).ok());
  o.target_pct = 1;
  o.metrics = {"p95"};
  EXPECT_FALSE(stats::PlanSampleSizes({{"pilot.json", run}}, o).ok());
}

// A pilot row with a mean <= 0 (overhead-corrected near-zero rows) is not planned
// (it printed a negative time); the others are.
TEST(Plan, ARowWithANonPositiveMeanCannotBePlanned) {
  RunResult run;
  run.label = "pilot";
  run.benchmarks = {Bench("s/neg", {-2, -1, -3, -2}), Bench("s/pos", {99, 101, 99, 101})};
  stats::SampleSizeOptions o;
  o.metrics = {"mean"};
  o.target_pct = 1.0;
  auto rows = stats::PlanSampleSizes({{"pilot.json", run}}, o);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_TRUE((*rows)[0].not_positive);
  EXPECT_EQ((*rows)[0].plan.runs, 0u);
  EXPECT_EQ((*rows)[0].plan.cost_s, 0.0);
  EXPECT_FALSE((*rows)[1].not_positive);
  EXPECT_GT((*rows)[1].plan.runs, 0u);
  EXPECT_GT((*rows)[1].plan.cost_s, 0.0);
}

// --baseline A:raw is refused when it is both a label (an old file's) and label A's
// variant raw; either alone is taken as before.
TEST(CompareTable, ABaselineThatIsBothALabelAndALabelsVariantIsRefused) {
  std::vector<stats::CompareInput> inputs = {
      Input("A", {Bench("s/x", {100, 101, 99}, "raw"), Bench("s/x", {150, 151, 149}, "libc")}),
      Input("A:raw", {Bench("s/x", {100, 101, 99}, "raw"), Bench("s/x", {150, 151, 149}, "libc")})};
  const Status both = stats::CheckBaseline(inputs, "A:raw");
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().exit_code, kExitUsage);
  EXPECT_NE(both.error().message.find("is ambiguous"), std::string::npos) << both.error().message;
  inputs.pop_back();
  EXPECT_TRUE(stats::CheckBaseline(inputs, "A:raw").ok());
}

// Per-call and loop-mode measurements of one row compared: a note names the row.
TEST(CompareTable, PerCallAgainstLoopModeIsFootnoted) {
  BenchmarkResult loop = Bench("s/x", {100, 101, 99});
  loop.timing = "loop";
  std::vector<stats::CompareInput> inputs = {Input("a", {Bench("s/x", {100, 101, 99})}),
                                             Input("b", {loop})};
  auto t = stats::BuildCompareTable(inputs, MeanOnly());
  ASSERT_TRUE(t.ok()) << t.error().message;
  bool noted = false;
  for (const std::string& n : report::CompareNoteLines(*t))
    noted = noted || n.rfind("timing: s/x compare per-call", 0) == 0;
  EXPECT_TRUE(noted);
  inputs[1] = Input("b", {Bench("s/x", {100, 101, 99})});
  t = stats::BuildCompareTable(inputs, MeanOnly());
  ASSERT_TRUE(t.ok());
  for (const std::string& n : report::CompareNoteLines(*t))
    EXPECT_EQ(n.find("timing:"), std::string::npos) << n;
}

TEST(Plan, RunsOfOneLabelGiveTheRunComponent) {
  // Three pilot runs of label "k", means 100, 102, 104, two repetitions each (+-1).
  std::vector<stats::CompareInput> in;
  for (double m : {100.0, 102.0, 104.0}) in.push_back(Input("k", {Bench("s/x", {m - 1, m + 1})}));
  stats::SampleSizeOptions o;
  o.metrics = {"mean"};
  o.target_pct = 2;
  auto rows = stats::PlanSampleSizes(in, o);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  const stats::SampleSizeRow& r = (*rows)[0];
  EXPECT_EQ(r.sample_unit, stats::SampleUnit::kRun);
  EXPECT_EQ(r.runs, 3);
  EXPECT_DOUBLE_EQ(r.components.run, 3);  // 4 - 2/2, as in the compare test
  EXPECT_DOUBLE_EQ(r.components.repetition, 2);
  EXPECT_GE(r.plan.runs, 3u);
  EXPECT_LE(r.plan.mdc, 0.02);
}

// The cost of a repetition is iterations x mean in the row's unit: 1000 calls of 2 s are
// 2000 s whatever the unit is called (plan once took "s" for ns and planned 1e9 times too
// cheap); and a configuration whose runs disagree on the unit is refused, as compare refuses it.
TEST(Plan, RepetitionCostFollowsTheUnitAndUnitsMustAgree) {
  std::vector<stats::CompareInput> in;
  for (double m : {2.0, 2.1, 2.2}) in.push_back(Input("k", {Bench("s/build", {m - 0.1, m + 0.1})}));
  for (stats::CompareInput& i : in) i.run.benchmarks[0].unit = std::string("s");  // GCC bug 105651
  stats::SampleSizeOptions o;
  o.metrics = {"mean"};
  o.target_pct = 5;
  auto rows = stats::PlanSampleSizes(in, o);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_NEAR((*rows)[0].cost_repetition_s, 1000 * 2.1, 1e-9);
  for (stats::CompareInput& i : in) i.run.benchmarks[0].unit = "ms";
  rows = stats::PlanSampleSizes(in, o);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  EXPECT_NEAR((*rows)[0].cost_repetition_s, 1000 * 2.1e-3, 1e-12);
  in[1].run.benchmarks[0].unit = "s";
  rows = stats::PlanSampleSizes(in, o);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.error().exit_code, kExitUsage);
  EXPECT_NE(rows.error().message.find("has unit 'ms'"), std::string::npos) << rows.error().message;
}

TEST(Metrics, ParseMetricList) {
  auto m = stats::ParseMetricList("mean,,p99");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, (std::vector<std::string>{"mean", "p99"}));
  EXPECT_FALSE(stats::ParseMetricList(",").ok());
  EXPECT_EQ(stats::DefaultCompareMetrics(), (std::vector<std::string>{"mean", "p99", "p99.9"}));
}

TEST(TimerStep, ChangeBelowTimerStepMarksOnlyPercentilesWithinOneStep) {
  EXPECT_TRUE(stats::ChangeBelowTimerStep("p50", 120.2, 130.1, 10.02, std::nullopt));
  EXPECT_FALSE(stats::ChangeBelowTimerStep("p50", 120.2, 130.3, 10.02, std::nullopt));
  EXPECT_TRUE(stats::ChangeBelowTimerStep("p99.9", 160, 150, 4.0, 10.5));  // the larger step counts
  EXPECT_TRUE(stats::ChangeBelowTimerStep("max", 160, 165, 10.0, 10.0));
  // One step as the histogram stores it (a bucket midpoint, a hair under the step) is a step.
  EXPECT_FALSE(stats::ChangeBelowTimerStep("p50", 0, 10.018, 10.0189, std::nullopt));
  EXPECT_FALSE(stats::BaselineBelowTimerStep("p50", 10.018, 10.0189, std::nullopt));
  EXPECT_TRUE(stats::BaselineBelowTimerStep("p50", 9.9, 10.0189, std::nullopt));
  EXPECT_FALSE(
      stats::ChangeBelowTimerStep("mean", 120, 121, 10.0, 10.0));  // means average the step out
  EXPECT_FALSE(stats::ChangeBelowTimerStep("stddev", 1, 2, 10.0, 10.0));
  EXPECT_FALSE(stats::ChangeBelowTimerStep("p50", std::nan(""), 121, 10.0, 10.0));
  EXPECT_FALSE(
      stats::ChangeBelowTimerStep("p50", 120, 121, std::nullopt, std::nullopt));  // unknown
  EXPECT_NE(std::string(stats::kTimerStepFootnote).find("timer step"), std::string::npos);
}

}  // namespace
}  // namespace kstacklab
