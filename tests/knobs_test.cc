// Runtime knobs: the A/B spec, the sysctl knob on a fake root, the recovery file and the model
// knobs' rows. (The A/B run and its restore on signals: run_test.cc.)
#include "kstacklab/knobs/knobs.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fakes.h"

namespace kstacklab::knobs {
namespace {

namespace fs = std::filesystem;
using fakes::FakeSysctl;
using fakes::ModelRow;
using fakes::ReadText;

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
  for (const char* bad :
       {"kernel.stack_erasing=0,1", "sysctl:kernel.stack_erasing", "sysctl:=0,1",
        "sysctl:kernel.stack_erasing=1", "sysctl:kernel.stack_erasing=0,,1",
        "sysctl:kernel.stack_erasing=1,1", "sysctl:../etc/x=0,1", "policy:kstack=off,percpu-prng",
        "model:colour=a,b", "model:policy=off", "model:strategy=generic,generic"}) {
    auto s = ParseAbSpec(bad);
    EXPECT_FALSE(s.ok()) << bad;
    if (!s.ok()) {
      EXPECT_EQ(s.error().exit_code, kExitUsage) << bad;
      EXPECT_NE(s.error().message.find(bad), std::string::npos) << s.error().message;
    }
  }
}

TEST(ParseAbSpec, AcceptsModelKnobs) {
  auto p = ParseAbSpec("model:policy=off,percpu-prng");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->kind, "model");
  EXPECT_EQ(p->name, "policy");
  EXPECT_EQ(p->values, (std::vector<std::string>{"off", "percpu-prng"}));
  auto s = ParseAbSpec("model:strategy=generic,rep-stos,unrolled");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->name, "strategy");
  EXPECT_EQ(s->values.size(), 3u);
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
    const std::string saved = ReadText(Recovery());
    EXPECT_NE(saved.find("kernel.stack_erasing"), std::string::npos);
    EXPECT_EQ(saved.substr(saved.size() - 3), "\t1\n");
    ASSERT_TRUE(held.Set("0").ok());
    EXPECT_EQ(Value(), "0\n");
  }
  EXPECT_EQ(Value(), "1\n");
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

// The recovery file tells `run` (often root) what to write where: a file another user could
// have written, or a line that points anywhere but the named sysctl, is refused before any write.
TEST_F(FakeSysctl, RecoverPendingRefusesHostileFiles) {
  const fs::path victim = dir_ / "victim";
  std::ofstream(victim) << "precious\n";
  const std::string ok_line =
      "sysctl\tkernel.stack_erasing\t" + (dir_ / "sys/kernel/stack_erasing").string() + "\t0\n";
  std::ofstream(dir_ / "sys/kernel/stack_erasing") << "1\n";
  struct Case {
    const char* what;
    std::string content;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"a path outside the sysctl root",
       "sysctl\tkernel.stack_erasing\t" + victim.string() + "\tpwned\n", "is not the file of"},
      {"a path under the root that is not the named sysctl",
       "sysctl\tkernel.stack_erasing\t" + (dir_ / "sys/kernel/other").string() + "\t0\n",
       "is not the file of"},
      {"a name climbing out of the root",
       "sysctl\t..victim\t" + (dir_ / "sys/..victim").string() + "\t0\n", "not a sysctl name"},
      {"another kind", "exec\tx\t/bin/sh\t0\n", "not of the form"},
      {"a value longer than a page",
       "sysctl\tkernel.stack_erasing\t" + (dir_ / "sys/kernel/stack_erasing").string() + "\t" +
           std::string(5000, '1') + "\n",
       "longer than 4096"},
      // A directory under the root passes the name and path checks; it is no sysctl file.
      {"a good line, then a directory of the root",
       ok_line + "sysctl\tkernel\t" + (dir_ / "sys/kernel").string() + "\t3\n",
       "is not a sysctl file"},
      {"a value with a carriage return",
       "sysctl\tkernel.stack_erasing\t" + (dir_ / "sys/kernel/stack_erasing").string() + "\t0\r\n",
       "control character"},
      {"a value with an escape sequence",
       "sysctl\tkernel.stack_erasing\t" + (dir_ / "sys/kernel/stack_erasing").string() +
           "\t\x1b[2J0\n",
       "control character"},
      // A good line first: still nothing is written when a later line is refused.
      {"a good line, then a bad one",
       ok_line + "sysctl\tkernel.stack_erasing\t" + victim.string() + "\tpwned\n", "line 2"},
  };
  const fs::perms private_file = fs::perms::owner_read | fs::perms::owner_write;
  auto write_recovery = [&](const std::string& content, fs::perms perms) {
    fs::create_directories(Recovery().parent_path());
    { std::ofstream(Recovery()) << content; }
    fs::permissions(Recovery(), perms);
  };
  // RecoverPending refuses the file (exit 2, `needle` in the message) and writes nothing.
  auto expect_refused = [&](const std::string& what, const std::string& needle) {
    auto r = RecoverPending();
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.error().exit_code, kExitUsage) << what;
    EXPECT_NE(r.error().message.find(needle), std::string::npos)
        << what << ": " << r.error().message;
    EXPECT_NE(r.error().message.find("nothing was written"), std::string::npos) << what;
    EXPECT_EQ(ReadText(victim), "precious\n") << what;
    EXPECT_EQ(Value(), "1\n") << what;
  };
  for (const Case& c : cases) {
    write_recovery(c.content, private_file);
    expect_refused(c.what, c.message);
    EXPECT_TRUE(fs::exists(Recovery())) << c.what << ": the refused file must be kept";
  }

  // The file itself: writable by others, a symlink, a FIFO -> refused, nothing written.
  write_recovery(ok_line, private_file | fs::perms::others_write);
  expect_refused("a file others may write", "others may write it");
  fs::remove(Recovery());
  const fs::path real = dir_ / "elsewhere";
  { std::ofstream(real) << ok_line; }
  fs::create_symlink(real, Recovery());
  expect_refused("a symbolic link", "symbolic link");
  fs::remove(Recovery());
  ASSERT_EQ(::mkfifo(Recovery().c_str(), 0600), 0);
  expect_refused("a FIFO (must not block waiting for a writer)", "not a regular file");
  fs::remove(Recovery());

  // A file of another user (root can make one): refused.
  if (::geteuid() == 0) {
    write_recovery(ok_line, private_file);
    ASSERT_EQ(::chown(Recovery().c_str(), 65534, 65534), 0);
    expect_refused("another user's file", "belongs to uid 65534");
    fs::remove(Recovery());
  }

  // And the good line alone, in a private file, is applied.
  write_recovery(ok_line, private_file);
  auto good = RecoverPending();
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(Value(), "0\n");
  EXPECT_FALSE(fs::exists(Recovery()));
}

TEST(ParseAbSpec, RefusesNamesThatWouldBreakTheRecoveryFile) {
  EXPECT_FALSE(ParseAbSpec("sysctl:kernel.a\tb=0,1").ok());
  EXPECT_FALSE(ParseAbSpec("sysctl:.hidden=0,1").ok());
  EXPECT_FALSE(ParseAbSpec("sysctl:kernel/x=0,1").ok());
}

// --- model knobs -----------------------------------------------------------------------------

TEST(ModelKnob, OpenChecksTheValuesAgainstTheTable) {
  auto k = OpenKnob(*ParseAbSpec("model:policy=off,percpu-prng"));
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_FALSE((*k)->changes_machine());
  EXPECT_EQ((*k)->name(), "policy");
  auto bad = OpenKnob(*ParseAbSpec("model:policy=off,percpu-nope"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().exit_code, kExitUsage);
  EXPECT_NE(bad.error().message.find("'percpu-nope'"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("percpu-prng-irqsoff, buffered-prng"), std::string::npos)
      << bad.error().message;
  auto s = OpenKnob(*ParseAbSpec("model:strategy=generic,unrolled"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  // A policy is not a strategy.
  auto wrong = OpenKnob(*ParseAbSpec("model:strategy=generic,percpu-prng"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("valid: generic, unrolled"), std::string::npos)
      << wrong.error().message;
}

TEST(ModelKnob, SelectsTheRowsCarryingEachValue) {
  const Json empty = Json{{"handler", "empty"}};
  const Json getpid = Json{{"handler", "getpid"}};
  const std::vector<workloads::WorkloadDef> rows = {
      ModelRow("model/kstack", "off", empty, nullptr),
      ModelRow("model/kstack", "percpu-prng", empty, nullptr),
      ModelRow("model/kstack", "siphash", empty, nullptr),
      ModelRow("model/kstack", "percpu-prng", getpid, nullptr),
      ModelRow("model/rng", "prandom", Json::object(), nullptr),
  };
  // The table's baseline (off) is the baseline wherever it stands among the values.
  const AbSpec spec = *ParseAbSpec("model:policy=percpu-prng,off");
  auto k = OpenKnob(spec);
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE((*k)->Takes(rows[0]));
  EXPECT_FALSE((*k)->Takes(rows[4]));
  auto prng = (*k)->RowsFor(rows, spec.values, 0);
  ASSERT_TRUE(prng.ok());
  ASSERT_EQ(prng->size(), 2u);
  for (const workloads::WorkloadDef& w : *prng) {
    EXPECT_EQ(w.variant, "percpu-prng");  // written under its own variant, no suffix
    EXPECT_FALSE(w.baseline);
  }
  EXPECT_EQ((*prng)[1].params, getpid);
  auto off = (*k)->RowsFor(rows, spec.values, 1);
  ASSERT_TRUE(off.ok());
  ASSERT_EQ(off->size(), 1u);
  EXPECT_TRUE((*off)[0].baseline);
  // Without the table's baseline among the values, the first value is the baseline.
  const AbSpec two = *ParseAbSpec("model:policy=siphash,percpu-prng");
  auto k2 = OpenKnob(two);
  ASSERT_TRUE(k2.ok());
  EXPECT_TRUE((*(*k2)->RowsFor(rows, two.values, 0))[0].baseline);
  EXPECT_FALSE((*(*k2)->RowsFor(rows, two.values, 1))[0].baseline);
  // A value no selected row carries: exit 2 naming the suite and a glob.
  const AbSpec absent = *ParseAbSpec("model:policy=off,per-task");
  auto r = (*OpenKnob(absent))->RowsFor(rows, absent.values, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, kExitUsage);
  EXPECT_NE(r.error().message.find("select the model suite"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("'model/kstack:per-task'"), std::string::npos)
      << r.error().message;
  // The strategy knob takes both erase benchmarks and names the erase suite.
  const AbSpec st = *ParseAbSpec("model:strategy=generic,unrolled");
  auto ks = OpenKnob(st);
  ASSERT_TRUE(ks.ok());
  const std::vector<workloads::WorkloadDef> erase = {
      ModelRow("erase/poison", "generic", Json{{"depth", 256}}, nullptr),
      ModelRow("erase/syscall", "generic", Json{{"depth", 256}}, nullptr)};
  EXPECT_EQ((*ks)->RowsFor(erase, st.values, 0)->size(), 2u);
  auto none = (*ks)->RowsFor(erase, st.values, 1);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("select the erase suite"), std::string::npos);
}

}  // namespace
}  // namespace kstacklab::knobs
