// campaign/ engines ssh and lava, without a machine or a lab: the one shell-quoting function
// against a real /bin/sh, the job script run here with a stand-in kstacklab, the plan keys of both
// engines and their refusals, the LAVA log reader on LAVA-format logs (tests/data/lava), the job
// id of `lavacli jobs submit`, and the runner's handling of a machine that stops answering.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <thread>

#include "kstacklab/campaign/arch.h"
#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/engines.h"
#include "kstacklab/campaign/lava.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/campaign/process.h"
#include "kstacklab/campaign/qemu.h"
#include "kstacklab/campaign/remote.h"
#include "kstacklab/campaign/runner.h"
#include "kstacklab/campaign/ssh.h"
#include "kstacklab/campaign/state.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/report/campaign_progress.h"
#include "test_support.h"

namespace kstacklab::campaign {
namespace {

namespace fs = std::filesystem;

// Hooks with the words RunCampaign requires, the command line's (report/campaign_progress.h).
RunnerHooks Worded() {
  RunnerHooks h;
  h.stop_text = report::CampaignStopText;
  return h;
}

// The plan's engine `name` with its defaults.
PlanEngine Named(const char* name) { return PlanEngine(**FindEngine(name)); }

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
  EXPECT_STREQ(ssh->engine.name(), "ssh");
  EXPECT_EQ(SettingsOf<SshSettings>(*ssh).host, "sut1.example");
  EXPECT_EQ(SettingsOf<SshSettings>(*ssh).port, 2222u);
  EXPECT_EQ(SettingsOf<SshSettings>(*ssh).switch_mode, "alternate");
  EXPECT_TRUE(SettingsOf<SshSettings>(*ssh).sudo);
  EXPECT_EQ(SettingsOf<SshSettings>(*ssh).ssh_config, t.path() + "/cfg");
  EXPECT_EQ(SettingsOf<SshSettings>(*ssh).boot_timeout_s, 900);
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
  EXPECT_EQ(SettingsOf<LavaSettings>(*lava).identity, "mylab");
  EXPECT_EQ(SettingsOf<LavaSettings>(*lava).job_timeout_s, 3 * 3600);
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
  plan.engine = Named("lava");
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
  SettingsOf<LavaSettings>(plan).device_type = "x86";
  const std::string x86 = LavaJobYaml(plan, p, 1);
  EXPECT_NE(x86.find("extra_kernel_args: randomize_kstack_offset=on $(reboot)"), std::string::npos)
      << x86;
  EXPECT_NE(x86.find("method: ipxe"), std::string::npos);
  // The run's words reach the test step quoted.
  EXPECT_NE(x86.find("'--bench' 'syscall/getpid:raw'"), std::string::npos) << x86;
}

// lava-dispatcher 2023.01 (tests/e2e/campaign_lava_dispatcher.sh): a tmpfs deploy builds its test
// overlay into a qcow2 disk with libguestfs, which a busybox initramfs cannot mount; the
// initramfs itself takes the overlay instead.
TEST(CampaignLava, TheQemuInitrdTakesLavasTestOverlay) {
  CampaignPlan plan;
  plan.engine = Named("lava");
  plan.boots = 1;
  Profile p;
  p.name = "on";
  p.kernel = "https://lab.example/bzImage";
  p.initrd = "https://lab.example/rootfs.cpio.gz?token=1";
  plan.profiles = {p};
  const std::string job = LavaJobYaml(plan, p, 1);
  EXPECT_NE(job.find("        initrd:\n"
                     "          image_arg: -initrd {initrd}\n"
                     "          url: https://lab.example/rootfs.cpio.gz?token=1\n"
                     "          compression: gz\n"
                     "          format: cpio.newc\n"
                     "          overlays:\n"
                     "            lava: true\n"),
            std::string::npos)
      << job;
  // With a rootfs the overlay is LAVA's to place (the guest disk): the initrd is left as it is.
  SettingsOf<LavaSettings>(plan).rootfs = "https://lab.example/rootfs.ext4";
  const std::string with_rootfs = LavaJobYaml(plan, p, 1);
  EXPECT_NE(with_rootfs.find("url: https://lab.example/rootfs.cpio.gz?token=1\n"),
            std::string::npos);
  EXPECT_EQ(with_rootfs.find("overlays"), std::string::npos) << with_rootfs;
  EXPECT_EQ(with_rootfs.find("cpio.newc"), std::string::npos);
}

TEST(CampaignLava, TheCompressionIsTheNamesSuffix) {
  EXPECT_EQ(LavaCompression("https://x/rootfs.cpio.gz"), "gz");
  EXPECT_EQ(LavaCompression("file:///tmp/r.tgz"), "gz");
  EXPECT_EQ(LavaCompression("https://x/r.cpio.xz#frag"), "xz");
  EXPECT_EQ(LavaCompression("https://x/r.cpio.zst"), "zstd");
  EXPECT_EQ(LavaCompression("https://x/r.cpio.zstd"), "zstd");
  EXPECT_EQ(LavaCompression("https://x/r.cpio.bz2?x=.gz"), "bz2");
  EXPECT_EQ(LavaCompression("https://x/r.cpio"), "");
  EXPECT_EQ(LavaCompression("https://x/gz"), "");
  EXPECT_EQ(LavaCompression(".gz"), "");
}

std::string ReadData(const std::string& name) {
  auto text = ReadWholeFile(std::string(KSTACKLAB_TEST_DATA) + "/lava/" + name);
  EXPECT_TRUE(text.ok()) << name;
  return text.ok() ? *text : std::string();
}

// The report of a boot that completed with the files `data` carried, and the profile the
// recorded logs (tests/data/lava) booted.
GuestReport CompletedReport(const ChannelData& data) {
  GuestReport report;
  report.completed = true;
  report.files = data.files;
  return report;
}
Profile RecordedProfile() {
  Profile p;
  p.name = "on";
  p.release = "6.1.0-57-amd64";
  p.cmdline = "randomize_kstack_offset=on";
  return p;
}

TEST(CampaignLava, ReadsTheResultBackFromACompleteJobLog) {
  const LavaLog log = ParseLavaLog(ReadData("complete.log"));
  EXPECT_EQ(log.bad_lines, 0u);
  EXPECT_TRUE(log.errors.empty());
  const ChannelData data = ParseChannel(log.target, ChannelFileNames());
  ASSERT_TRUE(data.done);
  const GuestReport report = CompletedReport(data);
  Profile p = RecordedProfile();
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

// Logs recorded from Debian 12's lava-dispatcher 2023.01 (tests/data/lava/README.md).
TEST(CampaignLava, ReadsTheResultBackFromARealDispatchersLog) {
  const LavaLog log = ParseLavaLog(ReadData("dispatcher-complete.log"));
  EXPECT_EQ(log.bad_lines, 0u);
  EXPECT_TRUE(log.errors.empty());
  EXPECT_EQ(log.job_error, "");
  const ChannelData data = ParseChannel(log.target, ChannelFileNames());
  ASSERT_TRUE(data.done);
  const GuestReport report = CompletedReport(data);
  Profile p = RecordedProfile();
  const BootCheck check = VerifyBoot(p, report, false);
  EXPECT_TRUE(check.accepted) << check.reason;
  // lava-test-case's figure: the dispatcher tags the numbers it read (`! "1298.364"`).
  auto it = std::find_if(log.results.begin(), log.results.end(),
                         [](const LavaTestCase& c) { return c.name == "syscall_getpid_raw.mean"; });
  ASSERT_NE(it, log.results.end());
  EXPECT_EQ(it->definition, "0_kstacklab");
  EXPECT_EQ(it->result, "pass");
  EXPECT_EQ(it->measurement, "1298.364");
  EXPECT_EQ(it->units, "ns");
  EXPECT_EQ(log.results.back().name, "job");
  EXPECT_EQ(log.results.back().result, "pass");
  // What the file reader gives is what the text reader gives.
  TempDir t;
  Write(t.path() + "/log", ReadData("dispatcher-complete.log"));
  ChannelData channel;
  auto from_file = ParseLavaLogFile(t.path() + "/log", &channel);
  ASSERT_TRUE(from_file.ok());
  EXPECT_TRUE(channel.done);
  EXPECT_EQ(channel.files, data.files);
}

TEST(CampaignLava, ARealDispatchersFailedJobSaysWhyInItsJobResult) {
  const LavaLog log = ParseLavaLog(ReadData("dispatcher-incomplete.log"));
  EXPECT_EQ(log.bad_lines, 0u);
  EXPECT_FALSE(ParseChannel(log.target, ChannelFileNames()).done);
  ASSERT_EQ(log.errors.size(), 1u);
  EXPECT_EQ(log.errors.back(), "JobError: Your job cannot terminate cleanly.");  // the help only
  EXPECT_EQ(log.job_error,
            "Job error: Invalid job data: [\"Image file '/root/.cache/kstacklab/qemu/missing' does "
            "not exist or is not readable\"]");
}

TEST(CampaignLava, OnlyTheFailedLavaJobResultGivesTheJobError) {
  const std::string fail =
      "- {\"dt\": \"t\", \"lvl\": \"results\", \"msg\": {\"case\": \"job\", \"definition\": "
      "\"lava\", \"error_msg\": \"boom\\n\", \"error_type\": \"Infrastructure\", \"result\": "
      "\"fail\"}}\n";
  EXPECT_EQ(ParseLavaLog(fail).job_error, "Infrastructure error: boom");
  std::string other = fail;
  other.replace(other.find("\"lava\""), 6, "\"0_kst\"");
  EXPECT_EQ(ParseLavaLog(other).job_error, "");
  std::string no_type = fail;
  no_type.replace(no_type.find(", \"error_type\": \"Infrastructure\""), 32, "");
  EXPECT_EQ(ParseLavaLog(no_type).job_error, "boom");
}

TEST(CampaignLava, SkipsWhatIsNotARecord) {
  // Appended, not literal + string: GCC 12 -Warray-bounds on the literal's copy (bug 105651).
  std::string text =
      "garbage\n- {\n- [1, 2]\n- {\"lvl\": \"target\"}\n{\"lvl\": \"target\", \"msg\": \"x\"}\n"
      "- {\"dt\": \"t\", \"lvl\": \"target\", \"msg\": \"kept \\u00e9\\\\\"}\n\n- ";
  text.append(100000, '[');
  text += "\n";
  const LavaLog log = ParseLavaLog(text);
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
    r.facts = Facts();
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
  BootFacts Facts() const override { return {"none", "test", false}; }
};

TEST(CampaignRunnerMachine, ALostMachineStopsTheCampaignAndResumeFinishesIt) {
  TempDir t;
  const std::string dir = t.path() + "/c";
  CampaignPlan plan;
  plan.engine = Named("ssh");
  plan.boots = 2;
  plan.randomised = false;
  plan.profiles = {{"off", "/k"}, {"on", "/k"}};
  auto state = CreateCampaign(dir, plan, "test");
  ASSERT_TRUE(state.ok());
  LosingEngine e;
  std::atomic<bool> stop{false};
  ASSERT_TRUE(RunCampaign(dir, *state, e, stop, Worded()).ok());
  EXPECT_EQ(state->status, CampaignStatus::kStopped);
  EXPECT_NE(state->stop_reason.find("did not come back"), std::string::npos);
  EXPECT_EQ(state->machine, "unreachable after the kexec to profile 'on'");
  const Boot* on1 = state->Find("on", 1);
  ASSERT_NE(on1, nullptr);
  EXPECT_EQ(on1->status, BootStatus::kPending);
  ASSERT_EQ(on1->attempts.size(), 1u);
  EXPECT_EQ(on1->attempts[0].outcome, AttemptOutcome::kLost);
  EXPECT_EQ(on1->CountedAttempts(), 0);
  EXPECT_EQ(state->Find("off", 2), nullptr);  // nothing after the loss was begun
  auto loaded = LoadState(dir);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(StateToJson(*loaded), StateToJson(*state));

  LosingEngine again;
  again.lose_at = -1;
  ASSERT_TRUE(RunCampaign(dir, *loaded, again, stop, Worded()).ok());
  EXPECT_EQ(loaded->status, CampaignStatus::kComplete);
  EXPECT_EQ(loaded->Accepted("off") + loaded->Accepted("on"), 4u);
  EXPECT_EQ(again.calls, 3);  // on-1 again, then block 2
  EXPECT_EQ(loaded->Find("on", 1)->attempts.size(), 2u);
  EXPECT_EQ(loaded->machine, "running profile 'on'");
}

// ---- every wait honours the stop flag and its deadline
// -----------------------------------------------------------

TEST(CampaignProcess, AStopKillsTheChildAtOnce) {
  std::atomic<bool> stop{false};
  std::thread raise([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = true;
  });
  const double start = MonotonicSeconds();
  auto r = RunProcess({"sleep", "600"}, 600, "", &stop);
  raise.join();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->interrupted);
  EXPECT_FALSE(r->timed_out);
  EXPECT_LT(MonotonicSeconds() - start, 5);
}

// A child that closes its output but goes on running is still under the deadline.
TEST(CampaignProcess, TheDeadlineCoversAChildThatClosedItsOutput) {
  const double start = MonotonicSeconds();
  auto r = RunProcess({"sh", "-c", "exec >/dev/null 2>&1; exec sleep 600"}, 1);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(MonotonicSeconds() - start, 10);
}

// PATH with a directory of fake programs first, for one test.
class FakePath {
 public:
  explicit FakePath(const std::string& dir) {
    const char* old = std::getenv("PATH");
    old_ = old != nullptr ? old : "/usr/bin:/bin";
    setenv("PATH", (dir + ":" + old_).c_str(), 1);
  }
  ~FakePath() { setenv("PATH", old_.c_str(), 1); }
  FakePath(const FakePath&) = delete;
  FakePath& operator=(const FakePath&) = delete;

 private:
  std::string old_;
};

// A fake ssh whose behaviour is the word in DIR/mode: "refuse" fails as OpenSSH does on a
// refused connection (exit 255), "hang" never answers, "answer" prints a boot id (and x86_64 to
// `uname -m`).
constexpr const char* kFakeSsh = R"(#!/bin/sh
dir=$(dirname "$0")
echo "$*" >> "$dir/calls"
case $(cat "$dir/mode") in
  refuse) echo "ssh: connect to host 127.0.0.1 port 2222: Connection refused" >&2; exit 255 ;;
  hang) touch "$dir/hanging"; exec sleep 600 ;;
  answer) case "$*" in *uname*) echo x86_64 ;; *) echo 1111-boot ;; esac ;;
esac
)";

// Boots `job` on a thread; raises the stop flag once `hanging` exists (when not ""). Returns
// the report and the seconds from the stop (or the start) to the return.
GuestReport BootAndStop(Engine& e, const GuestJob& job, const std::string& hanging,
                        double* seconds) {
  std::atomic<bool> stop{false};
  const double start = MonotonicSeconds();
  auto boot = std::async(std::launch::async, [&] { return e.Boot(job, stop); });
  double from = start;
  if (!hanging.empty()) {
    for (int i = 0; i < 600 && !fs::exists(hanging); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(fs::exists(hanging)) << "the fake program never ran";
    from = MonotonicSeconds();
    stop = true;
  }
  GuestReport r = boot.get();
  *seconds = MonotonicSeconds() - from;
  return r;
}

struct SshFixture {
  TempDir t;
  std::string bin = t.path() + "/bin";
  CampaignPlan plan;
  Profile profile{"on", ""};
  std::vector<std::string> notes;
  GuestJob job;

  explicit SshFixture(const std::string& mode) {
    fs::create_directories(bin);
    Write(bin + "/ssh", kFakeSsh, 0755);
    Write(bin + "/mode", mode + "\n");
    Write(t.path() + "/bzImage", FakeBzImage());
    profile.kernel = t.path() + "/bzImage";
    plan.engine = Named("ssh");
    plan.boots = 1;
    plan.profiles = {profile};
    SettingsOf<SshSettings>(plan).host = "sut.example";
    SettingsOf<SshSettings>(plan).port = 2222;
    SettingsOf<SshSettings>(plan).connect_timeout_s = 1;
    job.profile = &plan.profiles[0];
    job.console_path = t.path() + "/console.log";
    job.note = [this](const EngineNote& n) { notes.push_back(report::EngineNoteText(n)); };
  }
  std::unique_ptr<Engine> Make() {
    auto e = MakeEngine(plan, t.path(), t.path() + "/bzImage");
    EXPECT_TRUE(e->Prepare().ok());
    return e;
  }
};

TEST(CampaignSsh, AMachineThatRefusesBeforeTheFirstBootFailsAtOnceWithSshsError) {
  SshFixture f("refuse");
  FakePath path(f.bin);
  SettingsOf<SshSettings>(f.plan).boot_timeout_s = 30;
  auto e = f.Make();
  double seconds = 0;
  const GuestReport r = BootAndStop(*e, f.job, "", &seconds);
  EXPECT_LT(seconds, 15) << "waited for a machine that refuses the connection";
  EXPECT_FALSE(r.interrupted);
  EXPECT_TRUE(r.machine_lost);
  EXPECT_NE(r.failure.find("sut.example:2222"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("Connection refused"), std::string::npos) << r.failure;
}

TEST(CampaignSsh, AMachineWaitedForWithARecoverCommandSaysSoWhileItWaits) {
  SshFixture f("refuse");
  FakePath path(f.bin);
  SettingsOf<SshSettings>(f.plan).boot_timeout_s = 3;
  SettingsOf<SshSettings>(f.plan).recover = {"true"};
  auto e = f.Make();
  double seconds = 0;
  const GuestReport r = BootAndStop(*e, f.job, "", &seconds);
  EXPECT_TRUE(r.machine_lost);
  EXPECT_NE(r.failure.find("after the recover command"), std::string::npos) << r.failure;
  ASSERT_FALSE(f.notes.empty()) << "a silent wait";
  EXPECT_EQ(f.notes[0].rfind("waiting for sut.example:2222 to answer (", 0), 0u) << f.notes[0];
  EXPECT_NE(f.notes[0].find(" s of 3 s)"), std::string::npos) << f.notes[0];
  EXPECT_LT(seconds, 6 + 5) << "two waits of 3 s, each ended at its deadline";
}

// `uname -m` on the machine before boot 1: in the engine's Check when it answers then, else at
// its first contact, before anything is switched.
TEST(CampaignSsh, AMachineOfAnotherArchitectureIsRefusedBeforeBootOne) {
  SshFixture f("answer");
  FakePath path(f.bin);
  f.plan.profiles[0].arch = "aarch64";
  Status st = MakeEngine(f.plan, f.t.path(), f.t.path() + "/bzImage")->Check();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().exit_code, kExitUsage);
  EXPECT_NE(st.error().message.find("the machine sut.example is x86_64 (uname -m) but profile 'on' "
                                    "kernel '" +
                                    f.profile.kernel + "' is aarch64"),
            std::string::npos)
      << st.error().message;
  auto e = f.Make();
  double seconds = 0;
  const GuestReport r = BootAndStop(*e, f.job, "", &seconds);
  EXPECT_TRUE(r.machine_lost) << "no boot of this plan can work there";
  EXPECT_NE(r.failure.find("is x86_64 (uname -m)"), std::string::npos) << r.failure;
  EXPECT_EQ(r.machine, "in its own kernel: not switched to profile 'on'");
  f.plan.profiles[0].arch = "x86_64";
  EXPECT_TRUE(MakeEngine(f.plan, f.t.path(), f.t.path() + "/bzImage")->Check().ok());
}

TEST(CampaignSsh, AHangingMachineEndsAtTheBootTimeout) {
  SshFixture f("hang");
  FakePath path(f.bin);
  SettingsOf<SshSettings>(f.plan).boot_timeout_s = 3;
  auto e = f.Make();
  double seconds = 0;
  const GuestReport r = BootAndStop(*e, f.job, "", &seconds);
  EXPECT_GE(seconds, 2.5);
  EXPECT_LT(seconds, 3 + 3) << "a probe outlived boot_timeout";
  EXPECT_TRUE(r.machine_lost);
  EXPECT_NE(r.failure.find("no answer within"), std::string::npos) << r.failure;
}

TEST(CampaignSsh, AStopEndsTheWaitForAHangingMachineAtOnce) {
  SshFixture f("hang");
  FakePath path(f.bin);
  SettingsOf<SshSettings>(f.plan).boot_timeout_s = 600;
  SettingsOf<SshSettings>(f.plan).recover = {"true"};
  auto e = f.Make();
  double seconds = 0;
  const GuestReport r = BootAndStop(*e, f.job, f.bin + "/hanging", &seconds);
  EXPECT_LT(seconds, 3);
  EXPECT_TRUE(r.interrupted);
  EXPECT_FALSE(r.machine_lost);
}

// A fake lavacli that hangs (sleeps) in the call named by `hang` ("jobs submit", "jobs logs")
// and otherwise plays a job that completes.
std::string FakeLavacli(const std::string& dir, const std::string& hang) {
  const std::string path = dir + "/lavacli";
  Write(path,
        fmt::format(R"(#!/bin/sh
dir=$(dirname "$0")
echo "$*" >> "$dir/calls"
case "$1 $2" in
  "{}") touch "$dir/hanging"; exec sleep 600 ;;
  "jobs submit") echo 7 ;;
  "jobs show") echo "health: Complete" ;;
esac
exit 0
)",
                    hang),
        0755);
  return path;
}

CampaignPlan LavaPlan(const std::string& lavacli) {
  CampaignPlan plan;
  plan.engine = Named("lava");
  plan.boots = 1;
  plan.profiles = {{"on", "https://lab.example/bzImage"}};
  SettingsOf<LavaSettings>(plan).lavacli = lavacli;
  return plan;
}

TEST(CampaignLavaEngine, AStopWhileLavacliHangsEndsTheBootAtOnceNotCounted) {
  for (const char* hang : {"jobs submit", "jobs logs"}) {
    SCOPED_TRACE(hang);
    TempDir t;
    const CampaignPlan plan = LavaPlan(FakeLavacli(t.path(), hang));
    auto e = MakeEngine(plan, t.path(), "");
    GuestJob job;
    job.profile = &plan.profiles[0];
    job.console_path = t.path() + "/boot-1-try-1.console.log";
    double seconds = 0;
    const GuestReport r = BootAndStop(*e, job, t.path() + "/hanging", &seconds);
    EXPECT_LT(seconds, 3);
    EXPECT_TRUE(r.interrupted) << r.failure;
  }
}

TEST(CampaignLavaEngine, AStopDuringASubmitLeavesTheCampaignResumableWithTheTryUncounted) {
  TempDir t;
  const std::string dir = t.path() + "/c";
  const CampaignPlan plan = LavaPlan(FakeLavacli(t.path(), "jobs submit"));
  auto state = CreateCampaign(dir, plan, "test");
  ASSERT_TRUE(state.ok());
  auto e = MakeEngine(plan, dir + "/.work", "");
  std::atomic<bool> stop{false};
  auto run =
      std::async(std::launch::async, [&] { return RunCampaign(dir, *state, *e, stop, Worded()); });
  for (int i = 0; i < 600 && !fs::exists(t.path() + "/hanging"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double from = MonotonicSeconds();
  stop = true;
  ASSERT_TRUE(run.get().ok());
  EXPECT_LT(MonotonicSeconds() - from, 3);
  auto loaded = LoadState(dir);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->status, CampaignStatus::kInterrupted);
  const Boot* b = loaded->Find("on", 1);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->status, BootStatus::kPending);
  ASSERT_EQ(b->attempts.size(), 1u);
  EXPECT_EQ(b->attempts[0].outcome, AttemptOutcome::kInterrupted);
  EXPECT_EQ(b->CountedAttempts(), 0);
}

// ---- an image cut short and a guest larger than the host, refused before boot 1
// ----------------------------------------------------------------------------------

// FakeBzImage's header declaring (4 + 1) * 512 bytes of setup and `syssize` paragraphs.
std::string BzImageDeclaring(uint32_t syssize) {
  std::string img = FakeBzImage();
  img[0x1F1] = 4;
  img[0x206] = '\x0F';  // protocol 2.15: syssize is 32 bits
  for (int i = 0; i < 4; ++i) img[0x1F4 + i] = static_cast<char>((syssize >> (8 * i)) & 0xFF);
  return img;
}

// The smallest ELF64 file IsStaticElf accepts: one PT_LOAD, no PT_INTERP; little endian, for
// this build's architecture (the qemu engine wants a busybox of the kernels').
std::string StaticElf() {
  std::string e(64 + 56, '\0');
  e.replace(0, 4,
            "\x7f"
            "ELF");
  e[4] = 2;
  e[5] = 1;
  e[18] = static_cast<char>(HostArchitecture().elf_machine & 0xFF);
  e[19] = static_cast<char>(HostArchitecture().elf_machine >> 8);
  e[0x20] = 64;  // e_phoff
  e[0x36] = 56;  // e_phentsize
  e[0x38] = 1;   // e_phnum
  e[64] = 1;     // p_type PT_LOAD
  return e;
}

TEST(CampaignImageChecks, AKernelCutAfterItsHeaderIsRefusedWithBothSizes) {
  TempDir t;
  Profile p{"off", t.path() + "/bzImage"};
  std::string whole = BzImageDeclaring(0x10000);
  whole.resize(5 * 512 + 0x10000 * 16, '\0');
  Write(p.kernel, whole);
  EXPECT_TRUE(CheckKernelImageSize(p).ok());
  Write(p.kernel, whole.substr(0, 4096));
  const Status st = CheckKernelImageSize(p);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().exit_code, kExitUsage);
  EXPECT_NE(st.error().message.find("profile 'off'"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find(p.kernel), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("declares 1051136 bytes"), std::string::npos)
      << st.error().message;
  EXPECT_NE(st.error().message.find("the file has 4096"), std::string::npos);
  EXPECT_NE(st.error().message.find("copy the image again"), std::string::npos);
  // The fake image the plan tests use declares no more than it holds.
  Write(p.kernel, FakeBzImage());
  EXPECT_TRUE(CheckKernelImageSize(p).ok());
}

TEST(CampaignImageChecks, GuestMemoryIsComparedWithTheHostsMemTotal) {
  const std::string meminfo = "MemFree: 100 kB\nMemTotal:        8167848 kB\n";
  EXPECT_TRUE(CheckGuestMemory("2G", meminfo).ok());
  EXPECT_TRUE(CheckGuestMemory("7976M", meminfo).ok());
  EXPECT_TRUE(CheckGuestMemory("4096", meminfo).ok());  // MiB, as QEMU reads it
  const Status st = CheckGuestMemory("999999G", meminfo);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().exit_code, kExitUsage);
  EXPECT_NE(st.error().message.find("999999G"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("MemTotal 7976 MiB"), std::string::npos) << st.error().message;
  EXPECT_FALSE(CheckGuestMemory("9G", meminfo).ok());
  EXPECT_TRUE(CheckGuestMemory("999999G", "no such line\n").ok());
}

TEST(CampaignImageChecks, AGuestMemoryBelowWhatAKernelBootsInIsRefused) {
  QemuSettings q;
  const CampaignPlan plan;
  for (const char* m : {"0M", "1M", "63", "63M", "0G"}) {
    q.memory = m;
    const Status st = q.Check(plan);
    ASSERT_FALSE(st.ok()) << m;
    EXPECT_EQ(st.error().exit_code, kExitUsage);
    EXPECT_EQ(st.error().message,
              fmt::format("engine memory {} is below what a kernel and the guest's initramfs boot "
                          "in; give at least 64M, e.g. 1G",
                          m));
  }
  for (const char* m : {"64M", "64", "1G", "2048M"}) {
    q.memory = m;
    EXPECT_TRUE(q.Check(plan).ok()) << m;
  }
}

TEST(CampaignImageChecks, APinnedCpuTheHostDoesNotHaveIsRefusedNamingTheCpusThereAre) {
  EXPECT_TRUE(CheckPinnedCpus({}, {0, 1}).ok());
  EXPECT_TRUE(CheckPinnedCpus({1, 0}, {0, 1}).ok());
  EXPECT_TRUE(CheckPinnedCpus({7}, {}).ok());  // not known: nothing to compare
  const Status st = CheckPinnedCpus({1, 7}, {0, 1, 2, 3, 6});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().exit_code, kExitUsage);
  EXPECT_EQ(st.error().message,
            "engine pin names CPU 7, which this host does not have or kstacklab may not run on "
            "(CPUs here: 0-3,6); give CPUs from 0-3,6");
}

// Both checks run in the engines' Check, before boot 1 (the command exits 2, nothing written).
TEST(CampaignImageChecks, TheEnginesRefuseACutImageAndAnOversizedGuestBeforeBootOne) {
  TempDir t;
  Write(t.path() + "/busybox", StaticElf(), 0755);
  Write(t.path() + "/bzImage", BzImageDeclaring(0x10000).substr(0, 4096));
  CampaignPlan plan;
  plan.boots = 1;
  plan.profiles = {{"off", t.path() + "/bzImage"}};
  SettingsOf<QemuSettings>(plan).binary = "true";
  SettingsOf<QemuSettings>(plan).busybox = t.path() + "/busybox";
  SettingsOf<QemuSettings>(plan).accel = "tcg";
  Status st = MakeEngine(plan, t.path(), "/bin/true")->Check();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().exit_code, kExitUsage);
  EXPECT_NE(st.error().message.find("cut short"), std::string::npos) << st.error().message;
  const PlanEngine qemu = plan.engine;  // kept for the qemu checks below
  plan.engine = Named("ssh");
  SettingsOf<SshSettings>(plan).host = "sut.example";
  st = MakeEngine(plan, t.path(), "/bin/true")->Check();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("cut short"), std::string::npos) << st.error().message;

  Write(t.path() + "/bzImage", FakeBzImage());
  plan.engine = qemu;
  EXPECT_TRUE(MakeEngine(plan, t.path(), "/bin/true")->Check().ok());
  SettingsOf<QemuSettings>(plan).memory = "999999G";
  st = MakeEngine(plan, t.path(), "/bin/true")->Check();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().exit_code, kExitUsage);
  EXPECT_NE(st.error().message.find("engine memory 999999G"), std::string::npos)
      << st.error().message;
}

// ---- logs over their caps keep their head and tail
// --------------------------------------------------------------------------------

std::string Base64Of(const std::string& data) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < data.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(data[i]) << 16;
    if (i + 1 < data.size()) v |= static_cast<uint8_t>(data[i + 1]) << 8;
    if (i + 2 < data.size()) v |= static_cast<uint8_t>(data[i + 2]);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < data.size() ? k[(v >> 6) & 63] : '=';
    out += i + 2 < data.size() ? k[v & 63] : '=';
  }
  return out;
}

// A data channel whose run.log is `log_lines` lines of 57 bytes (written in pieces, never held
// whole) between a first and a last line, then a result file for profile `label`.
void WriteChannelWithALongRunLog(const std::string& path, size_t log_lines,
                                 const std::string& label) {
  // Each piece a multiple of 3 bytes, so the pieces' base64 joins into the whole's.
  auto line57 = [](std::string text) {
    text.resize(56, '.');
    return Base64Of(text + "\n");
  };
  std::ofstream out(path, std::ios::binary);
  out << "kstacklab-file run.log\n" << line57("first line of the run log") << "\n";
  const std::string line = line57("");
  for (size_t i = 0; i < log_lines; ++i) out << line << "\n";
  out << line57("last line of the run log") << "\nkstacklab-end\n";
  RunResult r;
  r.tool_version = "test";
  r.created = "2026-12-01T20:00:00Z";
  r.label = label;
  r.timer = {"fake", 1e9, 10, true, 1.0};
  BenchmarkResult b;
  b.name = "sim/a";
  b.timing = "loop";
  Repetition rep;
  rep.iterations = 10;
  rep.metrics["mean"] = 100;
  b.repetitions.push_back(rep);
  r.benchmarks.push_back(b);
  const std::vector<std::pair<std::string, std::string>> files = {{"uname", "6.1.0\n"},
                                                                  {"cmdline", "console=ttyS0\n"},
                                                                  {"run.rc", "0\n"},
                                                                  {"sysctl.log", ""},
                                                                  {"result.json", ResultToJson(r)}};
  for (const auto& [name, data] : files) {
    out << "kstacklab-file " << name << "\n" << Base64Of(data) << "\nkstacklab-end\n";
  }
  out << "kstacklab-done\n";
}

TEST(CampaignCaps, AHundredMegabyteRunLogIsReadInBoundedMemoryAndTheBootStillJudged) {
  TempDir t;
  const std::string channel = t.path() + "/channel.txt";
  const size_t lines = (size_t{100} << 20) / 57;  // 100 MiB of run log
  WriteChannelWithALongRunLog(channel, lines, "on");
  // In a child, so its peak memory is its own.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto data = ParseChannelFile(channel, ChannelFileNames());
    if (!data.ok() || !data->done) _exit(3);
    const std::string& log = data->files["run.log"];
    const bool kept =
        log.size() < kMaxGuestLogBytes + 1024 && log.rfind("first line of the run log", 0) == 0 &&
        log.find("last line of the run log") != std::string::npos &&
        log.find("bytes were cut here") != std::string::npos && data->cut.size() == 1 &&
        report::EngineNoteText(data->cut[0]).find("run.log") != std::string::npos;
    if (!kept) _exit(4);
    GuestReport report;
    report.completed = true;
    report.files = std::move(data->files);
    Profile p;
    p.name = "on";
    _exit(VerifyBoot(p, report, false).accepted ? 0 : 5);
  }
  int status = 0;
  rusage usage{};
  ASSERT_EQ(wait4(pid, &status, 0, &usage), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: no channel, 4: the log not head + marker + tail, "
                                       "5: the boot not accepted";
  EXPECT_LT(usage.ru_maxrss, 64 * 1024) << "peak KiB while reading a 135 MB channel";
}

TEST(CampaignCaps, ALogWithinItsCapIsKeptWhole) {
  const std::string log = "line 1\nline 2\n";
  const ChannelData d =
      ParseChannel("kstacklab-file run.log\n" + Base64Of(log) + "\nkstacklab-end\nkstacklab-done\n",
                   ChannelFileNames());
  EXPECT_EQ(d.files.at("run.log"), log);
  EXPECT_TRUE(d.cut.empty());
  HeadTail h(10);
  h.Append("abcde");
  h.Append("fghijklmnop");
  EXPECT_TRUE(h.cut());
  EXPECT_EQ(h.Text(), "abcde" + CutMarker(6, 16, 10) + "lmnop");
  EXPECT_NE(CutMarker(6, 16, 10).find("6 of this log's 16 bytes were cut here"), std::string::npos);
}

TEST(CampaignCaps, AConsoleLogOverItsCapKeepsItsHeadAndTailAndSaysSo) {
  TempDir t;
  const std::string path = t.path() + "/console.log";
  {
    std::ofstream out(path, std::ios::binary);
    out << "Linux version 6.1.0\n";
    const std::string noise(1023, 'n');
    for (int i = 0; i < 40 * 1024; ++i) out << noise << "\n";  // 40 MiB
    out << "Kernel panic - not syncing: the end\n";
  }
  const std::optional<CappedFile> cut = CapFile(path, kMaxConsoleBytes);
  ASSERT_TRUE(cut.has_value());
  const std::string note = report::EngineNoteText(LogCut{LogKind::kConsole, *cut});
  EXPECT_NE(note.find("kept its first and last"), std::string::npos) << note;
  auto text = ReadWholeFile(path, size_t{64} << 20);
  ASSERT_TRUE(text.ok());
  EXPECT_LT(text->size(), kMaxConsoleBytes + 1024);
  EXPECT_EQ(text->rfind("Linux version 6.1.0\n", 0), 0u);
  EXPECT_NE(text->find("bytes were cut here"), std::string::npos);
  EXPECT_NE(text->find("Kernel panic - not syncing: the end\n"), std::string::npos);
  EXPECT_FALSE(CapFile(path, kMaxConsoleBytes).has_value()) << "within its cap now";
}

// A completed job whose LAVA log is longer than anything kept in memory (20 MiB of the DUT's
// output before kstacklab's): the result between the markers is still found.
TEST(CampaignLavaEngine, TheResultIsFoundInALogOfAnyLength) {
  TempDir t;
  {
    std::ofstream big(t.path() + "/big.log", std::ios::binary);
    const std::string noise =
        "- {\"dt\": \"2026-12-01T20:00:00\", \"lvl\": \"target\", \"msg\": \"" +
        std::string(1000, 'n') + "\"}\n";
    for (int i = 0; i < 20 * 1024; ++i) big << noise;
    big << ReadData("complete.log");
  }
  Write(t.path() + "/lavacli", R"(#!/bin/sh
dir=$(dirname "$0")
case "$1 $2" in
  "jobs submit") echo 7 ;;
  "jobs show") echo "health: Complete" ;;
  "jobs logs") cat "$dir/big.log" ;;
esac
exit 0
)",
        0755);
  CampaignPlan plan = LavaPlan(t.path() + "/lavacli");
  plan.profiles[0].release = "6.1.0-57-amd64";
  plan.profiles[0].cmdline = "randomize_kstack_offset=on";
  auto e = MakeEngine(plan, t.path(), "");
  GuestJob job;
  job.profile = &plan.profiles[0];
  job.console_path = t.path() + "/boot-1-try-1.console.log";
  std::vector<std::string> notes;
  job.note = [&notes](const EngineNote& n) { notes.push_back(report::EngineNoteText(n)); };
  double seconds = 0;
  const GuestReport r = BootAndStop(*e, job, "", &seconds);
  ASSERT_TRUE(r.completed) << r.failure;
  EXPECT_TRUE(VerifyBoot(plan.profiles[0], r, false).accepted)
      << VerifyBoot(plan.profiles[0], r, false).reason;
  // The kept log is cut to the console cap, and the user is told so.
  auto kept = ReadWholeFile(job.console_path, size_t{64} << 20);
  ASSERT_TRUE(kept.ok());
  EXPECT_LE(kept->size(), kMaxConsoleBytes);
  EXPECT_NE(kept->find("kstacklab-done"), std::string::npos) << "the log's end is kept";
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("LAVA log ", 0), 0u) << notes[0];
}

TEST(CampaignLava, AFileReadLogGivesWhatTheTextReaderGives) {
  TempDir t;
  const std::string text = ReadData("complete.log");
  Write(t.path() + "/log", text + "- " + std::string(kMaxLavaLineBytes + 10, '[') + "\n");
  ChannelData channel;
  auto log = ParseLavaLogFile(t.path() + "/log", &channel);
  ASSERT_TRUE(log.ok());
  const LavaLog whole = ParseLavaLog(text);
  EXPECT_EQ(log->bad_lines, whole.bad_lines + 1);  // the over-long line
  EXPECT_EQ(log->results.size(), whole.results.size());
  const ChannelData want = ParseChannel(whole.target, ChannelFileNames());
  EXPECT_TRUE(channel.done);
  EXPECT_EQ(channel.files, want.files);
}

}  // namespace
}  // namespace kstacklab::campaign
