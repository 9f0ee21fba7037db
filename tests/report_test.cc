// Renderers (include/kstacklab/report/grid_table.h, compare_report.h) against golden files in
// tests/data/compare/. The lists_s*.txt files are tables posted to the kernel lists: Ryan
// Roberts, "[DISCUSSION] kstack offset randomization: bugs and performance" (2025-11-17) and
// Kevin Brodsky, "[RFC PATCH v5 00/18] pkeys-based page table hardening" (2025-08-20); the
// golden_* files were produced by this code from the hand-made fixtures (make_fixtures.py) and
// checked by eye against the latter's layout; GoldenCellsDerivedByHand pins a few of their cells
// to values computed by hand from the fixtures.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <tuple>

#include "kstacklab/common/text.h"
#include "kstacklab/report/bisect_progress.h"
#include "kstacklab/report/campaign_progress.h"
#include "kstacklab/report/compare_report.h"
#include "kstacklab/report/entropy_report.h"
#include "kstacklab/report/grid_table.h"
#include "kstacklab/report/sample_size_report.h"
#include "kstacklab/report/summary.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/results/result_reader.h"
#include "kstacklab/stats/compare.h"
#include "kstacklab/stats/sample_size.h"

namespace kstacklab {
namespace {

const std::string kDir = std::string(KSTACKLAB_TEST_DATA) + "/compare/";

std::string Slurp(const std::string& name) {
  std::ifstream in(kDir + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Grid, ReproducesListsSection4) {
  report::GridTable t;
  t.header = {{"Benchmark", "Result Class", "Without batching", "With batching"}};
  t.right_align = {false, false, true, true};
  t.groups = {
      {{"mmtests/kernbench", "real time", "0.32%", "0.35%"},
       {"", "system time", "(R) 4.18%", "(R) 3.18%"},
       {"", "user time", "0.08%", "0.20%"}},
      {{"micromm/fork", "fork: h:0", "(R) 221.39%", "(R) 3.35%"},
       {"", "fork: h:1", "(R) 282.89%", "(R) 6.99%"}},
      {{"micromm/munmap", "munmap: h:0", "(R) 17.37%", "-0.28%"},
       {"", "munmap: h:1", "(R) 172.61%", "(R) 8.08%"}},
      {{"micromm/vmalloc", "fix_size_alloc_test: p:1, h:0", "(R) 15.54%", "(R) 12.57%"},
       {"", "fix_size_alloc_test: p:4, h:0", "(R) 39.18%", "(R) 9.13%"},
       {"", "fix_size_alloc_test: p:16, h:0", "(R) 65.81%", "2.97%"},
       {"", "fix_size_alloc_test: p:64, h:0", "(R) 83.39%", "-0.49%"},
       {"", "fix_size_alloc_test: p:256, h:0", "(R) 87.85%", "(I) -2.04%"},
       {"", "fix_size_alloc_test: p:16, h:1", "(R) 51.21%", "3.77%"},
       {"", "fix_size_alloc_test: p:64, h:1", "(R) 60.02%", "0.99%"},
       {"", "fix_size_alloc_test: p:256, h:1", "(R) 63.82%", "1.16%"},
       {"", "random_size_alloc_test: p:1, h:0", "(R) 77.79%", "-0.51%"},
       {"", "vm_map_ram_test: p:1, h:0", "(R) 30.67%", "(R) 27.09%"}},
  };
  EXPECT_EQ(report::RenderGrid(t), Slurp("lists_s4.txt"));
}

TEST(Grid, ReproducesListsSection1TwoLineHeader) {
  report::GridTable t;
  t.header = {{"Benchmark", "randomize=off", "randomize=on", "+ no local_lock", "+ get_random_u8"},
              {"", "(baseline)", "", "", ""}};
  t.right_align = {false, true, true, true, true};
  t.groups = {{{"getpid", "0.19", "(R) -11.43%", "(R) -8.41%", "(R) -5.97%"}},
              {{"getppid", "0.19", "(R) -13.81%", "(R) -7.83%", "(R) -6.14%"}},
              {{"invalid", "0.18", "(R) -12.22%", "(R) -5.55%", "(R) -3.70%"}}};
  EXPECT_EQ(report::RenderGrid(t), Slurp("lists_s1.txt"));
}

// Cells are aligned by terminal columns, not bytes (UTF-8 labels shifted the grid).
TEST(Grid, AlignsByDisplayWidth) {
  report::GridTable t;
  t.header = {{"label", "v"}};
  t.right_align = {false, true};
  t.groups = {{{"d\u00e9j\u00e0", "1"}, {"abcd", "22"}, {"\u4e2d\u6587", "3"}}};
  const std::string text = report::RenderGrid(t);
  EXPECT_NE(text.find("| d\u00e9j\u00e0  |  1 |\n"), std::string::npos) << text;
  EXPECT_NE(text.find("| abcd  | 22 |\n"), std::string::npos) << text;
  EXPECT_NE(text.find("| \u4e2d\u6587  |  3 |\n"), std::string::npos) << text;
}

TEST(Markdown, EscapesPipesAndAligns) {
  report::GridTable t;
  t.header = {{"a", "b"}, {"", "(baseline)"}};
  t.right_align = {false, true};
  t.groups = {{{"x|y", "1"}}};
  EXPECT_EQ(report::RenderMarkdownTable(t), "| a | b (baseline) |\n|---|---:|\n| x\\|y | 1 |\n");
}

stats::CompareTable Build(const std::vector<std::string>& files,
                          const stats::CompareOptions& options = {}) {
  std::vector<stats::CompareInput> in;
  for (const std::string& f : files) {
    auto run = ReadResultFile(kDir + f);
    if (!run.ok()) {
      ADD_FAILURE() << run.error().message;
      return {};
    }
    in.push_back({f, *run});
  }
  auto t = stats::BuildCompareTable(in, options);
  if (!t.ok()) {
    ADD_FAILURE() << t.error().message;
    return {};
  }
  return *t;
}

// Extreme changes print sanely (no 300-digit cell) and a change that is not finite is
// "n/a" in the grid where JSON has null.
TEST(CompareRender, ExtremeAndNonFiniteChangesAgreeAcrossFormats) {
  auto input = [](const std::string& label, double mean) {
    stats::CompareInput in;
    in.source = label + ".json";
    in.run.label = label;
    BenchmarkResult b;
    b.name = "s/x";
    for (double d : {0.0, 1e-3, 2e-3}) {
      Repetition r;
      r.iterations = 1000;
      r.metrics["mean"] = mean * (1 + d);
      b.repetitions.push_back(r);
    }
    in.run.benchmarks.push_back(b);
    return in;
  };
  stats::CompareOptions o;
  o.metrics = {"mean"};
  auto huge = stats::BuildCompareTable({input("a", 1), input("b", 1.7e306)}, o);
  ASSERT_TRUE(huge.ok()) << huge.error().message;
  const std::string grid = report::RenderCompareTables({*huge}, report::CompareFormat::kGrid);
  EXPECT_NE(grid.find("1.7e+308%"), std::string::npos) << grid;
  for (const std::string& line : Split(grid, '\n')) {
    if (line[0] == '|' || line[0] == '+') {  // table rows
      EXPECT_LT(line.size(), 200u) << line;
    }
  }
  auto inf = stats::BuildCompareTable({input("a", 1e-300), input("b", 1.7e308)}, o);
  ASSERT_TRUE(inf.ok()) << inf.error().message;
  ASSERT_FALSE(std::isfinite(inf->rows[0].variants[0].change_pct));
  EXPECT_NE(report::RenderCompareTables({*inf}, report::CompareFormat::kGrid).find("n/a"),
            std::string::npos);
  EXPECT_EQ(report::RenderCompareTables({*inf}, report::CompareFormat::kGrid).find("inf"),
            std::string::npos);
  const Json j = Json::parse(report::RenderCompareTables({*inf}, report::CompareFormat::kJson));
  EXPECT_NE(j.dump().find("\"change_pct\":null"), std::string::npos) << j.dump();
}

// Several tables (compare's one per variant set): grids one after the other, JSON under
// "tables", one CSV header; a single table renders exactly as RenderCompare.
TEST(CompareRender, SeveralTables) {
  const stats::CompareTable t = Build({"base.json", "plus5.json"});
  const std::vector<stats::CompareTable> two = {t, t};
  const std::string grid = report::RenderCompareTables(two, report::CompareFormat::kGrid);
  EXPECT_EQ(grid, report::RenderCompare(t, report::CompareFormat::kGrid) + "\n" +
                      report::RenderCompare(t, report::CompareFormat::kGrid));
  const Json json = Json::parse(report::RenderCompareTables(two, report::CompareFormat::kJson));
  ASSERT_EQ(json["tables"].size(), 2u);
  EXPECT_EQ(json["tables"][1], report::CompareToJsonValue(t));
  const std::string csv = report::RenderCompareTables(two, report::CompareFormat::kCsv);
  const std::string one = report::RenderCompare(t, report::CompareFormat::kCsv);
  EXPECT_EQ(csv, one + one.substr(one.find('\n') + 1));
  EXPECT_EQ(report::RenderCompareTables({t}, report::CompareFormat::kJson),
            report::RenderCompare(t, report::CompareFormat::kJson));
}

// Three labels of one run each: the planted +-5 % is shown with '~' and no verdict (a single run
// carries no run-to-run variance); the golden files changed with that rule.
TEST(CompareRender, GoldenThreeFiles) {
  stats::CompareTable t = Build({"base.json", "plus5.json", "minus5.json"});
  EXPECT_EQ(report::RenderCompare(t, report::CompareFormat::kGrid), Slurp("golden_three.grid"));
  EXPECT_EQ(report::RenderCompare(t, report::CompareFormat::kMarkdown),
            Slurp("golden_three.markdown"));
  EXPECT_EQ(report::RenderCompare(t, report::CompareFormat::kCsv), Slurp("golden_three.csv"));
  EXPECT_EQ(report::RenderCompare(t, report::CompareFormat::kJson), Slurp("golden_three.json"));
}

TEST(CompareRender, GoldenVariantsAndMixed) {
  EXPECT_EQ(report::RenderCompareGrid(Build({"variants.json"})), Slurp("golden_variants.grid"));
  // Hand-derived cells of the grouped runs (kbase_* and kplus5_*): the per-run means of mean.
  stats::CompareOptions mean_only;
  mean_only.metrics = {"mean"};
  stats::CompareTable runs = Build({"kbase_1.json", "kbase_2.json", "kbase_3.json", "kplus5_1.json",
                                    "kplus5_2.json", "kplus5_3.json"},
                                   mean_only);
  double base_sum = 0, plus_sum = 0;
  for (int r = 1; r <= 3; ++r) {
    for (const char* l : {"kbase", "kplus5"}) {
      auto run = ReadResultFile(kDir + fmt::format("{}_{}.json", l, r));
      ASSERT_TRUE(run.ok());
      double sum = 0;
      for (const Repetition& rep : run->benchmarks[0].repetitions) sum += rep.metrics.at("mean");
      (std::string(l) == "kbase" ? base_sum : plus_sum) += sum / 10;
    }
  }
  ASSERT_EQ(runs.rows.size(), 1u);
  EXPECT_NEAR(runs.rows[0].baseline.value, base_sum / 3, 1e-9);
  EXPECT_NEAR(runs.rows[0].variants[0].change_pct, 100 * (plus_sum / base_sum - 1), 1e-9);
  EXPECT_EQ(runs.rows[0].variants[0].verdict, stats::Verdict::kRegression);
  stats::CompareOptions o;
  o.metrics = {"mean"};
  EXPECT_EQ(report::RenderCompareGrid(
                Build({"base.json", "sessions.json", "tiny.json", "partial_set.json"}, o)),
            Slurp("golden_mixed.grid"));
}

// Cells of the golden files derived by hand from the fixtures' repetition means, asserted
// against literals (not against stats/), so a golden file regenerated from wrong code fails here.
//
// syscall/getpid, metric mean (base.json, plus5.json; 10 repetitions each):
//   base : 201.29 198.91 200.2 200.01 200.32 201.23 200.22 198.92 200.22 200.67
//          sum 2001.99 -> mean m_b = 200.199          (grid "200.20 ns", summary "200.2")
//          squared deviations sum 5.82369 -> s^2 = 5.82369 / 9 = 0.647077
//          cv = 100 * sqrt(0.647077) / 200.199 = 100 * 0.804411 / 200.199 = 0.40 %
//   plus5: 212.46 210.88 208.87 209.05 211.25 210.24 208.39 210.02 206.18 211.47
//          sum 2098.81 -> mean m_p = 209.881; squared deviations 29.82969 -> s^2 = 3.31441
//   % change = 100 * (209.881 / 200.199 - 1) = 100 * 9.682 / 200.199 = 4.83619 %  ("4.84%")
//   CI (Fieller): v_p = 3.31441 / 10 = 0.331441, v_b = 0.647077 / 10 = 0.0647077,
//     q = 1.048362, q^2 v_b = 0.071118; df = (0.331441 + 0.071118)^2 /
//     ((0.331441^2 + 0.071118^2) / 9) = 0.162054 / 0.0127679 = 12.69, so t(0.975, df) lies
//     between the table values t(0.975, 13) = 2.160 and t(0.975, 12) = 2.179.
//     low = (m_p m_b - t sqrt(m_p^2 v_b + m_b^2 v_p - t^2 v_p v_b)) / (m_b^2 - t^2 v_b) - 1:
//     t = 2.160: (42017.966 - 2.160 * sqrt(16134.3107)) / 40079.3377 - 1 = 4.1524 %;
//     t = 2.179: (42017.966 - 2.179 * sqrt(16134.3089)) / 40079.3324 - 1 = 4.1464 %.
// model/kstack, metric mean (variants.json; 8 repetitions per variant):
//   off        : 46.85 47.16 47.16 47.05 47.35 47.11 46.98 47.0  sum 376.66 -> 47.0825,
//                squared deviations 0.15675 -> s^2 = 0.0223929, v = s^2 / 8 = 0.00279911
//   percpu-prng: 49.71 49.96 50.34 49.82 50.17 50.01 49.9 50.04  sum 399.95 -> 49.99375,
//                squared deviations 0.2739875 -> s^2 = 0.0391411, v = 0.00489263
//     % change = 100 * (49.99375 / 47.0825 - 1) = 6.18330 %; Welch t = 2.91125 /
//     sqrt(0.00489263 + 0.00279911) = 2.91125 / 0.0877026 = 33.19, far above t(0.975, 7) = 2.365
//     (the smallest df possible with 8 + 8 values is 7): p < 0.05 and the CI excludes 0 -> (R).
//   siphash    : 46.9 47.49 46.83 47.69 47.27 46.92 47.47 47.66  sum 378.23 -> 47.27875,
//                squared deviations 0.8692875 -> s^2 = 0.124184, v = 0.0155230
//     Welch t = 0.19625 / sqrt(0.0155230 + 0.00279911) = 0.19625 / 0.135359 = 1.4498,
//     df = 0.0183221^2 / ((0.0155230^2 + 0.00279911^2) / 7) = 9.44; the t table for df 9 and 10
//     puts 1.4498 between the one-sided 0.10 points (1.383, 1.372) and the 0.05 points (1.833,
//     1.812): two-sided 0.10 < p < 0.20, no verdict.
TEST(CompareRender, GoldenCellsDerivedByHand) {
  stats::CompareTable three = Build({"base.json", "plus5.json", "minus5.json"});
  ASSERT_FALSE(three.rows.empty());
  const stats::CompareRow& getpid = three.rows[0];
  ASSERT_EQ(CompareRowName(getpid.key), "syscall/getpid");
  ASSERT_EQ(getpid.metric, "mean");
  EXPECT_NEAR(getpid.baseline.value, 200.199, 1e-9);
  EXPECT_NEAR(getpid.variants[0].change_pct, 4.83619, 5e-6);
  EXPECT_GE(getpid.variants[0].ci_low_pct, 4.1464);
  EXPECT_LE(getpid.variants[0].ci_low_pct, 4.1524);
  const std::string grid = Slurp("golden_three.grid");
  EXPECT_NE(grid.find("| syscall/getpid  | mean (ns)            |    200.20 ns | 4.84% ~ |"),
            std::string::npos);
  EXPECT_NE(Slurp("golden_three.csv").find("syscall/getpid,,mean,ns,true,plus5,variant,209.881,"),
            std::string::npos);

  stats::CompareOptions mean_only;
  mean_only.metrics = {"mean"};
  stats::CompareTable variants = Build({"variants.json"}, mean_only);
  ASSERT_EQ(variants.rows.size(), 1u);
  ASSERT_EQ(variants.columns.size(), 4u);
  ASSERT_EQ(variants.columns[1].name, "percpu-prng");
  ASSERT_EQ(variants.columns[3].name, "siphash");
  const stats::CompareCell& percpu = variants.rows[0].variants[0];
  EXPECT_NEAR(percpu.change_pct, 6.18330, 5e-6);
  EXPECT_GT(percpu.ci_low_pct, 0.0);
  EXPECT_LT(percpu.p_value, 0.05);
  EXPECT_EQ(percpu.verdict, stats::Verdict::kRegression);
  const stats::CompareCell& siphash = variants.rows[0].variants[2];
  EXPECT_GT(siphash.p_value, 0.10);
  EXPECT_LT(siphash.p_value, 0.20);
  EXPECT_EQ(siphash.verdict, stats::Verdict::kNone);
  EXPECT_NE(Slurp("golden_variants.grid").find("|   47.08 ns |   (R) 6.18% |"), std::string::npos);

  // The run summary of base.json: mean 200.2, cv 0.40 (above).
  auto base = ReadResultFile(kDir + "base.json");
  ASSERT_TRUE(base.ok());
  report::BenchmarkSummary s = report::Summarize(base->benchmarks[0], base->timer.overhead_ns);
  EXPECT_NEAR(s.mean, 200.199, 1e-9);
  EXPECT_NEAR(s.cv_pct, 0.401806, 5e-6);
  EXPECT_NE(report::RenderSummary(*base).find("| syscall/getpid   |   200.2 |"), std::string::npos);
}

TEST(CompareRender, JsonSchema) {
  Json j = report::CompareToJsonValue(Build({"base.json", "tiny.json"}));
  EXPECT_EQ(j["method"], "ci");
  EXPECT_EQ(j["alpha"], 0.05);
  const Json& row = j["rows"][0];
  EXPECT_EQ(row["benchmark"], "syscall/getpid");
  EXPECT_EQ(row["baseline"]["label"], "base");
  EXPECT_EQ(row["baseline"]["n"], 10);
  const Json& v = row["variants"][0];
  EXPECT_EQ(v["verdict"], "-");
  EXPECT_TRUE(v["too_few"].get<bool>());
  EXPECT_TRUE(v["p_value"].is_null());  // too few samples: missing numbers are null
  EXPECT_TRUE(v["change_pct"].is_number());
  // Rows absent in tiny.json: a null value.
  EXPECT_EQ(j["rows"][3]["benchmark"], "syscall/getppid");
  EXPECT_TRUE(j["rows"][3]["variants"][0]["value"].is_null());
}

// --- the warnings: drift summarised ----------------------------------------------------------

stats::DriftFinding Drifting(const std::string& source, const std::string& row,
                             std::vector<stats::DriftMetric> metrics, int session = 0) {
  stats::DriftFinding d;
  d.source = source;
  // "NAME [COLUMN]": the row's name and its column in the input, as DriftRowName joins them.
  const size_t bracket = row.find(" [");
  d.row.name = row.substr(0, bracket);
  if (bracket != std::string::npos) d.column = row.substr(bracket + 2, row.size() - bracket - 3);
  d.unit = "ns";
  d.session = session;
  d.several_sessions = session != 0;
  d.repetitions = 60;
  d.metrics = std::move(metrics);
  return d;
}

stats::DriftMetric Changed(const std::string& metric, double pct, double change = 1) {
  return stats::DriftMetric{metric, pct, change, 1.5, 1e-6};
}

// Several files, several rows each: one line per file with the range of its changes, the
// explanation once, every row only with `verbose`; rows of one file in two tables (two variant
// sets) count once per row.
TEST(CompareWarnings, DriftAcrossInputsIsOneLinePerFileAndOneExplanation) {
  stats::CompareTable first, second;
  first.findings.drift = {
      Drifting("b1.json", "syscall/getpid [raw]", {Changed("mean", -20), Changed("p99.9", -55.3)}),
      Drifting("b1.json", "syscall/getppid [raw]", {Changed("p99", -31.25)}),
      Drifting("b1.json", "syscall/getppid [raw]", {Changed("p99", -30)}, 1),
      Drifting("a2.json", "syscall/getpid [raw]", {Changed("mean", 5)})};
  second.findings.drift = {Drifting("b1.json", "model/kstack [off]", {Changed("mean", -25)})};
  report::CompareWarningOptions options;
  options.details_option = "DETAILS";
  const std::vector<std::string> lines = report::CompareWarningLines({first, second}, options);
  ASSERT_EQ(lines.size(), 3u) << fmt::format("{}", fmt::join(lines, "\n"));
  EXPECT_EQ(lines[0], "drift in 3 rows of b1.json (-55.3 to -20.0 % over the run)");
  EXPECT_EQ(lines[1], "drift in 1 row of a2.json (+5.0 % over the run)");
  EXPECT_EQ(lines[2].rfind("drift: in those rows a metric's repetitions change steadily", 0), 0u);
  EXPECT_NE(lines[2].find("not comparable"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("; DETAILS names each row and metric, as does the JSON output"),
            std::string::npos)
      << lines[2];
  for (const std::string& l : lines) EXPECT_EQ(l.find("--"), std::string::npos) << l;

  options.verbose = true;
  const std::vector<std::string> verbose = report::CompareWarningLines({first, second}, options);
  ASSERT_EQ(verbose.size(), 3u + 5u);
  EXPECT_EQ(verbose[2].find("DETAILS"), std::string::npos) << verbose[2];
  EXPECT_EQ(verbose[3],
            "b1.json: syscall/getpid [raw] drifts over its 60 repetitions: mean -20.0 % (residual "
            "SD 1.5 %, slope p=1e-06), p99.9 -55.3 % (residual SD 1.5 %, slope p=1e-06)");
  EXPECT_EQ(verbose[5].rfind("b1.json: syscall/getppid [raw] drifts over its 60 repetitions in "
                             "session 1: p99 -30.0 %",
                             0),
            0u)
      << verbose[5];
}

// Values at or below zero have no ratio: the change is given in the unit, and the file's line
// gives no % range it does not have.
TEST(CompareWarnings, AChangeWithoutARatioIsGivenInItsUnit) {
  stats::CompareTable t;
  t.findings.drift = {
      Drifting("c.json", "model/rng [off]", {Changed("min", stats::kCompareNaN, -3.25)})};
  report::CompareWarningOptions options;
  options.verbose = true;
  const std::vector<std::string> lines = report::CompareWarningLines({t}, options);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "drift in 1 row of c.json");
  EXPECT_NE(lines[2].find("min -3.25 ns (residual SD"), std::string::npos) << lines[2];
}

// The columns of one run share its drift: a note under the table, no warning; and nothing at
// all without drift.
TEST(CompareWarnings, DriftWithinOneRunIsANoteNotAWarning) {
  stats::CompareTable t;
  t.columns = {{"off", "v.json", "model", "off", {"v.json"}}};
  t.findings.drift_within_one_run = true;
  t.findings.drift = {Drifting("v.json", "model/kstack [off]", {Changed("mean", 3)}),
                      Drifting("v.json", "model/kstack [siphash]", {Changed("mean", 4)}, 2)};
  EXPECT_TRUE(report::CompareWarningLines({t}, report::CompareWarningOptions{}).empty());
  const std::vector<std::string> notes = report::CompareNoteLines(t);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "the machine drifted during the run (model/kstack [off]; model/kstack [siphash] in "
            "session 2): the columns were measured interleaved in one run, so the drift is shared "
            "and does not bias the changes, but it widens the CIs");
  EXPECT_TRUE(report::CompareWarningLines({stats::CompareTable{}}, report::CompareWarningOptions{})
                  .empty());
  EXPECT_TRUE(report::CompareNoteLines(stats::CompareTable{}).empty());
}

TEST(CompareRender, FormatNames) {
  EXPECT_TRUE(report::ParseCompareFormat("md").ok());
  auto bad = report::ParseCompareFormat("html");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().exit_code, kExitUsage);
  EXPECT_EQ(bad.error().message,
            "output format 'html' is unknown; use one of: grid, markdown, csv, json");  // no flag
}

}  // namespace
}  // namespace kstacklab

namespace kstacklab {
namespace {

RunResult SummaryRun(double mean_a, double mean_b, uint64_t raw_ps) {
  RunResult r;
  r.label = "lab";
  r.timer = TimerInfo{"tsc", 2e9, 25.0, true, std::nullopt};
  BenchmarkResult b;
  b.name = "syscall/getpid";
  for (double m : {mean_a, mean_b}) {
    Repetition rep;
    rep.iterations = 10;
    rep.metrics["mean"] = m;
    b.repetitions.push_back(rep);
  }
  b.histogram.RecordN(raw_ps, 20);
  r.benchmarks.push_back(b);
  return r;
}

// --- entropy ------------------------------------------------------------------------------

analysis::EntropyStats SomeEntropyStats() {
  analysis::EntropyStats s;
  s.samples = 4096;
  s.distinct = 64;
  s.shannon_bits = 5.98765;
  s.min_entropy_bits = 5.64236;
  s.chi_square = 66.5;
  s.chi_square_p = 0.27712;
  s.repeat_rate = 0.0168457;
  s.script_bits = 7;
  return s;
}

TEST(EntropyRender, OneRowWithTheDocumentedRounding) {
  std::string text =
      report::RenderGrid(report::EntropyStatsTable("kernel", {{"getpid", SomeEntropyStats()}}));
  EXPECT_NE(text.find("| kernel | samples | distinct | shannon | min-ent | chi2-p |  repeat | "
                      "script |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| getpid |    4096 |       64 |  5.9877 |  5.6424 |  0.277 | 0.01685 |      "
                      "7 |"),
            std::string::npos)
      << text;
}

TEST(EntropyRender, JsonKeysInTheirDocumentedOrder) {
  Json j = report::EntropyStatsJson(SomeEntropyStats());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"samples", "distinct", "shannon_bits",
                                            "min_entropy_bits", "chi_square", "chi_square_p",
                                            "repeat_rate", "stack_entropy_sh_bits"}));
  EXPECT_EQ(j["chi_square"], 66.5);
  EXPECT_EQ(j["stack_entropy_sh_bits"], 7);
}

// --- plan ---------------------------------------------------------------------------------

// Two rows computed by hand: SDs as % of the mean 100 are sqrt(4) = 2 and sqrt(1) = 1; the run
// level did not vary ('?'); the second row's target is out of reach.
std::vector<stats::SampleSizeRow> TwoPlanRows() {
  stats::SampleSizeRow a;
  a.key.name = "syscall/getpid";
  a.configuration = "6.18";
  a.metric = "mean";
  a.unit = "ns";
  a.runs = 1;
  a.sessions = 2;
  a.repetitions = 20;
  a.mean = 100;
  a.cv_pct = 1.5;
  a.mdc_pct = 0.75;
  a.components.session = 4;
  a.components.repetition = 1;
  a.plan.runs = 3;
  a.plan.sessions = 2;
  a.plan.repetitions = 10;
  a.plan.cost_s = 420;
  stats::SampleSizeRow b = a;
  b.key.params = Json{{"depth", 4096}};
  b.metric = "p99";
  b.cv_pct = std::nan("");
  b.plan = {};
  b.plan.unreachable = true;
  return {a, b};
}

TEST(PlanRender, CellsAndFooterComputedByHand) {
  stats::SampleSizeOptions o;
  o.target_pct = 2;
  std::string text = report::RenderPlan(TwoPlanRows(), o, report::PlanFormat::kGrid);
  // Both body lines whole (right-aligned numbers; the benchmark named once per group).
  const std::string first =
      "| syscall/getpid | mean (ns)           | 6.18          |          1 x 2 x 10 | 1.50% |   "
      "0.75% |       ?/2.00/1.00% |               3 x 2 x 10 |     7.0 min |\n";
  const std::string second =
      "|                | depth:4096 p99 (ns) | 6.18          |          1 x 2 x 10 |     ? |   "
      "0.75% |       ?/2.00/1.00% |             > 10000 runs |           - |\n";
  EXPECT_NE(text.find(first + second), std::string::npos) << text;
  EXPECT_NE(text.find("to detect a 2% change with 80% power at alpha 0.05"), std::string::npos);
  EXPECT_NE(text.find("a run costing 2.0 min, a session 1.0 s"), std::string::npos);
  EXPECT_NE(text.find("> 10000 runs: no design of at most 10000 runs"), std::string::npos);
  EXPECT_NE(text.find("A pilot of one run cannot see the run-to-run"), std::string::npos);
}

// A row that cannot be planned (mean <= 0) says so, with no time, and the footer why.
TEST(PlanRender, ANonPositiveMeanCannotBePlanned) {
  stats::SampleSizeOptions o;
  o.target_pct = 2;
  std::vector<stats::SampleSizeRow> rows = TwoPlanRows();
  rows[0].mean = -3;
  rows[0].not_positive = true;
  rows[0].plan = stats::LevelPlan{};
  const std::string text = report::RenderPlan(rows, o, report::PlanFormat::kGrid);
  EXPECT_NE(text.find("cannot be planned |           - |"), std::string::npos) << text;
  EXPECT_NE(text.find("cannot be planned: the pilot's mean is <= 0"), std::string::npos);
  EXPECT_EQ(text.find(" -"), text.find(" - |")) << "no negative time: " << text;
}

TEST(PlanRender, MarkdownFooterLinesAreListItemsAndAReachablePlanHasNoCaveats) {
  stats::SampleSizeOptions o;
  o.target_pct = 2;
  std::vector<stats::SampleSizeRow> rows = {TwoPlanRows()[0]};
  rows[0].components.run = 9;  // the pilot saw its runs vary: sqrt(9) = 3 %
  std::string text = report::RenderPlan(rows, o, report::PlanFormat::kMarkdown);
  EXPECT_NE(text.find("| 3.00/2.00/1.00% |"), std::string::npos) << text;
  EXPECT_NE(text.find("\n- Needed: "), std::string::npos) << text;
  EXPECT_NE(text.find("\n- Pilot: "), std::string::npos) << text;
  EXPECT_EQ(text.find("runs: no design"), std::string::npos);
  EXPECT_EQ(text.find("A pilot of one run"), std::string::npos);
}

TEST(PlanRender, FormatNames) {
  EXPECT_EQ(*report::ParsePlanFormat("grid"), report::PlanFormat::kGrid);
  EXPECT_EQ(*report::ParsePlanFormat("markdown"), report::PlanFormat::kMarkdown);
  auto bad = report::ParsePlanFormat("csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().exit_code, kExitUsage);
  EXPECT_EQ(bad.error().message, "--format 'csv' is unknown; use one of: grid, markdown");
}

TEST(Summary, MeanOfRepetitionsCvAndOverheadCorrectedPercentiles) {
  // Repetition means 100 and 120: mean 110, sd 14.142, cv 12.86 %. Raw 125 ns - 25 ns overhead.
  report::BenchmarkSummary s = report::Summarize(SummaryRun(100, 120, 125000).benchmarks[0], 25.0);
  EXPECT_DOUBLE_EQ(s.mean, 110.0);
  EXPECT_NEAR(s.cv_pct, 100.0 * std::sqrt(200.0) / 110.0, 1e-9);
  EXPECT_EQ(s.repetitions, 2u);
  EXPECT_EQ(s.calls, 20u);
  EXPECT_NEAR(s.p50, 100.0, 125 * 0.0005);
  EXPECT_DOUBLE_EQ(s.max, 100.0);
  std::string text = report::RenderSummary(SummaryRun(100, 120, 125000));
  EXPECT_NE(text.find("overhead 25.0 ns subtracted"), std::string::npos) << text;
  EXPECT_NE(text.find("2 x 10"), std::string::npos) << text;
  EXPECT_EQ(text.find("negative values"), std::string::npos) << text;
  // The table is a GridTable grid: names left, numbers right; cv = 100 * sqrt(200) / 110 = 12.86.
  EXPECT_NE(text.find("\n+================+=======+"), std::string::npos) << text;
  EXPECT_NE(text.find("\n| syscall/getpid | 110.0 | 100.0 |"), std::string::npos) << text;
  EXPECT_NE(text.find("| 12.86 |        - |       2 x 10 |\n+---"), std::string::npos) << text;
}

// A row of one call per repetition (kernbench: one build each) lists every build's elapsed time
// and extra metrics under the means, as kernbench reports every build.
TEST(Summary, OneCallRepetitionsListEachCallsValues) {
  RunResult r;
  r.timer = TimerInfo{"tsc", 2e9, 25.0, true, std::nullopt};
  BenchmarkResult b;
  b.name = "macro/kernbench";
  b.params = Json{{"files", 11}, {"j", 2}};
  b.unit = "s";
  for (auto [elapsed, user, sys] : {std::tuple{8.64, 11.84, 2.91}, std::tuple{8.06, 10.83, 2.89},
                                    std::tuple{8.11, 11.04, 2.86}}) {
    Repetition rep;
    rep.iterations = 1;
    rep.metrics = {{"mean", elapsed}, {"user", user}, {"sys", sys}};
    b.repetitions.push_back(rep);
  }
  r.benchmarks.push_back(b);
  std::string text = report::RenderSummary(r);
  // Means: sys (2.91 + 2.89 + 2.86) / 3 = 2.887, user 11.237.
  EXPECT_NE(text.find("# macro/kernbench files:11, j:2: sys 2.9, user 11.2 (per call, mean of "
                      "repetitions; times in s)\n#   each call (one per repetition): elapsed 8.64, "
                      "8.06, 8.11; sys 2.91, 2.89, 2.86; user 11.84, 10.83, 11.04\n"),
            std::string::npos)
      << text;
  // Eleven builds: summarised by the means only.
  for (int i = 0; i < 8; ++i) r.benchmarks[0].repetitions.push_back(b.repetitions[0]);
  text = report::RenderSummary(r);
  EXPECT_NE(text.find("(per call, mean of repetitions; times in s)"), std::string::npos) << text;
  EXPECT_EQ(text.find("each call"), std::string::npos) << text;
}

// A 32 s call (a kernbench build) is inside the default histogram's range: its percentiles are
// its own (the 2^44 ps layout sent it to overflow and printed max as p50). Beyond the range the
// summary says which rows are affected.
TEST(Summary, LongCallsAreInRangeAndOverflowIsNoted) {
  RunResult r = SummaryRun(32e9, 32e9, 32'000'000'000'000);
  EXPECT_EQ(r.benchmarks[0].histogram.overflow(), 0u);
  report::BenchmarkSummary s = report::Summarize(r.benchmarks[0], 0);
  EXPECT_NEAR(s.p50, 32e9, 32e9 * 0.0005);
  EXPECT_EQ(report::RenderSummary(r).find("longer than the histogram's range"), std::string::npos);
  r.benchmarks[0].histogram.RecordN(uint64_t{1} << 51, 1);  // 37.5 min
  EXPECT_EQ(r.benchmarks[0].histogram.overflow(), 1u);
  EXPECT_NE(report::RenderSummary(r).find("longer than the histogram's range (2^50 ps) in "
                                          "syscall/getpid (1 of 21 calls)"),
            std::string::npos)
      << report::RenderSummary(r);
}

TEST(Summary, HeaderStatesTheTimerStepOrThatItIsUnknown) {
  RunResult r = SummaryRun(100, 120, 125000);
  EXPECT_NE(report::RenderSummary(r).find("step ? ns"), std::string::npos);  // a file from before
  r.timer.resolution_ns = 10.02;
  EXPECT_NE(report::RenderSummary(r).find("step 10.0 ns,"), std::string::npos)
      << report::RenderSummary(r);
}

TEST(Summary, NotesPercentilesDominatedByTheTimerStep) {
  // p50 = 125 - 25 = 100 ns (+-0.06 binning). With a 9.9 ns step that is above 10 steps: no
  // note; with an 11 ns step it is below 10 steps (110 ns): the note names the row and remedy.
  RunResult r = SummaryRun(100, 120, 125000);
  r.timer.resolution_ns = 9.9;
  EXPECT_EQ(report::RenderSummary(r).find("timer step"), std::string::npos)
      << report::RenderSummary(r);
  r.timer.resolution_ns = 11.0;
  std::string text = report::RenderSummary(r);
  EXPECT_NE(text.find("# timer step 11.0 ns: p50 below 10 steps in syscall/getpid:"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("--timing loop"), std::string::npos) << text;
  // Loop mode has no percentiles: nothing to note.
  r.benchmarks[0].histogram = histogram::Histogram();
  EXPECT_EQ(report::RenderSummary(r).find("timer step"), std::string::npos);
}

TEST(Summary, HostStallsPerMillionCallsAndTheirShareOfTime) {
  RunResult r = SummaryRun(100, 120, 125000);
  // 2 repetitions x 10 calls, one stall (540 ns above a 500 ns threshold) in the first. Raw
  // time = (mean + overhead) x calls = (125 + 145) x 10 = 2700 ns; the stall took 20 % of it.
  r.benchmarks[0].repetitions[0].stalls = 1;
  r.benchmarks[0].repetitions[0].stall_ns = 540;
  r.benchmarks[0].repetitions[1].stalls = 0;
  r.benchmarks[0].repetitions[1].stall_ns = 0;
  r.run.stall_threshold_ns = 500;
  report::BenchmarkSummary s = report::Summarize(r.benchmarks[0], 25.0);
  EXPECT_DOUBLE_EQ(s.stalls_per_million, 1.0 / 20 * 1e6);    // 50000 per million
  EXPECT_DOUBLE_EQ(s.stall_time_pct, 540.0 / 2700.0 * 100);  // 20 %
  std::string text = report::RenderSummary(r);
  EXPECT_NE(text.find("stalls/M"), std::string::npos) << text;
  EXPECT_NE(text.find("50000"), std::string::npos) << text;
  EXPECT_NE(text.find("calls above 500 ns) took >= 1 % of the time in syscall/getpid 20.0 %"),
            std::string::npos)
      << text;
  // Repetitions without counts (loop mode, older files): unknown, shown as "-".
  EXPECT_TRUE(std::isnan(
      report::Summarize(SummaryRun(100, 120, 125000).benchmarks[0], 25).stalls_per_million));
}

TEST(Summary, StallShareOfARowInMicroseconds) {
  // A row in us (micromm): 2 repetitions x 10 calls of mean 2 us = 40 000 ns of raw time
  // (overhead 0); one stall of 5 000 ns is 12.5 % of it — not 12 500 % (ns against us).
  RunResult r = SummaryRun(100, 120, 125000);
  BenchmarkResult& b = r.benchmarks[0];
  b.unit = "us";
  for (Repetition& rep : b.repetitions) rep.metrics["mean"] = 2;
  b.repetitions[0].stalls = 1;
  b.repetitions[0].stall_ns = 5000;
  b.repetitions[1].stalls = 0;
  b.repetitions[1].stall_ns = 0;
  const double calls =
      static_cast<double>(b.repetitions[0].iterations + b.repetitions[1].iterations);
  report::BenchmarkSummary s = report::Summarize(b, 0.0);
  ASSERT_EQ(calls, 20.0);
  EXPECT_DOUBLE_EQ(s.stall_time_pct, 12.5);
  EXPECT_LT(s.stall_time_pct, 100.0);
}

TEST(Summary, NegativeCorrectedValuesAreExplained) {
  std::string text =
      report::RenderSummary(SummaryRun(-1.5, -0.5, 20000));  // 20 ns raw < 25 ns overhead
  EXPECT_NE(text.find("negative values"), std::string::npos) << text;
  EXPECT_NE(text.find("loop timing mode"), std::string::npos) << text;
}

// The campaign's progress and notes, word for word as `kstacklab campaign` prints them (the e2e
// tests and users' logs read them) and its stop reasons as campaign.json keeps them.
TEST(CampaignProgress, DurationsInWholeUnitsCutNotRounded) {
  EXPECT_EQ(report::CampaignDurationText(0), "0s");
  EXPECT_EQ(report::CampaignDurationText(45.9), "45s");
  EXPECT_EQ(report::CampaignDurationText(59.99), "59s");
  EXPECT_EQ(report::CampaignDurationText(60), "1m00s");
  EXPECT_EQ(report::CampaignDurationText(65), "1m05s");
  EXPECT_EQ(report::CampaignDurationText(3599), "59m59s");
  EXPECT_EQ(report::CampaignDurationText(3600), "1h00m");
  EXPECT_EQ(report::CampaignDurationText(2 * 3600 + 3 * 60 + 59), "2h03m");
  EXPECT_EQ(report::CampaignDurationText(100 * 3600 + 60), "100h01m");
}

TEST(CampaignProgress, ABootStartingWithAndWithoutItsEta) {
  campaign::BootStarting b{1, 12, "a", 1, 0, std::nullopt};
  EXPECT_EQ(report::BootStartingText(b), "boot 1 of 12: profile a (boot 1), 0s elapsed");
  b = {3, 12, "a", 2, 65, 250};
  EXPECT_EQ(report::BootStartingText(b),
            "boot 3 of 12: profile a (boot 2), 1m05s elapsed, ETA 4m10s");
  b = {7, 40, "on", 4, 45, 2 * 3600 + 3 * 60};
  EXPECT_EQ(report::BootStartingText(b),
            "boot 7 of 40: profile on (boot 4), 45s elapsed, ETA 2h03m");
}

TEST(CampaignProgress, EachNoteInOneLine) {
  EXPECT_EQ(report::RunnerNoteText(campaign::BootFailed{2, "a", true, "the boot did not complete",
                                                        "d/a/boot-2-try-1.console.log"}),
            "boot 2 of 'a' failed, retrying once: the boot did not complete (console: "
            "d/a/boot-2-try-1.console.log)");
  EXPECT_EQ(report::RunnerNoteText(campaign::BootFailed{2, "a", false, "Kernel panic",
                                                        "d/a/boot-2-try-2.console.log"}),
            "boot 2 of 'a' failed: Kernel panic (console: d/a/boot-2-try-2.console.log)");
  EXPECT_EQ(report::RunnerNoteText(campaign::MachineLost{
                5, "on", "sut did not come back after 300 s", "d/on/boot-5-try-1.console.log"}),
            "boot 5 of 'on': sut did not come back after 300 s (log: "
            "d/on/boot-5-try-1.console.log)");
  EXPECT_EQ(report::RunnerNoteText(campaign::TargetNotEvaluable{"no row"}),
            "the target cannot be evaluated: no row");
}

TEST(CampaignProgress, ThePrecisionAfterABlock) {
  campaign::BlockEvaluated e{3, "mean", 1.234, 4, 2, true, 0};
  EXPECT_EQ(report::RunnerNoteText(e),
            "after block 3: worst MDC of the mean 1.23 % over 4 rows (target 2 %): reached");
  e = {4, "p50", 7.5, 1, 2.5, false, 12};
  EXPECT_EQ(report::RunnerNoteText(e),
            "after block 4: worst MDC of the p50 7.50 % over 1 rows (target 2.5 %); about 12 "
            "boots per profile needed (plan)");
  e = {1, "mean", std::nullopt, 2, 1, false, 0};
  EXPECT_EQ(report::RunnerNoteText(e),
            "after block 1: worst MDC of the mean not yet known (fewer than 2 boots) over 2 rows "
            "(target 1 %)");
}

TEST(CampaignProgress, EveryStopReason) {
  using campaign::StopKind;
  EXPECT_EQ(report::CampaignStopText({StopKind::kBootsDone, 0, 0, 0, ""}), "boots done");
  EXPECT_EQ(report::CampaignStopText({StopKind::kTargetReached, 3, 0, 0, ""}),
            "target reached after 3 blocks");
  EXPECT_EQ(report::CampaignStopText({StopKind::kMaxBoots, 0, 40, 0, ""}),
            "max_boots (40) reached before the target");
  EXPECT_EQ(report::CampaignStopText({StopKind::kBudgetSpent, 0, 0, 3725, ""}),
            "time budget spent (1h02m of boots)");
  EXPECT_EQ(report::CampaignStopText({StopKind::kBudgetSpent, 0, 0, 45, ""}),
            "time budget spent (45s of boots)");
  EXPECT_EQ(report::CampaignStopText({StopKind::kMachineLost, 0, 0, 0, "no answer"}),
            "the machine was lost: no answer");
  EXPECT_EQ(report::CampaignStopText({StopKind::kHostWriteFault, 0, 0, 0, "disk full"}),
            "a write on this host failed: disk full");
  EXPECT_EQ(report::CampaignStopText({StopKind::kCaller, 0, 0, 0, "boots keep failing: x"}),
            "boots keep failing: x");
}

TEST(CampaignProgress, EachEngineNoteInOneLine) {
  EXPECT_EQ(report::EngineNoteText(campaign::AcceleratorChanged{
                "tcg", "KVM guest's init stalled: fell back to TCG after a 12.5 s probe"}),
            "KVM guest's init stalled: fell back to TCG after a 12.5 s probe");
  EXPECT_EQ(
      report::EngineNoteText(campaign::GuestFileCut{"run.log", false, 3000000, 524288, 1048576}),
      "the guest's run.log was 3000000 bytes: kept its first and last 524288 bytes (cap "
      "1048576 bytes)");
  EXPECT_EQ(report::EngineNoteText(campaign::GuestFileCut{"result.json", true, 0, 0, 67108864}),
            "the guest's result.json was over 67108864 bytes: not kept");
  const campaign::CappedFile file{"d/a/boot-1-try-1.console.log", 41943040, 8388096, 16777216};
  EXPECT_EQ(report::EngineNoteText(campaign::LogCut{campaign::LogKind::kConsole, file}),
            "console log d/a/boot-1-try-1.console.log was 41943040 bytes: kept its first and last "
            "8388096 bytes (cap 16777216 bytes)");
  EXPECT_EQ(report::EngineNoteText(campaign::LogCut{campaign::LogKind::kLava, file}),
            "LAVA log d/a/boot-1-try-1.console.log was 41943040 bytes: kept its first and last "
            "8388096 bytes (cap 16777216 bytes)");
  EXPECT_EQ(report::EngineNoteText(
                campaign::LogCut{campaign::LogKind::kConsole, {"d/a\nb.log", 40, 10, 32}}),
            "console log d/a\\x0ab.log was 40 bytes: kept its first and last 10 bytes (cap 32 "
            "bytes)");
  EXPECT_EQ(report::EngineNoteText(campaign::MachineAwaited{"sut.example", 2222, 20.4, 300, false}),
            "waiting for sut.example:2222 to answer (20 s of 300 s)");
  EXPECT_EQ(report::EngineNoteText(campaign::MachineAwaited{"sut", 22, 99.6, 2.5, true}),
            "waiting for sut:22 to answer (100 s of 2.5 s, after recover)");
}

// The bisect's notes, word for word as `kstacklab bisect` prints them, and its outcome as
// bisect.json keeps it.
TEST(BisectProgress, EveryOutcome) {
  EXPECT_EQ(report::BisectOutcomeText({false, "", {"k5"}, "k4"}),
            "first bad kernel: k5 (last good: k4)");
  EXPECT_EQ(report::BisectOutcomeText({false, "", {"k3", "k4", "k5"}, "k2"}),
            "the first bad kernel is one of k3, k4, k5 (steps undecided; last good: k2)");
  EXPECT_EQ(report::BisectOutcomeText({true, "runs/b", {}, ""}),
            "the ends differ; a candidate can now be judged against them (kstacklab bisect step "
            "runs/b, for git bisect run)");
  EXPECT_EQ(report::BisectNoteText(campaign::BisectOutcome{false, "", {"k5"}, "k4"}),
            "first bad kernel: k5 (last good: k4)");
}

TEST(BisectProgress, TheBuildAndTheEnds) {
  EXPECT_EQ(report::BisectNoteText(
                campaign::KernelBuilding{"0123456789ab", "b/images/0123456789abcdef/build.log"}),
            "building 0123456789ab ... (log: b/images/0123456789abcdef/build.log)");
  EXPECT_EQ(report::BisectNoteText(campaign::EndsMeasuring{"k0", "k7", 8}),
            "measuring the ends (k0 and k7) until their difference is established, at most 8 "
            "blocks");
  EXPECT_EQ(report::BisectNoteText(
                campaign::EndsMeasured{"k0", 100, "k7", 105.0004, 5.0004, 4.5, 5.5, 3, true}),
            "ends: k0 100.000 vs k7 105.000: difference 5.000 [4.500, 5.500] after 3 blocks: "
            "established");
  EXPECT_EQ(report::BisectNoteText(campaign::EndsMeasured{
                "a", 1.23456, "b", std::nan(""), std::nan(""), -0.25, INFINITY, 12, false}),
            "ends: a 1.235 vs b -: difference - [-0.250, -] after 12 blocks: not established");
}

TEST(BisectProgress, EachStep) {
  EXPECT_EQ(report::BisectNoteText(campaign::StepStarting{2, "k5", "k3", "k7", 6}),
            "step 2: k5 (between k3 and k7), at most 6 blocks of 3 boots");
  EXPECT_EQ(report::BisectNoteText(campaign::StepSkipped{
                3, "k4", "the build failed (exit 2); its build log: b/images/c/build.log"}),
            "step 3: k4: the build failed (exit 2); its build log: b/images/c/build.log: "
            "undecided (skipped)");
  campaign::StepJudged j{1, "k3", 9, {0.1234, 0.05, 0.2, true, 3}, stats::StepVerdict::kGood};
  EXPECT_EQ(report::BisectNoteText(j), "step 1: k3: 9 boots, theta 0.123 [0.050, 0.200]: good");
  j.verdict = stats::StepVerdict::kBad;
  j.interval = {0.95, 0.9, 1.0, true, 3};
  EXPECT_EQ(report::BisectNoteText(j), "step 1: k3: 9 boots, theta 0.950 [0.900, 1.000]: bad");
  j.verdict = stats::StepVerdict::kUndecided;
  j.interval = {std::nan(""), 0, 0, false, 6};
  EXPECT_EQ(report::BisectNoteText(j),
            "step 1: k3: 9 boots, theta - unbounded: undecided (skipped)");
}

}  // namespace
}  // namespace kstacklab
