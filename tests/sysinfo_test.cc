// Environment capture: parsers on known inputs, and CaptureEnvironment() on fixture trees under
// tests/data/sysinfo/<case>/ (x86_vm_gz, bare_boot, garbled, empty) and on small temp trees.
#include "kstacklab/sysinfo/sysinfo.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kstacklab/common/error.h"
#include "text.h"

namespace kstacklab::sysinfo {
namespace {

const std::string kData = KSTACKLAB_TEST_DATA "/sysinfo/";

Json Capture(const std::string& fixture) {
  SysinfoOptions options;
  options.root = kData + fixture;
  return CaptureEnvironment(options);
}

bool HasProblemContaining(const Json& env, const std::string& needle) {
  for (const Json& p : env["problems"]) {
    if (p.get<std::string>().find(needle) != std::string::npos) return true;
  }
  return false;
}

std::vector<std::string> WarningCodes(const Json& env) {
  std::vector<std::string> codes;
  for (const EnvWarning& w : EnvironmentWarnings(env)) codes.push_back(w.code);
  return codes;
}

// A throw-away root with a few files; removed at scope exit.
class TempRoot {
 public:
  TempRoot() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "kstacklab-sysinfo-XXXXXX").string();
    KSTACKLAB_CHECK(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempRoot() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  void Write(const std::string& rel, const std::string& content) const {
    std::filesystem::path p = std::filesystem::path(path_) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// ---- kstrtobool and the command line -----------------------------------------------------------

TEST(KernelStrToBool, AcceptsWhatTheKernelAccepts) {
  for (const char* t : {"1", "y", "Y", "yes", "on", "ON", "oN", "1junk"}) {
    EXPECT_EQ(KernelStrToBool(t), std::optional<bool>(true)) << t;
  }
  for (const char* t : {"0", "n", "N", "no", "off", "OFF", "of", "nonsense"}) {
    EXPECT_EQ(KernelStrToBool(t), std::optional<bool>(false)) << t;
  }
  for (const char* t : {"", "o", "ox", "2", "true", "false", "garbage", " 1"}) {
    EXPECT_EQ(KernelStrToBool(t), std::nullopt) << t;
  }
}

TEST(ParseCmdline, SplitsQuotesAndStopsAtDoubleDash) {
  auto params = ParseCmdline("  root=/dev/vda1 ro dyndbg=\"file a.c +p\" x==y -- init=ignored\n");
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].name, "root");
  EXPECT_EQ(params[0].value, std::optional<std::string>("/dev/vda1"));
  EXPECT_EQ(params[1].name, "ro");
  EXPECT_EQ(params[1].value, std::nullopt);
  EXPECT_EQ(params[2].name, "dyndbg");
  EXPECT_EQ(params[2].value, std::optional<std::string>("file a.c +p"));
  EXPECT_EQ(params[3].name, "x");
  EXPECT_EQ(params[3].value, std::optional<std::string>("=y"));
  EXPECT_TRUE(ParseCmdline("").empty());
  EXPECT_TRUE(ParseCmdline(" \n").empty());
}

// randomize_kstack_offset= through the whole capture: a temp root with this cmdline and a config
// where the feature is built; default given by `config_default`.
struct KstackCase {
  std::string cmdline;
  bool config_default;
  std::string state;
  bool effective;
};

TEST(ParseKstackCmdline, LastValidOccurrenceWinsDashEqualsUnderscore) {
  auto parse = [](const char* cmdline) { return ParseKstackCmdline(ParseCmdline(cmdline)); };
  EXPECT_EQ(parse("quiet").state, "default");
  EXPECT_EQ(parse("quiet").value, std::nullopt);
  EXPECT_EQ(parse("randomize_kstack_offset=on").state, "on");
  EXPECT_EQ(parse("randomize-kstack-offset=0").state, "off");
  EXPECT_EQ(parse("randomize-kstack-offset=0").value, false);
  // A malformed value is rejected and leaves the earlier valid one in place.
  EXPECT_EQ(parse("randomize_kstack_offset=y randomize_kstack_offset=maybe").state, "on");
  EXPECT_EQ(parse("randomize_kstack_offset=maybe").state, "invalid:maybe");
  EXPECT_EQ(parse("randomize_kstack_offset").state, "invalid:");
}

TEST(ParseCpuInfo, FirstBlockAndProcessorCount) {
  CpuInfo info = ParseCpuInfo(
      "processor\t: 0\nmodel name\t: CPU A \nflags\t\t: fpu pku\n\n"
      "processor\t: 1\nmodel name\t: CPU B\nno colon here\n");
  EXPECT_EQ(info.processors, 2);
  EXPECT_EQ(info.first.at("model name"), "CPU A");
  EXPECT_EQ(info.first.at("flags"), "fpu pku");
  EXPECT_EQ(info.first.count("no colon here"), 0u);
  EXPECT_EQ(ParseCpuInfo("").processors, 0);
}

TEST(CaptureEnvironment, RandomizeKstackOffsetCmdline) {
  const std::vector<KstackCase> cases = {
      {"quiet", true, "default", true},
      {"quiet", false, "default", false},
      {"randomize_kstack_offset=on", false, "on", true},
      {"randomize_kstack_offset=off", true, "off", false},
      {"randomize_kstack_offset=1", false, "on", true},
      {"randomize_kstack_offset=0", true, "off", false},
      {"randomize_kstack_offset=y", false, "on", true},
      {"randomize_kstack_offset=n", true, "off", false},
      {"randomize-kstack-offset=n", true, "off", false},  // parameq(): '-' == '_'
      // Malformed: kstrtobool fails, the static key keeps its config default.
      {"randomize_kstack_offset=garbage", false, "invalid:garbage", false},
      {"randomize_kstack_offset=garbage", true, "invalid:garbage", true},
      {"randomize_kstack_offset", true, "invalid:", true},
      // Early params run in order: the last valid one wins; a later malformed one changes nothing.
      {"randomize_kstack_offset=on randomize_kstack_offset=off", true, "off", false},
      {"randomize_kstack_offset=off randomize_kstack_offset=on", false, "on", true},
      {"randomize_kstack_offset=off randomize_kstack_offset=junk", true, "off", false},
      // After "--" the arguments belong to init.
      {"ro -- randomize_kstack_offset=on", false, "default", false},
  };
  for (const KstackCase& c : cases) {
    TempRoot root;
    root.Write("proc/cmdline", c.cmdline + "\n");
    root.Write("boot/config-6.9.0-t",
               std::string("CONFIG_RANDOMIZE_KSTACK_OFFSET=y\n") +
                   (c.config_default ? "CONFIG_RANDOMIZE_KSTACK_OFFSET_DEFAULT=y\n"
                                     : "# CONFIG_RANDOMIZE_KSTACK_OFFSET_DEFAULT is not set\n"));
    SysinfoOptions options;
    options.root = root.path();
    options.release = "6.9.0-t";
    Json env = CaptureEnvironment(options);
    EXPECT_EQ(env["kernel"]["release"], "6.9.0-t");
    EXPECT_EQ(env["config"]["source"], "/boot/config-6.9.0-t");
    EXPECT_EQ(env["kernel"]["randomize_kstack_offset"], c.state) << c.cmdline;
    EXPECT_EQ(env["kernel"]["effective_kstack_randomization"], c.effective)
        << c.cmdline << " default=" << c.config_default;
  }
}

TEST(CaptureEnvironment, KstackOffsetNotBuiltIsOffWhateverTheCmdline) {
  TempRoot root;
  root.Write("proc/cmdline", "randomize_kstack_offset=on\n");
  root.Write("boot/config-6.9.0-t",
             "# CONFIG_RANDOMIZE_KSTACK_OFFSET is not set\n"
             "CONFIG_HAVE_ARCH_RANDOMIZE_KSTACK_OFFSET=y\n");
  SysinfoOptions options;
  options.root = root.path();
  options.release = "6.9.0-t";
  Json env = CaptureEnvironment(options);
  EXPECT_EQ(env["kernel"]["randomize_kstack_offset"], "on");
  EXPECT_EQ(env["kernel"]["effective_kstack_randomization"], false);
}

TEST(CaptureEnvironment, KstackOffsetUnknownConfig) {
  TempRoot root;
  root.Write("proc/cmdline", "randomize_kstack_offset=on\n");
  SysinfoOptions options;
  options.root = root.path();
  options.release = "6.9.0-t";
  Json env = CaptureEnvironment(options);
  EXPECT_TRUE(env["kernel"]["effective_kstack_randomization"].is_null());  // built? unknown
  root.Write("proc/cmdline", "randomize_kstack_offset=off\n");
  env = CaptureEnvironment(options);
  EXPECT_EQ(env["kernel"]["effective_kstack_randomization"], false);  // off either way
}

// ---- .config parsing ----------------------------------------------------------------------------

TEST(ParseKernelConfig, ValuesAndNotSet) {
  auto cfg = ParseKernelConfig(
      "#\n# Linux/x86 Kernel Configuration\n#\n"
      "CONFIG_A=y\nCONFIG_B=m\nCONFIG_HZ=250\nCONFIG_S=\"a \\\"b\\\" \\\\c\"\n"
      "# CONFIG_C is not set\n"
      "CONFIG_CRLF=y\r\n"
      "# CONFIG_ lowercase words is not set\n"
      "config_lower=y\nCONFIG_BAD NAME=y\nCONFIG_EMPTY=\nCONFIG_UNTERMINATED=\"abc\n"
      "random text\n\x01\x02=\xff\n"
      "CONFIG_LAST=0x10");  // no trailing newline
  ASSERT_TRUE(cfg.has_value());
  Json expected = {{"CONFIG_A", "y"},           {"CONFIG_B", "m"}, {"CONFIG_HZ", "250"},
                   {"CONFIG_S", "a \"b\" \\c"}, {"CONFIG_C", "n"}, {"CONFIG_CRLF", "y"},
                   {"CONFIG_LAST", "0x10"}};
  EXPECT_EQ(*cfg, expected) << cfg->dump();
}

TEST(ParseKernelConfig, NoConfigLinesIsNullopt) {
  EXPECT_FALSE(ParseKernelConfig("").has_value());
  EXPECT_FALSE(ParseKernelConfig("hello\nworld=1\n").has_value());
  EXPECT_FALSE(ParseKernelConfig(std::string("\x1f\x8b\x08\x00junk", 8)).has_value());
}

TEST(GunzipString, RoundTripAndTruncation) {
  std::ifstream in(kData + "x86_vm_gz/proc/config.gz", std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(gz.size(), 20u);
  auto text = GunzipString(gz);
  ASSERT_TRUE(text.has_value());
  EXPECT_NE(text->find("CONFIG_KSTACK_ERASE=y\n"), std::string::npos);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{10}, gz.size() / 2, gz.size() - 1}) {
    EXPECT_FALSE(GunzipString(std::string_view(gz).substr(0, cut)).has_value()) << cut;
  }
  EXPECT_FALSE(GunzipString("plain text, not gzip").has_value());
}

// ---- fixture trees ------------------------------------------------------------------------------

TEST(CaptureEnvironment, X86VmWithConfigGz) {
  Json env = Capture("x86_vm_gz");
  const Json& k = env["kernel"];
  EXPECT_EQ(k["release"], "6.18.0-kstacklab-vm");
  EXPECT_EQ(k["version"], "#1 SMP PREEMPT_DYNAMIC Sat Nov 29 12:00:00 UTC 2026");
  EXPECT_EQ(k["machine"], "x86_64");
  EXPECT_EQ(k["cmdline"],
            "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro preempt=full "
            "randomize_kstack_offset=off quiet -- randomize_kstack_offset=on");
  EXPECT_EQ(k["randomize_kstack_offset"], "off");  // the "=on" after "--" is init's
  EXPECT_EQ(k["effective_kstack_randomization"], false);

  const Json& c = env["config"];
  EXPECT_EQ(c["source"], "/proc/config.gz");
  EXPECT_EQ(c["options"]["CONFIG_RANDOMIZE_KSTACK_OFFSET"], "y");
  EXPECT_EQ(c["options"]["CONFIG_RANDOMIZE_KSTACK_OFFSET_DEFAULT"], "y");
  EXPECT_EQ(c["options"]["CONFIG_KSTACK_ERASE"], "y");
  EXPECT_EQ(c["options"]["CONFIG_KSTACK_ERASE_RUNTIME_DISABLE"], "y");
  EXPECT_EQ(c["options"]["CONFIG_KSTACK_ERASE_METRICS"], "n");
  EXPECT_EQ(c["options"]["CONFIG_GCC_PLUGIN_STACKLEAK"], "n");  // absent -> n
  EXPECT_EQ(c["options"]["CONFIG_INIT_STACK_ALL_ZERO"], "y");
  EXPECT_EQ(c["options"]["CONFIG_STACKPROTECTOR_STRONG"], "y");
  EXPECT_EQ(c["options"]["CONFIG_HZ"], "1000");
  EXPECT_FALSE(c["options"].contains("CONFIG_LKDTM"));  // only the documented options
  EXPECT_EQ(c["kstack_erase_built"], true);
  EXPECT_EQ(c["preemption"], "dynamic(full)");  // preempt=full on the cmdline
  EXPECT_EQ(c["hz"], 1000);

  EXPECT_EQ(env["sysctl"]["kernel.stack_erasing"], 1);

  const Json& cpu = env["cpu"];
  EXPECT_EQ(cpu["model"], "AMD EPYC 7B13");
  EXPECT_EQ(cpu["vendor"], "AuthenticAMD");
  EXPECT_EQ(cpu["family"], 25);  // Zen 3
  EXPECT_EQ(cpu["model_id"], 1);
  EXPECT_EQ(cpu["stepping"], 1);
  EXPECT_EQ(cpu["microcode"], "0xa0011d1");
  EXPECT_EQ(cpu["count_online"], 4);
  Json flags = {{"constant_tsc", true}, {"nonstop_tsc", true}, {"tsc_known_freq", true},
                {"pku", true},          {"ospke", true},       {"hypervisor", true}};
  EXPECT_EQ(cpu["flags"], flags);
  EXPECT_TRUE(cpu["arm64"].is_null()) << cpu["arm64"].dump();
  EXPECT_EQ(cpu["smt"], "on");
  EXPECT_EQ(cpu["smt_active"], true);
  EXPECT_EQ(cpu["governor"], "schedutil");
  EXPECT_EQ(cpu["cpufreq_driver"], "acpi-cpufreq");
  EXPECT_EQ(cpu["clocksource"], "kvm-clock");
  EXPECT_EQ(cpu["clocksources_available"], "kvm-clock tsc hpet acpi_pm");

  Json vulns = Json::object();
  vulns["meltdown"] = "Not affected";
  vulns["spec_store_bypass"] = "Mitigation: Speculative Store Bypass disabled via prctl";
  vulns["spectre_v2"] = "Mitigation: Retpolines; IBPB: conditional; STIBP: always-on; RSB filling";
  EXPECT_EQ(env["vulnerabilities"], vulns);  // sorted by file name

  const Json& v = env["virtualization"];
  EXPECT_EQ(v["hypervisor_flag"], true);
  EXPECT_EQ(v["dmi_sys_vendor"], "QEMU");
  EXPECT_EQ(v["dmi_product_name"], "Standard PC (Q35 + ICH9, 2009)");
  EXPECT_EQ(v["is_vm"], true);

  EXPECT_EQ(env["tool"]["version"], KSTACKLAB_VERSION);
  EXPECT_EQ(env["tool"]["build_type"], KSTACKLAB_BUILD_TYPE);
  EXPECT_EQ(env["problems"], Json::array()) << env["problems"].dump();

  // The stable top-level key order.
  std::vector<std::string> keys;
  for (auto it = env.begin(); it != env.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"kernel", "config", "sysctl", "cpu", "vulnerabilities",
                                            "virtualization", "tool", "problems"}));

  std::vector<std::string> codes = WarningCodes(env);
  codes.erase(std::remove(codes.begin(), codes.end(), "debug-build"), codes.end());
  EXPECT_EQ(codes, (std::vector<std::string>{"vm", "clocksource", "governor", "smt"}));
}

// tests/data/sysinfo/arm64_neoverse_v1: written in the layout of arm64 Linux 6.1's /proc/cpuinfo
// (arch/arm64/kernel/cpuinfo.c c_show) for a Neoverse-V1 (implementer 0x41, part 0xd40), as on a
// Graviton3; its Features line has paca/pacg and no bti, so each answer is tested. Runs the same
// on x86-64 and aarch64: a captured tree is never this process's own machine.
TEST(CaptureEnvironment, Arm64CpuinfoHasFeaturesNotFlags) {
  Json env = Capture("arm64_neoverse_v1");
  EXPECT_EQ(env["kernel"]["machine"], "aarch64");
  const Json& cpu = env["cpu"];
  EXPECT_EQ(cpu["model"], "Arm Neoverse-V1");
  EXPECT_TRUE(cpu["vendor"].is_null());
  EXPECT_TRUE(cpu["family"].is_null());
  EXPECT_EQ(cpu["count_online"], 2);
  for (const auto& [flag, value] : cpu["flags"].items()) {
    EXPECT_TRUE(value.is_null()) << flag << " is " << value.dump() << ": arm64 has no flags line";
  }
  const Json& arm = cpu["arm64"];
  ASSERT_TRUE(arm.is_object()) << arm.dump();
  EXPECT_EQ(arm["implementer"], "0x41");
  EXPECT_EQ(arm["part"], "0xd40");
  EXPECT_EQ(arm["core"], "Arm Neoverse-V1");
  EXPECT_EQ(arm["variant"], "0x1");
  EXPECT_EQ(arm["revision"], 1);
  ASSERT_TRUE(arm["features"].is_array());
  EXPECT_EQ(arm["features"].size(), 38u);
  EXPECT_EQ(arm["features"].front(), "fp");
  EXPECT_EQ(arm["features"].back(), "rng");
  EXPECT_EQ(arm["pac"], true);
  EXPECT_EQ(arm["bti"], false);
  EXPECT_TRUE(arm["counter_freq_hz"].is_null());  // only read on the machine itself
  EXPECT_EQ(cpu["clocksource"], "arch_sys_counter");
  EXPECT_EQ(env["config"]["source"], "/boot/config-6.1.0-27-cloud-arm64");
  EXPECT_EQ(env["config"]["options"]["CONFIG_RANDOMIZE_KSTACK_OFFSET"], "y");
  EXPECT_EQ(env["kernel"]["randomize_kstack_offset"], "on");  // the cmdline's, over the default
  EXPECT_TRUE(env["virtualization"]["hypervisor_flag"].is_null());
  EXPECT_EQ(env["problems"], Json::array()) << env["problems"].dump();
  // No x86 warning (TSC, clocksource) for an arm64 machine.
  std::vector<std::string> codes = WarningCodes(env);
  codes.erase(std::remove(codes.begin(), codes.end(), "debug-build"), codes.end());
  EXPECT_EQ(codes, std::vector<std::string>{}) << ::testing::PrintToString(codes);
}

// An unknown part keeps the numbers as the model; a Features line without paca says no PAC.
TEST(CaptureEnvironment, Arm64UnknownPartAndNoPac) {
  const std::string root = ::testing::TempDir() + "/kstacklab_arm64_unknown";
  std::filesystem::create_directories(root + "/proc");
  std::ofstream(root + "/proc/cpuinfo") << "processor\t: 0\nFeatures\t: fp asimd bti\n"
                                           "CPU implementer\t: 0x61\nCPU part\t: 0x022\n";
  SysinfoOptions options;
  options.root = root;
  Json cpu = CaptureEnvironment(options)["cpu"];
  EXPECT_EQ(cpu["model"], "implementer 0x61 part 0x022");
  EXPECT_TRUE(cpu["arm64"]["core"].is_null());
  EXPECT_TRUE(cpu["arm64"]["revision"].is_null());
  EXPECT_EQ(cpu["arm64"]["pac"], false);
  EXPECT_EQ(cpu["arm64"]["bti"], true);
  std::filesystem::remove_all(root);
}

#if defined(__aarch64__)
// This process's own machine: the counter frequency and PAC/BTI come from the CPU and the kernel
// (CNTFRQ_EL0, getauxval), whatever /proc/cpuinfo says (under qemu-user it is the host's).
TEST(CaptureEnvironment, Arm64OwnMachineReadsCounterFrequency) {
  Json arm = CaptureEnvironment(SysinfoOptions{})["cpu"]["arm64"];
  ASSERT_TRUE(arm.is_object()) << arm.dump();
  ASSERT_TRUE(arm["counter_freq_hz"].is_number_unsigned()) << arm.dump();
  EXPECT_GT(arm["counter_freq_hz"].get<uint64_t>(), 1000000u);
  EXPECT_TRUE(arm["pac"].is_boolean());
  EXPECT_TRUE(arm["bti"].is_boolean());
}
#endif

TEST(CaptureEnvironment, BareMetalOldConfigInBoot) {
  Json env = Capture("bare_boot");
  EXPECT_EQ(env["kernel"]["release"], "5.15.0-bare");
  EXPECT_TRUE(env["kernel"]["machine"].is_null());  // no arch file, no uname under a fixture
  EXPECT_TRUE(env["kernel"]["banner"].is_null());
  EXPECT_EQ(env["config"]["source"], "/boot/config-5.15.0-bare");
  // Pre-5.19: no CONFIG_RANDOMIZE_KSTACK_OFFSET; built because the arch has it, default off,
  // switched on by randomize_kstack_offset=1.
  EXPECT_EQ(env["config"]["options"]["CONFIG_RANDOMIZE_KSTACK_OFFSET"], "n");
  EXPECT_EQ(env["config"]["options"]["CONFIG_RANDOMIZE_KSTACK_OFFSET_DEFAULT"], "n");
  EXPECT_EQ(env["kernel"]["randomize_kstack_offset"], "on");
  EXPECT_EQ(env["kernel"]["effective_kstack_randomization"], true);
  EXPECT_EQ(env["config"]["options"]["CONFIG_GCC_PLUGIN_STACKLEAK"], "y");
  EXPECT_EQ(env["config"]["options"]["CONFIG_STACKLEAK_RUNTIME_DISABLE"], "n");
  EXPECT_EQ(env["config"]["kstack_erase_built"], true);
  EXPECT_EQ(env["config"]["preemption"], "voluntary");
  EXPECT_EQ(env["config"]["hz"], 250);
  EXPECT_TRUE(env["sysctl"]["kernel.stack_erasing"].is_null());  // absent: no RUNTIME_DISABLE
  EXPECT_EQ(env["cpu"]["count_online"], 2);
  EXPECT_TRUE(env["cpu"]["vendor"] == "GenuineIntel");
  EXPECT_TRUE(env["cpu"]["family"].is_null());  // this cpuinfo has no "cpu family" line
  EXPECT_EQ(env["cpu"]["flags"]["constant_tsc"], true);
  EXPECT_EQ(env["cpu"]["flags"]["nonstop_tsc"], false);
  EXPECT_EQ(env["cpu"]["flags"]["hypervisor"], false);
  EXPECT_EQ(env["cpu"]["smt"], "notsupported");
  EXPECT_EQ(env["cpu"]["smt_active"], false);
  EXPECT_TRUE(env["vulnerabilities"].is_null());
  EXPECT_EQ(env["virtualization"]["is_vm"], false);
  EXPECT_EQ(env["virtualization"]["dmi_sys_vendor"], "Dell Inc.");
  EXPECT_EQ(env["problems"], Json::array()) << env["problems"].dump();

  std::vector<EnvWarning> warnings = EnvironmentWarnings(env);
  ASSERT_FALSE(warnings.empty());
  EXPECT_EQ(warnings[0].code, "tsc-not-invariant");
  EXPECT_NE(warnings[0].message.find("nonstop_tsc"), std::string::npos);
  EXPECT_EQ(warnings[0].message.find("constant_tsc"), std::string::npos);
  EXPECT_FALSE(warnings[0].remedy.empty());
  std::vector<std::string> codes = WarningCodes(env);
  codes.erase(std::remove(codes.begin(), codes.end(), "debug-build"), codes.end());
  EXPECT_EQ(codes, (std::vector<std::string>{"tsc-not-invariant"}));  // governor is performance
}

TEST(CaptureEnvironment, GarbledFilesGiveNullsAndProblems) {
  Json env = Capture("garbled");
  EXPECT_EQ(env["kernel"]["release"], "6.1.0-garbled");
  EXPECT_EQ(env["kernel"]["randomize_kstack_offset"], "invalid:garbage");
  EXPECT_TRUE(env["kernel"]["effective_kstack_randomization"].is_null());
  EXPECT_TRUE(env["config"]["source"].is_null());
  EXPECT_TRUE(env["config"]["options"]["CONFIG_RANDOMIZE_KSTACK_OFFSET"].is_null());
  EXPECT_TRUE(env["config"]["preemption"].is_null());
  EXPECT_TRUE(env["config"]["hz"].is_null());
  EXPECT_TRUE(env["sysctl"]["kernel.stack_erasing"].is_null());
  EXPECT_TRUE(env["cpu"]["model"].is_null());
  EXPECT_TRUE(env["cpu"]["family"].is_null());
  EXPECT_TRUE(env["cpu"]["model_id"].is_null());
  EXPECT_TRUE(env["cpu"]["microcode"].is_null());
  EXPECT_TRUE(env["cpu"]["count_online"].is_null());
  EXPECT_TRUE(env["cpu"]["flags"]["constant_tsc"].is_null());
  EXPECT_TRUE(env["cpu"]["smt"].is_null());
  EXPECT_TRUE(env["cpu"]["clocksource"].is_null());
  EXPECT_TRUE(env["virtualization"]["is_vm"].is_null());
  EXPECT_TRUE(HasProblemContaining(env, "/proc/config.gz is not a valid gzip stream"));
  EXPECT_TRUE(HasProblemContaining(env, "/boot/config-6.1.0-garbled holds no CONFIG_ lines"));
  EXPECT_TRUE(HasProblemContaining(env, "kernel config not found"));
  EXPECT_TRUE(HasProblemContaining(env, "stack_erasing is neither 0 nor 1"));
  EXPECT_TRUE(HasProblemContaining(env, "/proc/cpuinfo has no"));
  EXPECT_TRUE(HasProblemContaining(env, "smt/control holds non-text bytes"));
  EXPECT_TRUE(HasProblemContaining(env, "current_clocksource holds non-text bytes"));
  EXPECT_TRUE(HasProblemContaining(env, "cpu/online is not a CPU list"));
  std::vector<std::string> codes = WarningCodes(env);
  codes.erase(std::remove(codes.begin(), codes.end(), "debug-build"), codes.end());
  EXPECT_TRUE(codes.empty());  // unknown never warns
  EXPECT_FALSE(EnvironmentSummary(env).empty());
}

TEST(CaptureEnvironment, EmptyRootIsAllUnknown) {
  Json env = Capture("empty");
  EXPECT_TRUE(env["kernel"]["release"].is_null());
  EXPECT_TRUE(env["kernel"]["cmdline"].is_null());
  EXPECT_TRUE(env["kernel"]["randomize_kstack_offset"].is_null());
  EXPECT_TRUE(env["kernel"]["effective_kstack_randomization"].is_null());
  EXPECT_TRUE(env["config"]["source"].is_null());
  for (const auto& [name, value] : env["config"]["options"].items()) {
    EXPECT_TRUE(value.is_null()) << name;
  }
  EXPECT_TRUE(env["sysctl"]["kernel.stack_erasing"].is_null());
  EXPECT_TRUE(env["cpu"]["flags"]["hypervisor"].is_null());
  EXPECT_TRUE(env["cpu"]["governor"].is_null());
  EXPECT_TRUE(env["vulnerabilities"].is_null());
  EXPECT_TRUE(env["virtualization"]["is_vm"].is_null());
  ASSERT_EQ(env["problems"].size(), 1u);  // only the missing config is worth saying
  EXPECT_TRUE(HasProblemContaining(env,
                                   "kernel config not found (/proc/config.gz, "
                                   "/boot/config-<release>)"));
  // A root that does not exist at all behaves the same, never fails.
  SysinfoOptions options;
  options.root = kData + "does-not-exist";
  EXPECT_EQ(CaptureEnvironment(options)["kernel"], env["kernel"]);
}

TEST(CaptureEnvironment, ReleaseOverrideSelectsBootConfig) {
  SysinfoOptions options;
  options.root = kData + "bare_boot";
  options.release = "9.9.9-other";
  Json env = CaptureEnvironment(options);
  EXPECT_EQ(env["kernel"]["release"], "9.9.9-other");
  EXPECT_TRUE(env["config"]["source"].is_null());
  EXPECT_TRUE(HasProblemContaining(env, "/boot/config-9.9.9-other"));
}

TEST(CaptureEnvironment, StackErasingZeroAndPreemptionModels) {
  TempRoot root;
  root.Write("proc/sys/kernel/stack_erasing", "0\n");
  root.Write("boot/config-t", "CONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT=y\n");
  SysinfoOptions options;
  options.root = root.path();
  options.release = "t";
  Json env = CaptureEnvironment(options);
  EXPECT_EQ(env["sysctl"]["kernel.stack_erasing"], 0);
  EXPECT_EQ(env["config"]["preemption"], "rt");
  root.Write("boot/config-t", "CONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\n");
  EXPECT_EQ(CaptureEnvironment(options)["config"]["preemption"], "dynamic(none)");
  // debugfs shows the live mode in parentheses and wins over the cmdline.
  root.Write("proc/cmdline", "preempt=full\n");
  EXPECT_EQ(CaptureEnvironment(options)["config"]["preemption"], "dynamic(full)");
  root.Write("sys/kernel/debug/sched/preempt", "none voluntary full (lazy)\n");
  EXPECT_EQ(CaptureEnvironment(options)["config"]["preemption"], "dynamic(lazy)");
  root.Write("boot/config-t", "CONFIG_PREEMPT_LAZY=y\n");
  EXPECT_EQ(CaptureEnvironment(options)["config"]["preemption"], "lazy");
}

TEST(SysinfoText, DecimalNumberTakesOnlyAWholePlainDecimal) {
  using sysinfo_text::DecimalNumber;
  EXPECT_EQ(DecimalNumber("250"), 250u);
  EXPECT_EQ(DecimalNumber("0"), 0u);
  EXPECT_EQ(DecimalNumber("18446744073709551615"), UINT64_MAX);
  for (const char* bad : {"", " 1", "1 ", "+1", "-1", "0x19", "1a", "18446744073709551616"}) {
    EXPECT_EQ(DecimalNumber(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(CaptureEnvironment, CpuSignatureIsDecimalOrNull) {
  TempRoot root;
  root.Write("proc/cpuinfo",
             "processor\t: 0\ncpu family\t: 0x19\nmodel\t\t: 1a\nstepping\t: -1\n"
             "microcode\t: 0xffffffff\n");
  SysinfoOptions options;
  options.root = root.path();
  Json cpu = CaptureEnvironment(options)["cpu"];
  EXPECT_TRUE(cpu["family"].is_null()) << cpu["family"];  // cpuinfo prints decimal: refused
  EXPECT_TRUE(cpu["model_id"].is_null()) << cpu["model_id"];
  EXPECT_TRUE(cpu["stepping"].is_null()) << cpu["stepping"];
  EXPECT_EQ(cpu["microcode"], "0xffffffff");  // kept as the kernel prints it
  root.Write("proc/cpuinfo", "processor\t: 0\ncpu family\t: 6\nmodel\t\t: 143\nstepping\t: 8\n");
  cpu = CaptureEnvironment(options)["cpu"];
  EXPECT_EQ(cpu["family"], 6);  // Intel Sapphire Rapids
  EXPECT_EQ(cpu["model_id"], 143);
  EXPECT_EQ(cpu["stepping"], 8);
  EXPECT_TRUE(cpu["microcode"].is_null());
}

TEST(CaptureEnvironment, CpuListsAndVmByDmiOnly) {
  TempRoot root;
  root.Write("sys/devices/system/cpu/online", "0-3,6,8-9\n");
  root.Write("sys/class/dmi/id/sys_vendor", "Microsoft Corporation\n");
  root.Write("sys/class/dmi/id/product_name", "Virtual Machine\n");
  SysinfoOptions options;
  options.root = root.path();
  Json env = CaptureEnvironment(options);
  EXPECT_EQ(env["cpu"]["count_online"], 7);
  EXPECT_TRUE(env["virtualization"]["hypervisor_flag"].is_null());  // no cpuinfo
  EXPECT_EQ(env["virtualization"]["is_vm"], true);
  std::vector<EnvWarning> w = EnvironmentWarnings(env);
  ASSERT_FALSE(w.empty());
  EXPECT_EQ(w[0].code, "vm");
  EXPECT_EQ(w[0].message, "running in a virtual machine (Microsoft Corporation)");
  EXPECT_EQ(w[0].remedy,
            "results include virtualisation overhead; compare only runs from the same host");
}

// ---- warnings and summary on hand-made captures -------------------------------------------------

TEST(EnvironmentWarnings, EachCodeAndRemedy) {
  Json env = {
      {"cpu",
       {{"flags", {{"constant_tsc", false}, {"nonstop_tsc", false}}},
        {"clocksource", "hpet"},
        {"governor", "powersave"},
        {"smt_active", true}}},
      {"virtualization", {{"is_vm", true}, {"dmi_sys_vendor", nullptr}}},
      {"tool", {{"build_type", "Debug+sanitize"}}},
  };
  std::vector<EnvWarning> w = EnvironmentWarnings(env);
  ASSERT_EQ(w.size(), 6u);
  EXPECT_EQ(w[0].code, "vm");
  EXPECT_EQ(w[0].message, "running in a virtual machine");
  EXPECT_EQ(w[1].code, "tsc-not-invariant");
  EXPECT_NE(w[1].message.find("constant_tsc, nonstop_tsc"), std::string::npos);
  EXPECT_EQ(w[2].code, "clocksource");
  EXPECT_NE(w[2].message.find("'hpet'"), std::string::npos);
  EXPECT_EQ(w[3].code, "governor");
  EXPECT_EQ(w[3].remedy, "cpupower frequency-set -g performance (and restore it afterwards)");
  EXPECT_EQ(w[4].code, "smt");
  EXPECT_EQ(w[5].code, "debug-build");
  for (const EnvWarning& x : w) EXPECT_FALSE(x.remedy.empty()) << x.code;

  EXPECT_TRUE(EnvironmentWarnings(Json::object()).empty());
  EXPECT_TRUE(EnvironmentWarnings(Json(nullptr)).empty());
  EXPECT_TRUE(EnvironmentWarnings(Json{{"cpu", 3}, {"tool", "x"}}).empty());  // wrong shapes
  Json release = {{"tool", {{"build_type", "Release"}}}, {"cpu", {{"governor", "performance"}}}};
  EXPECT_TRUE(EnvironmentWarnings(release).empty());
}

// The clocksource remedy depends on whether the kernel offers the TSC: a guest listing only its
// paravirtual clock cannot switch, and is told so instead of a boot option that does nothing.
TEST(EnvironmentWarnings, ClocksourceRemedyFollowsWhatTheKernelOffers) {
  auto remedy = [](const char* available) {
    Json env = {{"cpu",
                 {{"flags", {{"constant_tsc", true}, {"nonstop_tsc", true}}},
                  {"clocksource", "kvm-clock"},
                  {"clocksources_available", available}}}};
    for (const EnvWarning& w : EnvironmentWarnings(env)) {
      if (w.code == "clocksource") return w.remedy;
    }
    return std::string("(no clocksource warning)");
  };
  EXPECT_NE(remedy("kvm-clock tsc hpet").find("write tsc to"), std::string::npos);
  const std::string only_pv = remedy("kvm-clock");
  EXPECT_NE(only_pv.find("offers no TSC clocksource here (available: kvm-clock)"),
            std::string::npos)
      << only_pv;
  EXPECT_EQ(only_pv.find("tsc=reliable"), std::string::npos) << only_pv;
}

TEST(EnvironmentSummary, GroupedAlignedLines) {
  Json env = Capture("x86_vm_gz");
  std::string text = EnvironmentSummary(env);
  EXPECT_NE(text.find("kernel:\n  release:"), std::string::npos) << text;
  EXPECT_NE(text.find("config (/proc/config.gz):\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  CONFIG_KSTACK_ERASE:"), std::string::npos) << text;
  EXPECT_NE(text.find("  flags.hypervisor:"), std::string::npos) << text;
  EXPECT_NE(text.find("[vm] running in a virtual machine (QEMU)\n    remedy: "), std::string::npos);
  EXPECT_NE(text.find("problems:\n  (none)\n"), std::string::npos);
  // Values in a group start in one column.
  size_t a = text.find("  release:"), b = text.find("  version:");
  size_t va = text.find("6.18.0-kstacklab-vm", a), vb = text.find("#1 SMP", b);
  EXPECT_EQ(va - a, vb - b);
}

TEST(EnvironmentSummary, AStackErasingSysctlOfAKernelWithoutItSaysNotBuilt) {
  Json env = Capture("x86_vm_gz");
  env["sysctl"]["kernel.stack_erasing"] = nullptr;
  env["config"]["kstack_erase_built"] = false;
  std::string text = EnvironmentSummary(env);
  EXPECT_NE(text.find("  kernel.stack_erasing:  not built\n"), std::string::npos) << text;
  // Built but unreadable (not root): unknown, not "not built".
  env["config"]["kstack_erase_built"] = true;
  text = EnvironmentSummary(env);
  EXPECT_NE(text.find("  kernel.stack_erasing:  ?\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("not built"), std::string::npos) << text;
}

}  // namespace
}  // namespace kstacklab::sysinfo
