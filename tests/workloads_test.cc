#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "kstacklab/erase/erase.h"
#include "kstacklab/workloads/workload.h"

namespace kstacklab::workloads {
namespace {

TEST(Workloads, DefaultSelectionIsTheSyscallSuite) {
  auto rows = SelectWorkloads({}, {});
  ASSERT_TRUE(rows.ok());
  std::set<std::string> names;
  for (const auto& w : *rows) names.insert(w.name);
  EXPECT_EQ(names,
            (std::set<std::string>{"syscall/getpid", "syscall/getppid", "syscall/invalid",
                                   "syscall/fstat", "syscall/lseek", "syscall/poll-30",
                                   "syscall/select-64", "syscall/uname", "syscall/stat-deep"}));
}

// Every syscall is measured on two call paths: raw (the inline instruction, compare's baseline)
// and libc (the C library's wrapper), so one file gives the wrapper's cost and two files still
// match row by row. Each row's setup issues its call once and checks the result before timing.
TEST(Workloads, EverySyscallHasRawBaselineAndLibcPathsCheckedBeforeTiming) {
  auto rows = SelectWorkloads({"syscall"}, {});
  ASSERT_TRUE(rows.ok());
  std::map<std::string, std::vector<std::string>> paths;
  const std::set<std::string> names = {"syscall/getpid", "syscall/getppid", "syscall/invalid",
                                       "syscall/fstat", "syscall/lseek"};
  for (const WorkloadDef& w : *rows) {
    if (names.count(w.name) == 0) continue;  // the deep rows (syscall_deep.cc): one path so far
    paths[w.name].push_back(w.variant);
    EXPECT_EQ(w.baseline, w.variant == "raw") << WorkloadId(w);
    auto state = w.setup();
    EXPECT_TRUE(state.ok()) << WorkloadId(w) << ": " << state.error().message;
    if (state.ok()) {
      uint64_t ticks[4] = {};
      w.percall(state->get(), 4, ticks);
      EXPECT_GT(ticks[0] + ticks[1] + ticks[2] + ticks[3], 0u) << WorkloadId(w);
    }
  }
  EXPECT_EQ(paths.size(), 5u);
  for (const auto& [name, variants] : paths) {
    EXPECT_EQ(variants, (std::vector<std::string>{"raw", "libc"})) << name;
  }
  auto both = SelectWorkloads({}, {"syscall/getppid"});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->size(), 2u);  // a name selects both paths
}

TEST(Workloads, GlobSelectsAndUnknownNamesAreUsageErrors) {
  auto one = SelectWorkloads({}, {"syscall/getpp*:raw"});
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].name, "syscall/getppid");
  auto none = SelectWorkloads({}, {"nosuch/*"});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().exit_code, kExitUsage);
  EXPECT_NE(none.error().message.find("kstacklab list"), std::string::npos);
  auto bad_suite = SelectWorkloads({"nosuch"}, {});
  ASSERT_FALSE(bad_suite.ok());
  EXPECT_NE(bad_suite.error().message.find("kstacklab list"), std::string::npos);
  // The library names the value; `run` adds --suite / --bench.
  EXPECT_EQ(none.error().message.find("--"), std::string::npos) << none.error().message;
  EXPECT_NE(none.error().message.find("'nosuch/*'"), std::string::npos);
  EXPECT_EQ(bad_suite.error().message.find("--"), std::string::npos) << bad_suite.error().message;
  EXPECT_NE(bad_suite.error().message.find("'nosuch'"), std::string::npos);
}

// The erase suite is built from erase::kStrategies by index: every strategy of the table is a
// row of erase/poison and of erase/syscall at every depth, with its own summary, and no other.
TEST(Workloads, EraseRowsFollowTheStrategyTable) {
  auto rows = SelectWorkloads({"erase"}, {});
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  std::map<std::string, std::multiset<std::string>> variants;  // name -> variants over depths
  for (const WorkloadDef& w : *rows) variants[w.name].insert(w.variant);
  for (const erase::Strategy& st : erase::kStrategies) {
    EXPECT_GE(variants["erase/poison"].count(st.name), 1u) << st.name;
    EXPECT_EQ(variants["erase/poison"].count(st.name), variants["erase/poison"].count("memset"))
        << st.name << ": one row per depth";
    EXPECT_GE(variants["erase/syscall"].count(st.name), 1u) << st.name;
    for (const WorkloadDef& w : *rows) {
      if (w.name == "erase/poison" && w.variant == st.name) {
        EXPECT_NE(w.summary.find(st.summary), std::string::npos) << w.summary;
      }
    }
  }
  const size_t depths = variants["erase/poison"].count("memset");
  EXPECT_EQ(variants["erase/poison"].size(), depths * (std::size(erase::kStrategies) + 1));
}

TEST(Workloads, EveryRowIsCompleteAndItsCheckPasses) {
  std::set<std::string> ids;
  for (const SuiteDef& suite : Suites()) {
    for (const WorkloadDef& w : suite.rows()) {
      EXPECT_TRUE(ids.insert(WorkloadId(w)).second) << "duplicate " << WorkloadId(w);
      EXPECT_EQ(w.name.rfind(suite.name + "/", 0), 0u) << w.name;
      EXPECT_FALSE(w.summary.empty()) << w.name;
      ASSERT_TRUE(w.percall && w.loop && w.setup) << w.name;
      // Rows this machine cannot run (no THP, no PKU) and slow rows (a 1 GiB fork, a build) are
      // run by tests/micromm_test.cc, at a small size.
      if (w.unavailable && !w.unavailable().empty()) continue;
      if (w.max_iterations > 0) continue;
      auto state = w.setup();
      ASSERT_TRUE(state.ok()) << WorkloadId(w) << ": " << state.error().message;
      std::vector<uint64_t> ticks(8, UINT64_MAX);
      w.percall(state->get(), ticks.size(), ticks.data());
      for (uint64_t t : ticks) EXPECT_NE(t, UINT64_MAX) << WorkloadId(w) << ": a call not timed";
      // The batch is timed: some ticks pass. A coarse counter (arm64's generic timer, and under
      // qemu-user) may see none in 8 fast calls, so the batch grows until it does.
      uint64_t calls = 8;
      uint64_t elapsed = w.loop(state->get(), calls);
      while (elapsed == 0 && calls < (uint64_t{1} << 20)) {
        calls *= 8;
        elapsed = w.loop(state->get(), calls);
      }
      EXPECT_GT(elapsed, 0u) << WorkloadId(w) << ": " << calls << " calls took no tick";
    }
  }
}

}  // namespace
}  // namespace kstacklab::workloads
