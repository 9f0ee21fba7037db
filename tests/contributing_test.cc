// CONTRIBUTING.md stays true: its worked examples are the code in tests/contributing_examples.h
// (checked block by block), and the one row each example adds reaches everything the guide says
// it reaches, with no other edit: the model suite's rows, the kstack table checks, `entropy`,
// and every attack (migration and prng-recover for the crng-fed example; the timer attack for a
// counter-fed row), and the guide's campaign engine reaches the plan's readers and checks,
// campaign.json and the factory. Also: one name per random source, and every table row named in
// docs/models.md.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kstacklab/analysis/attack.h"
#include "kstacklab/analysis/entropy.h"
#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/engines.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/common/error.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/kstack/policies.h"
#include "kstacklab/kstack/sources.h"
#include "kstacklab/results/json.h"
#include "kstacklab/workloads/workload.h"
#include "model_rows.h"

namespace kstacklab::kstack {
#include "contributing_examples.h"  // NOLINT(bugprone-suspicious-include): the guide's code

namespace {

// A counter-fed design of the test's own (the guide's example is crng-fed): the legacy choose
// step fed by the counter, so the timer attack takes it.
struct TestCounterPolicy : PerCpuLegacyPolicy<TscRand> {
  static constexpr const char* kName = "test-counter";
  static constexpr const char* kSummary = "a test's counter-fed design";
  static constexpr KernelVersions kKernels{
      .mainline = "never: a test's design", .stable = "none", .verified = "none"};
  static constexpr AttackFacts kFacts{.generator = Generator::kCounter};
  static Expected<SimPolicy> Simulate(const SimWorld& w) {
    return SimulateCounterFedSteps(
        std::make_shared<PerCpuLegacyPolicy<SimCounterRand, InjectedCpu>>(
            w.cpus, SimCounterRand{w.counter}, InjectedCpu{w.script}));
  }
  TestCounterPolicy() : PerCpuLegacyPolicy(PossibleCpus(), TscRand{}) {}
};

// kPolicies followed by `extra`, as a constexpr array (the model rows index it at compile time).
template <size_t N, size_t... I>
constexpr std::array<PolicyDef, sizeof...(I) + N> WithRows(std::index_sequence<I...> /*rows*/,
                                                           const std::array<PolicyDef, N>& extra) {
  std::array<PolicyDef, sizeof...(I) + N> out{kPolicies[I]...};
  for (size_t i = 0; i < N; ++i) out[sizeof...(I) + i] = extra[i];
  return out;
}

// The guide's one row, added to the production table.
inline constexpr std::array<PolicyDef, 1> kExampleRows = {
    policy_internal::Row<CrngU16EntryPrngPolicy>(),
};
inline constexpr auto kPoliciesPlusExample =
    WithRows(std::make_index_sequence<std::size(kPolicies)>(), kExampleRows);
inline constexpr std::array<PolicyDef, 1> kCounterRows = {
    policy_internal::Row<TestCounterPolicy>(),
};
inline constexpr auto kPoliciesPlusCounter =
    WithRows(std::make_index_sequence<std::size(kPolicies)>(), kCounterRows);

// The guide's source row, in a table of its own beside the baseline.
inline constexpr SourceDef kSourcesWithExample[] = {
    source_internal::Row<NoSource>(),
    source_internal::Row<CrngU32Source>("get_random_u32(): batched CRNG, 24 per refill"),
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kRepo = std::string(KSTACKLAB_TEST_DATA) + "/../..";

// The ```cpp blocks of a markdown text.
std::vector<std::string> CppBlocks(const std::string& md) {
  std::vector<std::string> blocks;
  size_t pos = 0;
  while ((pos = md.find("```cpp\n", pos)) != std::string::npos) {
    pos += 7;
    const size_t end = md.find("```", pos);
    if (end == std::string::npos) break;
    blocks.push_back(md.substr(pos, end - pos));
    pos = end + 3;
  }
  return blocks;
}

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a);
}

// Each block is: code that tests/contributing_examples.h holds verbatim, then from a line
// "// ...and ..." on, the row line(s), which this file holds verbatim (indentation aside).
TEST(ContributingTest, WorkedExamplesAreTheCodeThisTestCompiles) {
  const std::vector<std::string> blocks = CppBlocks(ReadFile(kRepo + "/CONTRIBUTING.md"));
  ASSERT_EQ(blocks.size(), 3u) << "the policy, the source and the engine examples";
  const std::string examples = ReadFile(kRepo + "/tests/contributing_examples.h") +
                               ReadFile(kRepo + "/tests/contributing_engine_example.h");
  const std::string self = ReadFile(kRepo + "/tests/contributing_test.cc");
  for (const std::string& block : blocks) {
    const size_t rows = block.find("\n// ...and ");
    ASSERT_NE(rows, std::string::npos) << block;
    std::string code = block.substr(0, rows);
    while (!code.empty() && code.back() == '\n') code.pop_back();
    code += '\n';
    EXPECT_NE(examples.find(code), std::string::npos)
        << "CONTRIBUTING.md's example differs from tests/contributing_examples.h:\n"
        << code;
    std::istringstream lines(block.substr(rows + 1));
    std::string line;
    int row_lines = 0;
    while (std::getline(lines, line)) {
      if (Trim(line).empty() || Trim(line).rfind("//", 0) == 0) continue;
      ++row_lines;
      EXPECT_NE(self.find(Trim(line)), std::string::npos)
          << "the guide's row is not the row this test adds: " << line;
    }
    EXPECT_EQ(row_lines, 1) << "one row per example";
  }
}

const PolicyDef& ExampleRow() {
  const PolicyDef* def = FindPolicy("crng-u16-entry", kPoliciesPlusExample);
  KSTACKLAB_CHECK(def != nullptr);
  return *def;
}

// The table checks of tests/kstack_test.cc, on the new row: offsets in range, all 64 seen, the
// applied syscall moves the frame over the whole range.
TEST(ContributingTest, NewPolicyPassesTheTableChecks) {
  const PolicyDef& def = ExampleRow();
  auto policy = def.boot();
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  std::bitset<64> seen;
  for (int i = 0; i < 20000; ++i) {
    const uint32_t off = def.next_offset(policy->get());
    ASSERT_TRUE(IsMaskedOffset(off)) << off;
    seen.set(off / 16);
  }
  EXPECT_EQ(seen.count(), 64u);
  std::set<uintptr_t> frames;
  for (int i = 0; i < 5000; ++i) frames.insert(def.syscall(policy->get()));
  EXPECT_EQ(frames.size(), 64u);
}

TEST(ContributingTest, NewPolicyIsMeasuredByTheModelSuite) {
  const std::vector<workloads::WorkloadDef> rows =
      workloads::model_rows::ModelRowsOf<kPoliciesPlusExample, kSources>();
  int found = 0;
  for (const workloads::WorkloadDef& w : rows) {
    if (w.name != "model/kstack" || w.variant != "crng-u16-entry") continue;
    ++found;
    EXPECT_NE(w.summary.find("a lockless get_random_u16() at every syscall entry"),
              std::string::npos);
    auto state = w.setup();
    ASSERT_TRUE(state.ok()) << state.error().message;
    std::vector<uint64_t> ticks(100, UINT64_MAX);
    w.percall(state->get(), ticks.size(), ticks.data());
    for (uint64_t t : ticks) ASSERT_NE(t, UINT64_MAX);
  }
  EXPECT_EQ(found, 2);  // handler:empty and handler:getpid
  const size_t production = workloads::model_rows::ModelRowsOf<kPolicies, kSources>().size();
  EXPECT_EQ(rows.size(), production + 2);
}

TEST(ContributingTest, NewPolicyIsAnalysedByEntropy) {
  auto stats = analysis::SamplePolicy(ExampleRow(), 20000);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->distinct, 64);
  EXPECT_GT(stats->shannon_bits, 5.9);
}

bool HasDesign(const analysis::AttackReport& r, const std::string& design) {
  return std::any_of(r.rows.begin(), r.rows.end(),
                     [&](const analysis::AttackRow& row) { return row.design == design; });
}

TEST(ContributingTest, NewPolicyIsInEveryAttacksRows) {
  const std::span<const PolicyDef> table = kPoliciesPlusExample;
  // migration: every row, by default.
  auto names = analysis::MigrationPolicies(table);
  EXPECT_NE(std::find(names.begin(), names.end(), "crng-u16-entry"), names.end());
  analysis::MigrationOptions m;
  m.syscalls = 5000;
  m.policy_table = table;
  auto mig = analysis::RunMigration(m);
  ASSERT_TRUE(mig.ok()) << mig.error().message;
  EXPECT_TRUE(HasDesign(*mig, "crng-u16-entry"));
  EXPECT_EQ(mig->rows.size(), std::size(kPolicies) + 2);  // + the new row + uniform
  for (const analysis::AttackRow& row : mig->rows) {
    if (row.design == "crng-u16-entry") {
      EXPECT_EQ(row.verdict, "chance");  // a fresh u16 at every entry: nothing to predict
    }
  }
  // prng-recover: a crng-fed design is attacked with the LFSR113 model, and stays at chance.
  names = analysis::PrngRecoverPolicies(table);
  EXPECT_NE(std::find(names.begin(), names.end(), "crng-u16-entry"), names.end());
  analysis::PrngRecoverOptions p;
  p.policy = "crng-u16-entry";
  p.observations = 24;
  p.trials = 2;
  p.predict = 500;
  p.policy_table = table;
  auto prng = analysis::RunPrngRecover(p);
  ASSERT_TRUE(prng.ok()) << prng.error().message;
  ASSERT_TRUE(HasDesign(*prng, "crng-u16-entry"));
  EXPECT_EQ(prng->rows[0].verdict, "no LFSR113 state fits: not recovered");
  // Against the production table, it is unknown.
  p.policy_table = Policies();
  EXPECT_FALSE(analysis::RunPrngRecover(p).ok());
  // timer: not counter-fed, so not a timer row; the timer rows are the production counter-fed
  // designs' (legacy-x86, per-task-x86).
  analysis::TimerOptions t;
  t.resolutions_hz = {24e6};
  t.jitters_ns = {1};
  t.samples = 2000;
  t.policy_table = table;
  auto timer = analysis::RunTimer(t);
  ASSERT_TRUE(timer.ok());
  ASSERT_EQ(timer->rows.size(), 4u);  // 24 MHz and uniform each
  EXPECT_EQ(timer->rows[0].design, "legacy-x86 24 MHz");
  EXPECT_EQ(timer->rows[2].design, "per-task-x86 24 MHz");
}

TEST(ContributingTest, NewCounterFedPolicyIsInTheTimerAndMigrationRows) {
  const std::span<const PolicyDef> table = kPoliciesPlusCounter;
  analysis::TimerOptions t;
  t.resolutions_hz = {24e6};
  t.jitters_ns = {1};
  t.samples = 20000;
  t.policy_table = table;
  auto timer = analysis::RunTimer(t);
  ASSERT_TRUE(timer.ok()) << timer.error().message;
  // Three counter-fed designs: the design column names each.
  ASSERT_EQ(timer->rows.size(), 6u);
  EXPECT_EQ(timer->rows[0].design, "legacy-x86 24 MHz");
  EXPECT_EQ(timer->rows[4].design, "test-counter 24 MHz");
  EXPECT_EQ(timer->rows[5].design, "test-counter uniform");
  // The same design as legacy-x86: the same predictions on the same seed sequence shifted by
  // the rows before it, both predictable at 24 MHz with 1 ns of jitter.
  EXPECT_GT(timer->rows[0].accuracy, 0.95);
  EXPECT_GT(timer->rows[4].accuracy, 0.95);
  EXPECT_LT(timer->rows[5].accuracy, 2.0 / 64);
  analysis::MigrationOptions m;
  m.syscalls = 5000;
  m.policy_table = table;
  auto mig = analysis::RunMigration(m);
  ASSERT_TRUE(mig.ok());
  EXPECT_TRUE(HasDesign(*mig, "test-counter"));
  // prng-recover leaves counter-fed designs to the timer attack.
  const auto names = analysis::PrngRecoverPolicies(table);
  EXPECT_EQ(std::find(names.begin(), names.end(), "test-counter"), names.end());
}

TEST(ContributingTest, NewSourceRowIsAModelRow) {
  const std::vector<workloads::WorkloadDef> rows =
      workloads::model_rows::ModelRowsOf<kPolicies, kSourcesWithExample>();
  int found = 0;
  for (const workloads::WorkloadDef& w : rows) {
    if (w.name != "model/rng" || w.variant != "crng-u32") continue;
    ++found;
    EXPECT_FALSE(w.baseline);
    auto state = w.setup();  // boots it and checks >= 9 refills in 200 calls
    ASSERT_TRUE(state.ok()) << state.error().message;
    EXPECT_GT(w.loop(state->get(), 200), 0u);
  }
  EXPECT_EQ(found, 1);
  EXPECT_EQ(rows.size(), 2 * std::size(kPolicies) + 2);  // kstack rows + off + crng-u32
}

// `name`, as docs/models.md writes a row's name.
std::string Quoted(const char* name) {
  std::string q(1, '`');
  q.append(name);
  q.push_back('`');
  return q;
}

// One name per thing: no two rows share a name; each row is a model source, a raw source or
// both; and docs/models.md names every source and every policy.
TEST(SourceTableTest, OneNamePerSourceAndEveryRowDocumented) {
  std::set<std::string> names;
  for (const SourceDef& s : Sources()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_TRUE(s.model || s.raw_summary != nullptr) << s.name;
    EXPECT_EQ(s.model, s.boot != nullptr) << s.name;
    if (s.model) {
      EXPECT_NE(s.model_summary, nullptr) << s.name;
    }
  }
  EXPECT_TRUE(names.count("siphash") == 1 && names.count("siphash-percpu") == 1);
  EXPECT_FALSE(FindSource("siphash")->model);  // the PRF: dumped, not a model source
  EXPECT_EQ(FindSource("siphash-percpu")->raw_summary, nullptr);
  const std::string doc = ReadFile(kRepo + "/docs/models.md");
  for (const SourceDef& s : Sources()) {
    EXPECT_NE(doc.find(Quoted(s.name)), std::string::npos)
        << "docs/models.md does not name source " << s.name;
  }
  for (const PolicyDef& p : Policies()) {
    EXPECT_NE(doc.find(Quoted(p.name)), std::string::npos)
        << "docs/models.md does not name policy " << p.name;
  }
}

}  // namespace
}  // namespace kstacklab::kstack

namespace kstacklab::campaign {
#include "contributing_engine_example.h"  // NOLINT(bugprone-suspicious-include): the guide's code

namespace {

// The production table followed by the guide's one row.
std::vector<EngineRow> EnginesPlusReplay() {
  std::vector<EngineRow> rows(Engines().begin(), Engines().end());
  rows.insert(rows.end(), {
                              engine_internal::Row<ReplaySettings>(),
                          });
  return rows;
}

TEST(ContributingTest, TheGuidesEngineIsOneRowThatReachesThePlanCampaignJsonAndTheFactory) {
  const std::vector<EngineRow> table = EnginesPlusReplay();
  EXPECT_EQ(EngineNames(table), "qemu, ssh, lava or replay");
  EXPECT_FALSE(FindEngine("replay").ok()) << "the production table is not edited";
  std::string dir = (std::filesystem::temp_directory_path() / "kstacklab-replay-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);

  // The plan file's reader, its key checks and CheckPlan, through the row.
  const std::string yaml =
      "profiles: [{name: off, kernel: /k}, {name: on, kernel: /k}]\nboots: 1\n"
      "engine: {name: replay, dir: " +
      dir + "}\n";
  auto plan = ParsePlanYaml(yaml, "plan.yaml", "", table);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_STREQ(plan->engine.name(), "replay");
  EXPECT_EQ(SettingsOf<ReplaySettings>(*plan).dir, dir);
  ASSERT_TRUE(CheckPlan(*plan).ok());
  auto typo = ParsePlanYaml(
      "profiles: [{name: a, kernel: /k}]\nboots: 1\n"
      "engine: {name: replay, dri: x}\n",
      "plan.yaml", "", table);
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("unknown key 'dri'; the keys are: dir, name"),
            std::string::npos)
      << typo.error().message;
  EXPECT_FALSE(ParsePlanYaml(yaml, "plan.yaml", "").ok()) << "not an engine of Engines()";

  // campaign.json: its own section beside the others' defaults, read back whole.
  const Json j = PlanToJson(*plan, table);
  EXPECT_EQ(j.at("engine").at("name"), "replay");
  EXPECT_EQ(j.at("replay").at("dir"), dir);
  EXPECT_TRUE(j.contains("ssh") && j.contains("lava"));
  auto back = PlanFromJson(j, table);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(SettingsOf<ReplaySettings>(*back).dir, dir);
  EXPECT_FALSE(PlanFromJson(j).ok()) << "a key no row of Engines() writes";

  // The factory: the engine it makes boots by the row's code.
  std::filesystem::create_directories(dir + "/on");
  ASSERT_TRUE(WriteFileAtomic(dir + "/on/result.json", "{}").ok());
  auto engine = MakeEngine(*back, dir + "/.work", "");
  ASSERT_TRUE(engine->Check().ok());
  GuestJob job;
  job.profile = &back->profiles[1];
  const std::atomic<bool> stop{false};
  const GuestReport report = engine->Boot(job, stop);
  EXPECT_TRUE(report.completed) << report.failure;
  EXPECT_EQ(report.files.at("result.json"), "{}");
  job.profile = &back->profiles[0];
  EXPECT_FALSE(engine->Boot(job, stop).completed);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kstacklab::campaign
