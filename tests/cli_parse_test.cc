// Argument parsing in-process: cli::Main with argv, checking exit codes and messages. (The real
// binary is tested end to end by tests/e2e/*.sh.)
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "command.h"
#include "run_support.h"

namespace kstacklab::cli {
namespace {

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome Invoke(std::vector<std::string> args) {
  args.insert(args.begin(), "kstacklab");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = Main(static_cast<int>(args.size()), argv.data());
  Outcome o{code, ::testing::internal::GetCapturedStdout(),
            ::testing::internal::GetCapturedStderr()};
  return o;
}

TEST(CliParse, EveryCommandInTheTableHasHelp) {
  for (const CommandDef& def : Commands()) {
    Outcome o = Invoke({def.name, "--help"});
    EXPECT_EQ(o.code, 0) << def.name;
    EXPECT_FALSE(o.out.empty()) << def.name;
  }
}

TEST(CliParse, NoCommandIsAUsageError) {
  Outcome o = Invoke({});
  EXPECT_EQ(o.code, kExitUsage);
  EXPECT_NE(o.err.find("kstacklab --help"), std::string::npos) << o.err;
}

TEST(CliParse, UnknownCommandAndFlagAreUsageErrors) {
  EXPECT_EQ(Invoke({"frobnicate"}).code, kExitUsage);
  Outcome o = Invoke({"run", "--no-such-flag"});
  EXPECT_EQ(o.code, kExitUsage);
  EXPECT_NE(o.err.find("--no-such-flag"), std::string::npos) << o.err;
}

TEST(CliParse, RunValidatesValuesBeforeMeasuring) {
  Outcome timing = Invoke({"run", "--timing", "sometimes"});
  EXPECT_EQ(timing.code, kExitUsage);
  EXPECT_NE(timing.err.find("sometimes"), std::string::npos) << timing.err;
  EXPECT_EQ(Invoke({"run", "--iterations", "0", "--no-store", "-o", "-"}).code, kExitUsage);
  EXPECT_EQ(Invoke({"run", "--repetitions", "0", "--no-store", "-o", "-"}).code, kExitUsage);
  EXPECT_EQ(Invoke({"run", "--iterations", "ten"}).code, kExitUsage);
  EXPECT_EQ(Invoke({"run", "--sessions", "0", "--no-store", "-o", "-"}).code, kExitUsage);
  Outcome suite = Invoke({"run", "--suite", "nosuch", "--no-store", "-o", "-"});
  EXPECT_EQ(suite.code, kExitUsage);
  EXPECT_NE(suite.err.find("kstacklab list"), std::string::npos) << suite.err;
  EXPECT_TRUE(suite.out.empty());  // nothing measured, nothing written
}

TEST(CliParse, ListIsGeneratedFromTheTable) {
  Outcome o = Invoke({"list"});
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("syscall/lseek"), std::string::npos);
}

}  // namespace
}  // namespace kstacklab::cli

#include "cli_util.h"
#include "kstacklab/common/text.h"

namespace kstacklab::cli {
namespace {

TEST(CliUtil, ParseUnsignedDecimalHexAndLimits) {
  EXPECT_EQ(*ParseUnsigned("0", "--x"), 0u);
  EXPECT_EQ(*ParseUnsigned("18446744073709551615", "--x"), UINT64_MAX);
  EXPECT_EQ(*ParseUnsigned("0xFFFFFFFFFFFFFFFF", "--x"), UINT64_MAX);
  EXPECT_EQ(*ParseUnsigned("0xdeadBEEF", "--x", 32), 0xdeadbeefu);
  EXPECT_FALSE(ParseUnsigned("18446744073709551616", "--x").ok());  // 2^64
  EXPECT_FALSE(ParseUnsigned("0x100000000", "--x", 32).ok());
  EXPECT_EQ(*ParseUnsigned("4294967295", "--x", 32), 0xffffffffu);
  EXPECT_FALSE(ParseUnsigned("4294967296", "--x", 32).ok());
  EXPECT_FALSE(ParseUnsigned("2", "--x", 1).ok());
  EXPECT_FALSE(ParseUnsigned("", "--x").ok());
  EXPECT_FALSE(ParseUnsigned("-1", "--x").ok());
  EXPECT_FALSE(ParseUnsigned("12a", "--x").ok());
  auto e = ParseUnsigned("0xzz", "--seed");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().exit_code, kExitUsage);
  EXPECT_NE(e.error().message.find("--seed"), std::string::npos);
}

TEST(CliUtil, ParseHexBytes) {
  auto b = ParseHexBytes("00ff10Ab", "--key", 4);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<uint8_t>{0x00, 0xff, 0x10, 0xab}));
  EXPECT_EQ(HexBytes(b->data(), b->size()), "00ff10ab");
  EXPECT_FALSE(ParseHexBytes("00ff", "--key", 4).ok());
  EXPECT_FALSE(ParseHexBytes("0g", "--key", 1).ok());
  EXPECT_FALSE(ParseHexBytes("abc", "--key", 0).ok());
}

// The rng source table: a flag of another source is named as an error, whichever source.
TEST(CliParse, RngRejectsAnotherSourcesFlag) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"rng", "prandom", "--seed", "1", "--base-key", "00"},
        std::vector<std::string>{"rng", "crng-u16", "--base-key", "00", "--nonce", "00"},
        std::vector<std::string>{"rng", "siphash", "--key", "00", "--u64", "1", "--count", "2"}}) {
    Outcome o = Invoke(args);
    EXPECT_EQ(o.code, 2) << args[1];
    EXPECT_NE(o.err.find("does not apply to `rng " + args[1] + "`"), std::string::npos) << o.err;
  }
}

TEST(CliUtil, ParseCountIsStrict) {
  EXPECT_EQ(*ParseCount("200000", "--iterations", 1, UINT64_MAX), 200000u);
  EXPECT_EQ(*ParseCount("18446744073709551615", "--x", 0, UINT64_MAX), UINT64_MAX);
  EXPECT_EQ(*ParseCount("007", "--x", 0, 10), 7u);
  for (const char* bad : {"-5", "+5", " 2000", "2000 ", "0x10", "18446744073709551616",
                          "99999999999999999999", "", "1e3", "1.0"}) {
    auto v = ParseCount(bad, "--iterations", 0, UINT64_MAX);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.error().exit_code, kExitUsage);
    EXPECT_NE(v.error().message.find("--iterations '"), std::string::npos) << v.error().message;
  }
  EXPECT_FALSE(ParseCount("0", "--n", 1, 5).ok());
  EXPECT_FALSE(ParseCount("6", "--n", 1, 5).ok());
}

TEST(CliUtil, WithFlagPrefixesTheFlagAndKeepsTheExitCode) {
  Error usage = WithFlag("--alpha", UsageError("alpha 2 is out of range"));
  EXPECT_EQ(usage.message, "--alpha: alpha 2 is out of range");
  EXPECT_EQ(usage.exit_code, kExitUsage);
  Error runtime = WithFlag("--cpu 3", RuntimeError("sched_setaffinity failed"));
  EXPECT_EQ(runtime.message, "--cpu 3: sched_setaffinity failed");
  EXPECT_EQ(runtime.exit_code, kExitRuntime);
}

TEST(CliUtil, SplitDropsOrKeepsEmptyItems) {
  EXPECT_EQ(Split("mean,p99,,p99.9,", ','), (std::vector<std::string>{"mean", "p99", "p99.9"}));
  EXPECT_TRUE(Split("", ',').empty());
  EXPECT_EQ(Split("a,,b,", ',', true), (std::vector<std::string>{"a", "", "b", ""}));
  EXPECT_EQ(Split("", ',', true), (std::vector<std::string>{""}));
  EXPECT_EQ(Trim(" \t a b \n"), "a b");
  EXPECT_EQ(Trim("   "), "");
}

TEST(CliParse, RunRefusesBadInputBeforeMeasuring) {
  const std::vector<std::vector<std::string>> bad = {{"--iterations", "-5"},
                                                     {"--iterations", "18446744073709551616"},
                                                     {"--warmup", "-1"},
                                                     {"--cpu", "-2"},
                                                     {"--cpu", "0x10"},
                                                     {"--iterations", " 2000"},
                                                     {"--repetitions", "100001"},
                                                     {"--label", "b\xe9se"},
                                                     {"--label", "a\nb"},
                                                     {"-o", ""},
                                                     {"-o", "/tmp/"},
                                                     {"--store", ""},
                                                     {"--store", "x.db", "--no-store"}};
  for (const auto& extra : bad) {
    std::vector<std::string> args = {"run", "--bench", "syscall/getpid", "--no-store"};
    if (extra[0] == "--store") args.pop_back();
    args.insert(args.end(), extra.begin(), extra.end());
    if (extra[0] != "-o") args.insert(args.end(), {"-o", "-"});
    Outcome o = Invoke(args);
    EXPECT_EQ(o.code, kExitUsage) << extra[0] << " " << extra[1] << ": " << o.err;
    EXPECT_TRUE(o.out.empty()) << extra[0];  // nothing measured, nothing written
  }
}

TEST(CliParse, RunRefusesBadParamsBeforeMeasuring) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--suite", "micromm", "--param", "size=0"}, "multiple of 2 MiB"},
      {{"--suite", "micromm", "--param", "size=-64M"}, "multiple of 2 MiB"},
      {{"--suite", "micromm", "--param", "size=1.5G"}, "multiple of 2 MiB"},
      {{"--suite", "micromm", "--param", "size=18446744073709551616"}, "multiple of 2 MiB"},
      {{"--suite", "micromm", "--param", "size=3M"}, "e.g. 256M, 1G or 268435456"},
      {{"--suite", "micromm", "--param", "depth=64"}, "unknown key 'depth' (keys: size)"},
      {{"--suite", "micromm", "--param", "size"}, "expected KEY=VALUE"},
      {{"--bench", "syscall/getpid", "--param", "size=64M"},
       "select the suite that does: micromm"}};
  for (const auto& [extra, says] : bad) {
    std::vector<std::string> args = {"run", "--no-store", "-o", "-"};
    args.insert(args.end(), extra.begin(), extra.end());
    Outcome o = Invoke(args);
    EXPECT_EQ(o.code, kExitUsage) << extra.back() << ": " << o.err;
    EXPECT_NE(o.err.find(says), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("--param " + extra.back()), std::string::npos) << o.err;
    EXPECT_TRUE(o.out.empty()) << extra.back();  // nothing measured, nothing written
  }
}

// A campaign checks its run arguments in this process, as `run` would parse and validate them:
// the same one line `run` prints, after saying these are the run arguments.
TEST(CliParse, CampaignRunArgumentsAreCheckedAsRunChecksThem) {
  EXPECT_TRUE(CheckRunArguments({}).ok());
  EXPECT_TRUE(CheckRunArguments({"--suite", "model", "--ab", "model:policy=off,siphash"}).ok());
  struct Case {
    std::vector<std::string> args;
    std::string run_says;  // what `kstacklab run ARGS` prints after "kstacklab: error: "
  };
  const std::vector<Case> cases = {
      {{"--repetitions", "abc"}, "--repetitions 'abc' is not a plain decimal number"},
      {{"--frobnicate"},
       "'--frobnicate': not a command or argument here (see `kstacklab run "
       "--help`)"},
      {{"--repetitions", "60000", "--sessions", "2"},
       "--repetitions 60000 x --sessions 2 is more than the 100000 repetitions"},
      {{"--ab", "model:policy=off,siphash", "--ab", "model:strategy=generic,nt"},
       "--ab: one A/B knob per run, got 2"},
      {{"--bench", "nosuch/*"}, "--bench: pattern 'nosuch/*' matches no benchmark"},
  };
  for (const Case& c : cases) {
    Status st = CheckRunArguments(c.args);
    ASSERT_FALSE(st.ok()) << c.run_says;
    EXPECT_EQ(st.error().exit_code, kExitUsage);
    EXPECT_EQ(st.error().message.rfind(
                  "the run arguments do not parse as `kstacklab run` arguments: " + c.run_says, 0),
              0u)
        << st.error().message;
    std::vector<std::string> run = {"run", "--internal-validate", "--no-store", "-o", "/dev/null"};
    run.insert(run.end(), c.args.begin(), c.args.end());
    Outcome o = Invoke(run);
    EXPECT_EQ(o.code, kExitUsage);
    EXPECT_EQ(o.err.rfind("kstacklab: error: " + c.run_says, 0), 0u) << o.err;
  }
  // A help request would boot a guest that measures nothing.
  Status help = CheckRunArguments({"--help"});
  ASSERT_FALSE(help.ok());
  EXPECT_NE(help.error().message.find("ask for help"), std::string::npos);
}

TEST(CliParse, UnknownWordsAreNamed) {
  Outcome top = Invoke({"bogus"});
  EXPECT_EQ(top.code, kExitUsage);
  EXPECT_NE(top.err.find("'bogus'"), std::string::npos) << top.err;
  Outcome sub = Invoke({"results", "frob"});
  EXPECT_EQ(sub.code, kExitUsage);
  EXPECT_NE(sub.err.find("'frob'"), std::string::npos) << sub.err;
  EXPECT_NE(sub.err.find("kstacklab results --help"), std::string::npos) << sub.err;
}

TEST(CliParse, StoreIdErrorsAreTheSameEverywhere) {
  Outcome show = Invoke({"show", "0", "--store", "/nonexistent/x.db"});
  Outcome results = Invoke({"results", "show", "0", "--store", "/nonexistent/x.db"});
  EXPECT_EQ(show.code, kExitUsage);
  EXPECT_EQ(results.code, kExitUsage);
  EXPECT_NE(show.err.find("'0' is not a store id"), std::string::npos) << show.err;
  EXPECT_EQ(show.err, results.err);
}

}  // namespace
}  // namespace kstacklab::cli
