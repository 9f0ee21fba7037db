// Runtime knobs: the --ab spec, the sysctl knob on a fake root, the recovery file, restore on
// every path, and the interleaved A/B order seen by the rows.
#include "kstacklab/knobs.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kstacklab::knobs {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fake /proc/sys with kernel/stack_erasing = 1 and a private recovery file.
class FakeSysctl : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kstacklab-knobs-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "sys/kernel");
    std::ofstream(dir_ / "sys/kernel/stack_erasing") << "1\n";
    ::setenv(kSysctlRootEnvVar, (dir_ / "sys").c_str(), 1);
    ::setenv(kRecoveryFileEnvVar, (dir_ / "state/recovery").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv(kSysctlRootEnvVar);
    ::unsetenv(kRecoveryFileEnvVar);
    fs::remove_all(dir_);
  }
  std::string Value() const { return ReadAll(dir_ / "sys/kernel/stack_erasing"); }
  fs::path Recovery() const { return dir_ / "state/recovery"; }
  fs::path dir_;
};

TEST(ParseAbSpec, Accepts) {
  auto s = ParseAbSpec("sysctl:kernel.stack_erasing=0,1");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, "sysctl");
  EXPECT_EQ(s->name, "kernel.stack_erasing");
  EXPECT_EQ(s->values, (std::vector<std::string>{"0", "1"}));
  auto three = ParseAbSpec("sysctl:vm.swappiness= 10, 60 ,100");
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->values, (std::vector<std::string>{"10", "60", "100"}));
}

TEST(ParseAbSpec, Rejects) {
  for (const char* bad : {"kernel.stack_erasing=0,1", "sysctl:kernel.stack_erasing", "sysctl:=0,1",
                          "sysctl:kernel.stack_erasing=1", "sysctl:kernel.stack_erasing=0,,1",
                          "sysctl:kernel.stack_erasing=1,1", "sysctl:../etc/x=0,1",
                          "policy:kstack=off,percpu-prng"}) {
    auto s = ParseAbSpec(bad);
    EXPECT_FALSE(s.ok()) << bad;
    if (!s.ok()) {
      EXPECT_EQ(s.error().exit_code, kExitUsage) << bad;
      EXPECT_NE(s.error().message.find(bad), std::string::npos) << s.error().message;
    }
  }
}

TEST(AbOrder, AlternatesDirection) {
  EXPECT_EQ(AbOrder(2, 0), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(AbOrder(2, 1), (std::vector<size_t>{1, 0}));
  EXPECT_EQ(AbOrder(3, 2), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(AbOrder(3, 3), (std::vector<size_t>{2, 1, 0}));
}

TEST_F(FakeSysctl, OpenChecksWithoutChanging) {
  auto k = OpenKnob(*ParseAbSpec("sysctl:kernel.stack_erasing=0,1"));
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ((*k)->name(), "kernel.stack_erasing");
  EXPECT_EQ((*k)->path(), (dir_ / "sys/kernel/stack_erasing").string());
  EXPECT_EQ(*(*k)->Read(), "1");
  EXPECT_EQ(Value(), "1\n");
  auto range = OpenKnob(*ParseAbSpec("sysctl:kernel.stack_erasing=0,2"));
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.error().exit_code, kExitUsage);
  fs::remove(dir_ / "sys/kernel/stack_erasing");
  auto absent = OpenKnob(*ParseAbSpec("sysctl:kernel.stack_erasing=0,1"));
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.error().exit_code, kExitUsage);
  EXPECT_NE(absent.error().message.find("CONFIG_KSTACK_ERASE_RUNTIME_DISABLE"), std::string::npos);
}

TEST_F(FakeSysctl, ScopedKnobSavesFirstAndRestoresOnDestruction) {
  auto k = OpenKnob(*ParseAbSpec("sysctl:kernel.stack_erasing=0,1"));
  ASSERT_TRUE(k.ok());
  {
    ScopedKnob held(**k);
    ASSERT_TRUE(held.Begin().ok());
    EXPECT_EQ(held.original(), "1");
    const std::string saved = ReadAll(Recovery());
    EXPECT_NE(saved.find("kernel.stack_erasing"), std::string::npos);
    EXPECT_EQ(saved.substr(saved.size() - 3), "\t1\n");
    ASSERT_TRUE(held.Set("0").ok());
    EXPECT_EQ(Value(), "0\n");
  }
  EXPECT_EQ(Value(), "1\n");
  EXPECT_FALSE(fs::exists(Recovery()));
}

// SIGHUP while held (run_cmd has no SIGHUP handler of its own here, and no SIGTERM one): the
// handler writes the original back before the default action. Run in a child process.
TEST_F(FakeSysctl, SignalHandlerRestoresBeforeTheProcessDies) {
  auto k = OpenKnob(*ParseAbSpec("sysctl:kernel.stack_erasing=0,1"));
  ASSERT_TRUE(k.ok());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ScopedKnob held(**k);
    if (!held.Begin().ok() || !held.Set("0").ok()) ::_exit(3);
    ::raise(SIGHUP);
    ::_exit(4);  // not reached: SIGHUP's default action ends the process
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGHUP);
  EXPECT_EQ(Value(), "1\n");
  // The recovery file is still there (the process died): recovering is harmless.
  auto r = RecoverPending();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 1u);
  EXPECT_FALSE(fs::exists(Recovery()));
}

TEST_F(FakeSysctl, RecoverPendingRestoresAKilledRun) {
  auto none = RecoverPending();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto k = OpenKnob(*ParseAbSpec("sysctl:kernel.stack_erasing=0,1"));
  ASSERT_TRUE(k.ok());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ScopedKnob held(**k);
    if (!held.Begin().ok() || !held.Set("0").ok()) ::_exit(3);
    ::raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(Value(), "0\n");  // SIGKILL: nothing ran
  auto r = RecoverPending();
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  EXPECT_NE((*r)[0].find("kernel.stack_erasing restored to 1"), std::string::npos) << (*r)[0];
  EXPECT_EQ(Value(), "1\n");
  EXPECT_FALSE(fs::exists(Recovery()));
}

// A row whose setup logs the knob's value: the A/B order as the workloads see it.
struct FakeClock {
  static uint64_t Now() {
    static uint64_t t = 0;
    return t += 10;
  }
};
void Noop(void*) {}
std::vector<std::string>* g_seen = nullptr;
std::string g_path;

TEST_F(FakeSysctl, RunAbInterleavesAndWritesOneVariantPerValue) {
  std::vector<std::string> seen;
  g_seen = &seen;
  g_path = (dir_ / "sys/kernel/stack_erasing").string();
  WorkloadDef w;
  w.name = "test/noop";
  w.setup = []() -> Expected<std::shared_ptr<void>> {
    g_seen->push_back(ReadAll(g_path));
    return std::shared_ptr<void>();
  };
  w.percall = &TimePerCall<FakeClock, Noop>;
  w.loop = &TimeLoop<FakeClock, Noop>;
  WorkloadDef v = w;
  v.variant = "x";
  RunOptions opt;
  opt.repetitions = 4;
  opt.sampler.iterations = 10;
  opt.sampler.warmup = 0;
  opt.sampler.chunk = 10;
  const AbSpec spec = *ParseAbSpec("sysctl:kernel.stack_erasing=0,1");
  auto k = OpenKnob(spec);
  ASSERT_TRUE(k.ok());
  auto r = RunAb({w, v}, opt, ClockParams{}, nullptr, nullptr, spec, **k);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // Setup runs for both rows under each value: 0 1 | 1 0 | 0 1 | 1 0.
  const std::vector<std::string> want = {"0\n", "0\n", "1\n", "1\n", "1\n", "1\n", "0\n", "0\n",
                                         "0\n", "0\n", "1\n", "1\n", "1\n", "1\n", "0\n", "0\n"};
  EXPECT_EQ(seen, want);
  ASSERT_EQ(r->benchmarks.size(), 4u);
  EXPECT_EQ(r->benchmarks[0].variant, "kernel.stack_erasing=0");
  EXPECT_EQ(r->benchmarks[1].variant, "x,kernel.stack_erasing=0");
  EXPECT_EQ(r->benchmarks[2].variant, "kernel.stack_erasing=1");
  EXPECT_EQ(r->benchmarks[3].variant, "x,kernel.stack_erasing=1");
  for (const BenchmarkResult& b : r->benchmarks) {
    EXPECT_EQ(b.repetitions.size(), 4u);
    EXPECT_EQ(b.histogram.count(), 40u);
  }
  EXPECT_FALSE(r->partial);
  EXPECT_EQ(Value(), "1\n");
  EXPECT_FALSE(fs::exists(Recovery()));
}

TEST_F(FakeSysctl, RunAbRestoresWhenARowFails) {
  WorkloadDef w;
  w.name = "test/fails";
  w.setup = []() -> Expected<std::shared_ptr<void>> { return RuntimeError("setup failed"); };
  w.percall = &TimePerCall<FakeClock, Noop>;
  w.loop = &TimeLoop<FakeClock, Noop>;
  RunOptions opt;
  opt.repetitions = 2;
  const AbSpec spec = *ParseAbSpec("sysctl:kernel.stack_erasing=0,1");
  auto k = OpenKnob(spec);
  ASSERT_TRUE(k.ok());
  auto r = RunAb({w}, opt, ClockParams{}, nullptr, nullptr, spec, **k);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(Value(), "1\n");
  EXPECT_FALSE(fs::exists(Recovery()));
}

TEST_F(FakeSysctl, RunAbStopsEarlyAndRestores) {
  WorkloadDef w;
  w.name = "test/noop";
  w.setup = []() -> Expected<std::shared_ptr<void>> { return std::shared_ptr<void>(); };
  w.percall = &TimePerCall<FakeClock, Noop>;
  w.loop = &TimeLoop<FakeClock, Noop>;
  RunOptions opt;
  opt.repetitions = 3;
  opt.sampler.iterations = 10;
  opt.sampler.chunk = 10;
  std::atomic<bool> stop{true};
  const AbSpec spec = *ParseAbSpec("sysctl:kernel.stack_erasing=0,1");
  auto k = OpenKnob(spec);
  ASSERT_TRUE(k.ok());
  auto r = RunAb({w}, opt, ClockParams{}, &stop, nullptr, spec, **k);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->partial);
  EXPECT_TRUE(r->benchmarks.empty());
  EXPECT_EQ(Value(), "1\n");
}

}  // namespace
}  // namespace kstacklab::knobs
