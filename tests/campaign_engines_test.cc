// campaign/ engines ssh and lava, without a machine or a lab: the one shell-quoting function
// against a real /bin/sh, the job script run here with a stand-in kstacklab, the plan keys of both
// engines and their refusals, the LAVA log reader on LAVA-format logs (tests/data/lava), the job
// id of `lavacli jobs submit`, and the runner's handling of a machine that stops answering.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/lava.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/campaign/process.h"
#include "kstacklab/campaign/remote.h"
#include "kstacklab/campaign/runner.h"
#include "kstacklab/campaign/state.h"
#include "kstacklab/fileio.h"
#include "test_support.h"

namespace kstacklab::campaign {
namespace {

namespace fs = std::filesystem;

class TempDir : public testing_support::TempDir {
 public:
  TempDir() : testing_support::TempDir("kstacklab-engines-test") {}
};

void Write(const std::string& path, const std::string& data, mode_t mode = 0644) {
  std::ofstream(path, std::ios::binary) << data;
  chmod(path.c_str(), mode);
}

// Words that would run, split, expand or end a command if they reached a shell unquoted.
const std::vector<std::string>& HostileWords(const std::string& canary) {
  static std::vector<std::string> words;
  words = {"$(touch " + canary + ")",
           "`touch " + canary + "`",
           "; touch " + canary,
           "a b\tc",
           "it's",
           "'",
           "''",
           "\"",
           "\\",
           "$HOME",
           "*",
           "~",
           "-n",
           "",
           "x\ny",
           "&& touch " + canary + " ||",
           "| touch " + canary,
           "> " + canary,
           "'$(touch " + canary + ")'"};
  return words;
}

TEST(CampaignRemote, ShellQuoteRoundTripsEveryHostileWordThroughARealShell) {
  TempDir t;
  const std::string canary = t.path() + "/pwned";
  for (const std::string& w : HostileWords(canary)) {
    // What a remote shell receives from ssh: one command line.
    auto r = RunProcess({"/bin/sh", "-c", "printf '%s' " + ShellQuote(w)}, 10);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_code, 0) << w;
    EXPECT_EQ(r->out, w) << "quoted as " << ShellQuote(w);
  }
  // A whole argument vector keeps its word boundaries.
  const std::vector<std::string>& words = HostileWords(canary);
  std::vector<std::string> argv = {"printf", "%s\\n"};
  argv.insert(argv.end(), words.begin(), words.end());
  auto r = RunProcess({"/bin/sh", "-c", ShellCommand(argv)}, 10);
  ASSERT_TRUE(r.ok());
  std::string want;
  for (const std::string& w : words) want += w + "\n";
  EXPECT_EQ(r->out, want);
  EXPECT_FALSE(fs::exists(canary)) << "a quoted word ran as a command";
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

// The job script, run here with a stand-in kstacklab that records its arguments: the channel
// carries every file, and a profile's hostile values arrive as the same words.
TEST(CampaignRemote, TheJobScriptPassesValuesAsWordsAndPrintsTheChannel) {
  TempDir t;
  const std::string canary = t.path() + "/pwned";
  const std::string fake = t.path() + "/fake kstacklab";  // a path with a space
  Write(fake, R"(#!/bin/sh
case "$1" in
  env) echo '{}' ;;
  run) out=""; prev=""
       for a in "$@"; do [ "$prev" = -o ] && out=$a; prev=$a; printf '[%s]\n' "$a"; done
       echo '{"label": "fake"}' > "$out" ;;
esac
)",
        0755);
  Profile p;
  p.name = "on";
  const std::vector<std::string> run_args = {"--bench", "$(touch " + canary + ")", "a;b", "it's"};
  std::vector<std::string> argv = {"/bin/sh", "-c", JobScript()};
  for (const std::string& a : JobScriptArgs(fake, t.path() + "/out dir", p, run_args, false, 0)) {
    argv.push_back(a);
  }
  auto r = RunProcess(argv, 30);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->err;
  const ChannelData data = ParseChannel(r->out, ChannelFileNames());
  EXPECT_TRUE(data.done);
  ASSERT_EQ(data.files.count("result.json"), 1u) << r->out;
  EXPECT_EQ(data.files.at("result.json"), "{\"label\": \"fake\"}\n");
  EXPECT_EQ(data.files.at("run.rc"), "0\n");
  EXPECT_FALSE(data.files.at("uname").empty());
  EXPECT_NE(data.files.at("run.log").find("[--label]\n[on]\n"), std::string::npos);
  EXPECT_NE(data.files.at("run.log").find("[$(touch " + canary + ")]\n[a;b]\n[it's]\n"),
            std::string::npos)
      << data.files.at("run.log");
  EXPECT_FALSE(fs::exists(canary));
}

TEST(CampaignRemote, HeadlineFiguresNameEveryBenchmarkForLava) {
  RunResult r;
  BenchmarkResult b;
  b.name = "syscall/getpid";
  b.variant = "raw";
  for (double m : {100.0, 110.0}) {
    Repetition rep;
    rep.metrics["mean"] = m;
    b.repetitions.push_back(rep);
  }
  r.benchmarks.push_back(b);
  b.name = "micromm/fork";
  b.variant.clear();
  b.params = {{"h", 1}};
  r.benchmarks.push_back(b);
  const auto figures = HeadlineFigures(r);
  ASSERT_EQ(figures.size(), 2u);
  EXPECT_EQ(figures[0].first, "syscall_getpid_raw.mean");
  EXPECT_DOUBLE_EQ(figures[0].second, 105.0);
  EXPECT_EQ(figures[1].first, "micromm_fork_h1.mean");
}

// ---- plan keys of the two engines
// --------------------------------------------------------------------------------

std::string FakeBzImage() {
  std::string img(4096, '\0');
  img[0x1FE] = '\x55';
  img[0x1FF] = '\xAA';
  img.replace(0x202, 4, "HdrS");
  img[0x207] = '\x02';
  return img;
}

TEST(CampaignEnginesPlan, ReadsTheSshAndLavaSections) {
  TempDir t;
  Write(t.path() + "/bz", FakeBzImage());
  Write(t.path() + "/cfg", "Host sut1\n");
  auto ssh = ParsePlanYaml(R"(profiles:
  - {name: off, kernel: bz, cmdline: randomize_kstack_offset=off, boot_entry: "Debian off"}
  - {name: on, kernel: bz, cmdline: randomize_kstack_offset=on, boot_entry: "Debian on"}
boots: 2
engine: {name: ssh, host: sut1.example, port: 2222, user: bench, switch: alternate, sudo: true,
         ssh_config: cfg, cmdline: "root=/dev/sda1 ro", recover: [true], boot_timeout: 15min}
)",
                           "p.yaml", t.path());
  ASSERT_TRUE(ssh.ok()) << ssh.error().message;
  EXPECT_EQ(ssh->engine, "ssh");
  EXPECT_EQ(ssh->ssh.host, "sut1.example");
  EXPECT_EQ(ssh->ssh.port, 2222u);
  EXPECT_EQ(ssh->ssh.switch_mode, "alternate");
  EXPECT_TRUE(ssh->ssh.sudo);
  EXPECT_EQ(ssh->ssh.ssh_config, t.path() + "/cfg");
  EXPECT_EQ(ssh->ssh.boot_timeout_s, 900);
  EXPECT_EQ(ssh->profiles[1].boot_entry, "Debian on");
  ASSERT_TRUE(CheckPlan(*ssh).ok()) << CheckPlan(*ssh).error().message;
  auto back = PlanFromJson(PlanToJson(*ssh));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(PlanToJson(*back), PlanToJson(*ssh));

  auto lava = ParsePlanYaml(R"(profiles:
  - {name: off, kernel: "https://lab.example/bzImage", initrd: "https://lab.example/r.cpio.gz",
     release: 6.1.0-57-amd64, cmdline: randomize_kstack_offset=off}
boots: 3
engine: {name: lava, device_type: x86, identity: mylab, tags: [epyc], job_timeout: 3h}
)",
                            "p.yaml", t.path());
  ASSERT_TRUE(lava.ok()) << lava.error().message;
  EXPECT_EQ(lava->profiles[0].kernel, "https://lab.example/bzImage");  // not made a path
  EXPECT_EQ(lava->lava.identity, "mylab");
  EXPECT_EQ(lava->lava.job_timeout_s, 3 * 3600);
  ASSERT_TRUE(CheckPlan(*lava).ok()) << CheckPlan(*lava).error().message;
  EXPECT_EQ(lava->profiles[0].release, "6.1.0-57-amd64");
  auto lback = PlanFromJson(PlanToJson(*lava));
  ASSERT_TRUE(lback.ok());
  EXPECT_EQ(PlanToJson(*lback), PlanToJson(*lava));
}

TEST(CampaignEnginesPlan, RefusesHostileEngineSettings) {
  TempDir t;
  Write(t.path() + "/bz", FakeBzImage());
  struct Case {
    std::string yaml;
    const char* says;
  };
  const std::string ssh_profiles = "profiles:\n  - {name: a, kernel: bz}\nboots: 1\n";
  const std::string lava_profiles =
      "profiles:\n  - {name: a, kernel: 'https://x/bz', cmdline: 'a=\"b c\"'}\nboots: 1\n";
  const Case cases[] = {
      {ssh_profiles + "engine: {name: ssh}\n", "needs a host"},
      {ssh_profiles + "engine: {name: ssh, host: -oProxyCommand=touch}\n", "not a host name"},
      {ssh_profiles + "engine: {name: ssh, host: 'a;b'}\n", "not a host name"},
      {ssh_profiles + "engine: {name: ssh, host: h, user: '-l'}\n", "not a user name"},
      {ssh_profiles + "engine: {name: ssh, host: h, switch: teleport}\n", "kexec, reboot"},
      {ssh_profiles + "engine: {name: ssh, host: h, switch: reboot}\n", "needs a boot_entry"},
      {ssh_profiles + "engine: {name: ssh, host: h, remote_dir: tmp}\n", "absolute path"},
      {ssh_profiles + "engine: {name: ssh, host: h, remote_dir: /a/../etc}\n", "absolute path"},
      {ssh_profiles + "engine: {name: ssh, host: h, port: 70000}\n", "port"},
      {ssh_profiles + "engine: {name: ssh, host: h, accel: kvm}\n", "unknown key 'accel'"},
      {ssh_profiles + "engine: {name: ssh, host: h, ssh_config: nope}\n", "ssh_config"},
      {"profiles:\n  - {name: a, kernel: bz, config: bz}\nboots: 1\nengine: {name: ssh, host: h}\n",
       "carries no configuration"},
      {ssh_profiles + "engine: {name: telnet}\n", "give qemu, ssh or lava"},
      {"profiles:\n  - {name: a, kernel: bz}\nboots: 1\nengine: {name: lava}\n", "not a URL"},
      {lava_profiles + "engine: {name: lava}\n", "cannot hold quotes"},
      {lava_profiles + "engine: {name: lava, device_type: 'x y'}\n", "device type"},
      {lava_profiles + "engine: {name: lava, device_type: x86, rootfs: /local/file}\n",
       "not a URL"},
      {lava_profiles + "engine: {name: lava, device_type: x86, cpus: 2}\n", "unknown key 'cpus'"},
      {"profiles:\n  - {name: a, kernel: 'https://x/bz', config: c}\nboots: 1\n"
       "engine: {name: lava}\n",
       "carries no file"},
  };
  for (const Case& c : cases) {
    auto plan = ParsePlanYaml(c.yaml, "p.yaml", t.path());
    Status st = plan.ok() ? CheckPlan(*plan) : Status(plan.error());
    ASSERT_FALSE(st.ok()) << c.yaml;
    EXPECT_EQ(st.error().exit_code, kExitUsage) << c.yaml;
    EXPECT_NE(st.error().message.find(c.says), std::string::npos)
        << c.yaml << " -> " << st.error().message;
  }
}

// ---- LAVA: job files and logs
// ------------------------------------------------------------------------------------

TEST(CampaignLava, JobsCarryTheCommandLineWhereTheDeviceTypeTakesIt) {
  CampaignPlan plan;
  plan.engine = "lava";
  plan.boots = 1;
  Profile p;
  p.name = "on";
  p.kernel = "https://lab.example/bzImage";
  p.cmdline = "randomize_kstack_offset=on $(reboot)";
  plan.profiles = {p};
  plan.run_args = {"--bench", "syscall/getpid:raw"};
  const std::string qemu = LavaJobYaml(plan, p, 1);
  EXPECT_NE(qemu.find("-append \"console=ttyS0,115200 randomize_kstack_offset=on $(reboot)\""),
            std::string::npos)
      << qemu;
  EXPECT_EQ(qemu.find("extra_kernel_args"), std::string::npos);
  plan.lava.device_type = "x86";
  const std::string x86 = LavaJobYaml(plan, p, 1);
  EXPECT_NE(x86.find("extra_kernel_args: randomize_kstack_offset=on $(reboot)"), std::string::npos)
      << x86;
  EXPECT_NE(x86.find("method: ipxe"), std::string::npos);
  // The run's words reach the test step quoted.
  EXPECT_NE(x86.find("'--bench' 'syscall/getpid:raw'"), std::string::npos) << x86;
}

std::string ReadData(const std::string& name) {
  auto text = ReadWholeFile(std::string(KSTACKLAB_TEST_DATA) + "/lava/" + name);
  EXPECT_TRUE(text.ok()) << name;
  return text.ok() ? *text : std::string();
}

TEST(CampaignLava, ReadsTheResultBackFromACompleteJobLog) {
  const LavaLog log = ParseLavaLog(ReadData("complete.log"));
  EXPECT_EQ(log.bad_lines, 0u);
  EXPECT_TRUE(log.errors.empty());
  const ChannelData data = ParseChannel(log.target, ChannelFileNames());
  ASSERT_TRUE(data.done);
  GuestReport report;
  report.completed = true;
  report.files = data.files;
  Profile p;
  p.name = "on";
  p.release = "6.1.0-57-amd64";
  p.cmdline = "randomize_kstack_offset=on";
  const BootCheck check = VerifyBoot(p, report, false);
  EXPECT_TRUE(check.accepted) << check.reason;
  EXPECT_EQ(check.result.label, "on");
  // The headline test case, as lava-test-case reported it.
  auto it = std::find_if(log.results.begin(), log.results.end(),
                         [](const LavaTestCase& c) { return c.name == "syscall_getpid.mean"; });
  ASSERT_NE(it, log.results.end());
  EXPECT_EQ(it->result, "pass");
  EXPECT_EQ(it->measurement, "152.300");
  EXPECT_EQ(it->units, "ns");
  // The wrong profile's command line is refused, as under QEMU.
  p.cmdline = "randomize_kstack_offset=off";
  EXPECT_FALSE(VerifyBoot(p, report, false).accepted);
}

TEST(CampaignLava, AnIncompleteJobLogHoldsNoResultAndSaysWhy) {
  const LavaLog log = ParseLavaLog(ReadData("incomplete.log"));
  EXPECT_FALSE(ParseChannel(log.target, ChannelFileNames()).done);
  ASSERT_FALSE(log.errors.empty());
  EXPECT_NE(log.errors.back().find("timed out"), std::string::npos);
  EXPECT_EQ(log.results.back().name, "job");
  EXPECT_EQ(log.results.back().result, "fail");
}

TEST(CampaignLava, SkipsWhatIsNotARecord) {
  const LavaLog log = ParseLavaLog(
      "garbage\n- {\n- [1, 2]\n- {\"lvl\": \"target\"}\n{\"lvl\": \"target\", \"msg\": \"x\"}\n"
      "- {\"dt\": \"t\", \"lvl\": \"target\", \"msg\": \"kept \\u00e9\\\\\"}\n\n- " +
      std::string(100000, '[') + "\n");
  EXPECT_EQ(log.bad_lines, 6u);  // the last: nested too deep to parse, refused before yaml-cpp
  EXPECT_EQ(log.target, "kept \xc3\xa9\\\n");
}

TEST(CampaignLava, TheJobIdIsTheLastLineOfDigits) {
  EXPECT_EQ(LavaJobId("1234\n"), "1234");
  EXPECT_EQ(LavaJobId("Unable to submit x.yaml: error\n"), "");
  EXPECT_EQ(LavaJobId("12.0\n12.1\n"), "12.1");  // multinode
  EXPECT_EQ(LavaJobId(""), "");
}

// ---- the runner and a machine that stops answering
// ---------------------------------------------------------------

class LosingEngine : public Engine {
 public:
  int lose_at = 2;  // the call that loses the machine
  int calls = 0;
  Status Check() override { return OkStatus(); }
  Status Prepare() override { return OkStatus(); }
  GuestReport Boot(const GuestJob& job, const std::atomic<bool>&) override {
    GuestReport r;
    r.accel = "none";
    if (job.machine_note) job.machine_note("switching to profile '" + job.profile->name + "'");
    if (++calls == lose_at) {
      r.failure = "the machine did not come back within boot_timeout (30 s)";
      r.machine = "unreachable after the kexec to profile '" + job.profile->name + "'";
      r.machine_lost = true;
      return r;
    }
    r.completed = true;
    r.machine = "running profile '" + job.profile->name + "'";
    r.files["uname"] = "6.1.0\n";
    r.files["cmdline"] = job.profile->cmdline + "\n";
    r.files["run.rc"] = "0\n";
    RunResult res;
    res.tool_version = "test";
    res.created = "2026-12-01T20:00:00Z";
    res.label = job.profile->name;
    res.timer = {"fake", 1e9, 10, true, 1.0};
    BenchmarkResult b;
    b.name = "sim/a";
    b.timing = "loop";
    Repetition rep;
    rep.iterations = 10;
    rep.metrics["mean"] = 100;
    b.repetitions.push_back(rep);
    res.benchmarks.push_back(b);
    r.files["result.json"] = ResultToJson(res);
    return r;
  }
  std::string Accel() const override { return "none"; }
  std::string AccelReason() const override { return "test"; }
  void SetAccel(const std::string&, const std::string&) override {}
};

TEST(CampaignRunnerMachine, ALostMachineStopsTheCampaignAndResumeFinishesIt) {
  TempDir t;
  const std::string dir = t.path() + "/c";
  CampaignPlan plan;
  plan.engine = "ssh";
  plan.boots = 2;
  plan.randomised = false;
  plan.profiles = {{"off", "/k"}, {"on", "/k"}};
  auto state = CreateCampaign(dir, plan, "test");
  ASSERT_TRUE(state.ok());
  LosingEngine e;
  std::atomic<bool> stop{false};
  ASSERT_TRUE(RunCampaign(dir, *state, e, stop, {}).ok());
  EXPECT_EQ(state->status, "stopped");
  EXPECT_NE(state->stop_reason.find("did not come back"), std::string::npos);
  EXPECT_EQ(state->machine, "unreachable after the kexec to profile 'on'");
  const Boot* on1 = state->Find("on", 1);
  ASSERT_NE(on1, nullptr);
  EXPECT_EQ(on1->status, BootStatus::kPending);
  ASSERT_EQ(on1->attempts.size(), 1u);
  EXPECT_EQ(on1->attempts[0].outcome, "lost");
  EXPECT_EQ(on1->CountedAttempts(), 0);
  EXPECT_EQ(state->Find("off", 2), nullptr);  // nothing after the loss was begun
  auto loaded = LoadState(dir);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(StateToJson(*loaded), StateToJson(*state));

  LosingEngine again;
  again.lose_at = -1;
  ASSERT_TRUE(RunCampaign(dir, *loaded, again, stop, {}).ok());
  EXPECT_EQ(loaded->status, "complete");
  EXPECT_EQ(loaded->Accepted("off") + loaded->Accepted("on"), 4u);
  EXPECT_EQ(again.calls, 3);  // on-1 again, then block 2
  EXPECT_EQ(loaded->Find("on", 1)->attempts.size(), 2u);
  EXPECT_EQ(loaded->machine, "running profile 'on'");
}

}  // namespace
}  // namespace kstacklab::campaign
