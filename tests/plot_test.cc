// Plot data and gnuplot jobs (src/report/plot*.cc): the CDF points from a histogram, the format
// and kind parsing, and what the generated script and data files contain. Rendering itself is
// covered end to end by tests/e2e/plot_cli.sh.
#include "kstacklab/report/plot.h"

#include <gtest/gtest.h>

namespace kstacklab {
namespace {

TEST(LatencyCdf, PointsAtBucketUpperEdgesOverheadCorrected) {
  histogram::Histogram h;  // 11 sub-bucket bits: values in [2^16, 2^17) have 64 ps wide buckets
  h.RecordN(100000, 3);    // bucket [99968, 100032)
  h.RecordN(200000, 1);    // bucket [200000, 200064)
  std::vector<report::CdfPoint> cdf = report::LatencyCdf(h, 10.0);
  ASSERT_EQ(cdf.size(), 3u);
  EXPECT_DOUBLE_EQ(cdf[0].ns, 90.0);  // min - overhead, nothing below it
  EXPECT_DOUBLE_EQ(cdf[0].fraction, 0.0);
  EXPECT_DOUBLE_EQ(cdf[1].ns, 100.032 - 10.0);
  EXPECT_DOUBLE_EQ(cdf[1].fraction, 0.75);
  EXPECT_DOUBLE_EQ(cdf[2].ns, 200.064 - 10.0);
  EXPECT_DOUBLE_EQ(cdf[2].fraction, 1.0);
}

TEST(LatencyCdf, DropsNonPositiveLatenciesButCountsThem) {
  histogram::Histogram h;
  h.RecordN(5000, 1);  // 5 ns raw, below a 10 ns overhead
  h.RecordN(100000, 1);
  std::vector<report::CdfPoint> cdf = report::LatencyCdf(h, 10.0);
  ASSERT_EQ(cdf.size(), 1u);
  EXPECT_DOUBLE_EQ(cdf[0].ns, 100.032 - 10.0);
  EXPECT_DOUBLE_EQ(cdf[0].fraction, 1.0);
  EXPECT_TRUE(report::LatencyCdf(histogram::Histogram(), 0).empty());
}

TEST(LatencyCdf, OverflowEndsAtMax) {
  histogram::Histogram h(11, 20);  // range [0, 2^20 ps)
  h.RecordN(500000, 1);
  h.RecordN(3000000, 1);  // overflow
  std::vector<report::CdfPoint> cdf = report::LatencyCdf(h, 0);
  ASSERT_EQ(cdf.size(), 3u);
  EXPECT_DOUBLE_EQ(cdf[1].fraction, 0.5);
  EXPECT_DOUBLE_EQ(cdf[2].ns, 3000.0);
  EXPECT_DOUBLE_EQ(cdf[2].fraction, 1.0);
}

TEST(PlotFormat, ComesFromTheExtension) {
  EXPECT_EQ(*report::PlotFormatForPath("a/b.png"), report::PlotFormat::kPng);
  EXPECT_EQ(*report::PlotFormatForPath("B.SVG"), report::PlotFormat::kSvg);
  for (const char* bad : {"x.jpg", "x", "-", "png"}) {
    auto f = report::PlotFormatForPath(bad);
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_EQ(f.error().exit_code, kExitUsage);
    EXPECT_NE(f.error().message.find(".png or .svg"), std::string::npos);
  }
  EXPECT_EQ(*report::ParsePlotKind("tail"), report::PlotKind::kTail);
  // Library messages name the value, not the flag (the CLI prefixes "--kind:" / "-o:").
  auto pie = report::ParsePlotKind("pie");
  ASSERT_FALSE(pie.ok());
  EXPECT_EQ(pie.error().message, "plot kind 'pie' is not known; use cdf, tail or compare");
  EXPECT_EQ(report::PlotFormatForPath("x.jpg").error().message.find("-o"), std::string::npos);
}

TEST(GnuplotQuote, DoublesSingleQuotes) {
  EXPECT_EQ(report::GnuplotQuote("it's"), "'it''s'");
  EXPECT_EQ(report::GnuplotQuote("a\nb"), "'a b'");
}

RunResult MakeRun(const std::string& label, double overhead) {
  RunResult r;
  r.label = label;
  r.timer.overhead_ns = overhead;
  for (const char* variant : {"", "v2"}) {
    BenchmarkResult b;
    b.name = "syscall/getpid";
    b.variant = variant;
    b.histogram.RecordN(200000, 10);
    r.benchmarks.push_back(std::move(b));
  }
  BenchmarkResult loop;
  loop.name = "micromm/fork";
  loop.params = Json{{"size", 4096}};
  loop.timing = "loop";
  r.benchmarks.push_back(std::move(loop));
  return r;
}

TEST(BuildLatencyPlot, OneCurvePerConfigurationAndNotesForLoopMode) {
  std::vector<report::PlotInput> in = {{"a.json", MakeRun("base", 20)},
                                       {"b.json", MakeRun("it's", 20)}};
  auto job = report::BuildLatencyPlot(in, report::PlotKind::kCdf, report::PlotFormat::kSvg);
  ASSERT_TRUE(job.ok()) << job.error().message;
  ASSERT_EQ(job->data_files.size(), 4u);  // one panel, four curves
  EXPECT_EQ(job->data_files[0].first, "p0_c0.dat");
  EXPECT_NE(job->data_files[0].second.find("\n180.064 1\n"), std::string::npos)
      << job->data_files[0].second;
  const std::string& s = job->script;
  EXPECT_NE(s.find("set terminal svg"), std::string::npos);
  EXPECT_NE(s.find("set output 'plot.out'"), std::string::npos);
  EXPECT_NE(s.find("set logscale x 10"), std::string::npos);
  EXPECT_NE(s.find("title 'base'"), std::string::npos);
  EXPECT_NE(s.find("title 'base:v2'"), std::string::npos);
  EXPECT_NE(s.find("title 'it''s:v2'"), std::string::npos);
  EXPECT_NE(s.find("timer overhead 20 ns subtracted"), std::string::npos);
  ASSERT_EQ(job->notes.size(), 2u);
  EXPECT_NE(job->notes[0].find("micromm/fork size:4096"), std::string::npos);
}

TEST(BuildLatencyPlot, SameLabelTwiceIsDisambiguatedBySource) {
  std::vector<report::PlotInput> in = {{"a.json", MakeRun("x", 20)}, {"b.json", MakeRun("x", 25)}};
  auto job = report::BuildLatencyPlot(in, report::PlotKind::kTail, report::PlotFormat::kPng);
  ASSERT_TRUE(job.ok());
  EXPECT_NE(job->script.find("title 'x (a.json)'"), std::string::npos);
  EXPECT_NE(job->script.find("title 'x:v2 (b.json)'"), std::string::npos);
  EXPECT_NE(job->script.find("set logscale y 10"), std::string::npos);
  EXPECT_NE(job->script.find("pngcairo"), std::string::npos);
  EXPECT_NE(job->script.find("each input''s timer overhead subtracted"), std::string::npos);
  // Tail: every call is in one bucket, so only the point at min (fraction slower = 1) remains.
  EXPECT_EQ(job->data_files[0].second.substr(
                job->data_files[0].second.rfind("\n", job->data_files[0].second.size() - 2) + 1),
            "180 1\n");
}

TEST(BuildLatencyPlot, NothingDrawableIsAUsageError) {
  RunResult r;
  r.label = "loop";
  BenchmarkResult b;
  b.name = "syscall/getpid";
  b.timing = "loop";
  r.benchmarks.push_back(b);
  auto job =
      report::BuildLatencyPlot({{"l.json", r}}, report::PlotKind::kCdf, report::PlotFormat::kPng);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.error().exit_code, kExitUsage);
  EXPECT_NE(job.error().message.find("per-call timing mode"), std::string::npos);
}

TEST(BuildComparePlot, OnePointPerCellWithWhiskersAndVerdicts) {
  stats::CompareTable t;
  t.columns = {
      {"base", "a", "base", "", {}}, {"on", "b", "on", "", {}}, {"prng", "c", "prng", "", {}}};
  stats::CompareRow row;
  row.key.name = "syscall/getpid";
  row.metric = "p99";
  stats::CompareCell on;
  on.status = stats::CellStatus::kCompared;
  on.change_pct = 12.5;
  on.ci_low_pct = 10;
  on.ci_high_pct = 15;
  on.verdict = stats::Verdict::kRegression;
  stats::CompareCell prng;
  prng.status = stats::CellStatus::kCompared;
  prng.change_pct = -1;  // CI unbounded: drawn without whiskers
  row.variants = {on, prng};
  t.rows.push_back(row);
  stats::CompareRow empty = row;
  empty.metric = "mean";
  empty.variants = {stats::CompareCell{}, stats::CompareCell{}};
  t.rows.push_back(empty);
  auto job = report::BuildComparePlot(t, report::PlotFormat::kSvg);
  ASSERT_TRUE(job.ok()) << job.error().message;
  ASSERT_EQ(job->data_files.size(), 3u);
  EXPECT_EQ(job->data_files[0].first, "v0.dat");
  EXPECT_EQ(job->data_files[0].second, "# change_pct y ci_low ci_high\n12.5 0.3 10 15\n");
  EXPECT_EQ(job->data_files[1].first, "v0_marks.dat");
  EXPECT_EQ(job->data_files[1].second, "# x y verdict\n15 0.3 (R)\n");
  EXPECT_EQ(job->data_files[2].second, "# change_pct y ci_low ci_high\n-1 -0.3 -1 -1\n");
  EXPECT_NE(job->script.find("set ytics ('syscall/getpid p99' 0) nomirror"), std::string::npos);
  EXPECT_NE(job->script.find("% change vs base (baseline)"), std::string::npos);
  EXPECT_NE(job->script.find("title 'prng'"), std::string::npos);
  ASSERT_EQ(job->notes.size(), 1u);
  EXPECT_NE(job->notes[0].find("syscall/getpid mean"), std::string::npos);
  EXPECT_NE(job->notes[0].find("(missing in a column)"), std::string::npos) << job->notes[0];
}

// A row whose baseline cannot be resolved (a p50 below one timer step) is left out with that
// reason, not "missing in a column".
TEST(BuildComparePlot, UnresolvedBaselineIsNamedAsTheReason) {
  stats::CompareTable t;
  t.columns = {{"off", "a", "off", "", {}}, {"legacy-x86", "a", "legacy-x86", "", {}}};
  stats::CompareRow drawn;
  drawn.key.name = "model/kstack";
  drawn.metric = "mean";
  stats::CompareCell up;
  up.status = stats::CellStatus::kCompared;
  up.change_pct = 300;
  drawn.variants = {up};
  t.rows.push_back(drawn);
  stats::CompareRow p50 = drawn;
  p50.metric = "p50";
  stats::CompareCell unresolved;
  unresolved.status = stats::CellStatus::kBaselineBelowTimerStep;
  unresolved.value = 20;
  p50.variants = {unresolved};
  t.rows.push_back(p50);
  auto job = report::BuildComparePlot(t, report::PlotFormat::kSvg);
  ASSERT_TRUE(job.ok()) << job.error().message;
  ASSERT_EQ(job->notes.size(), 1u);
  EXPECT_NE(job->notes[0].find("model/kstack p50: no % change computable (the baseline's value is "
                               "<= 0 or below one timer step)"),
            std::string::npos)
      << job->notes[0];
}

}  // namespace
}  // namespace kstacklab
