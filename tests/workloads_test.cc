#include <gtest/gtest.h>

#include <set>

#include "kstacklab/workload.h"

namespace kstacklab {
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

TEST(Workloads, GlobSelectsAndUnknownNamesAreUsageErrors) {
  auto one = SelectWorkloads({}, {"syscall/getpp*"});
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
}

TEST(Workloads, EveryRowIsCompleteAndItsCheckPasses) {
  std::set<std::string> ids;
  for (const SuiteDef& suite : Suites()) {
    for (const WorkloadDef& w : suite.rows()) {
      EXPECT_TRUE(ids.insert(WorkloadId(w)).second) << "duplicate " << WorkloadId(w);
      EXPECT_EQ(w.name.rfind(suite.name + "/", 0), 0u) << w.name;
      EXPECT_FALSE(w.summary.empty()) << w.name;
      ASSERT_TRUE(w.percall && w.loop && w.setup) << w.name;
      auto state = w.setup();
      ASSERT_TRUE(state.ok()) << WorkloadId(w) << ": " << state.error().message;
      std::vector<uint64_t> ticks(8);
      w.percall(state->get(), ticks.size(), ticks.data());
      EXPECT_GT(w.loop(state->get(), 8), 0u);
    }
  }
}

}  // namespace
}  // namespace kstacklab
