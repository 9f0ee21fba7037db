// CaptureEnvironment(): reads procfs/sysfs/boot files under a root prefix. Never fails: what is
// missing is null; what is present but unreadable or garbled is null plus a "problems" entry.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/utsname.h>
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "kstacklab/common/cpu_list.h"
#include "kstacklab/sysinfo/sysinfo.h"
#include "text.h"

namespace kstacklab::sysinfo {

SysinfoOptions SysinfoOptionsFromEnvironment() {
  SysinfoOptions options;
  const char* root = std::getenv(kSysrootEnvVar);
  if (root != nullptr && root[0] != '\0') options.root = root;
  return options;
}

namespace {

using sysinfo_text::Trim;

constexpr size_t kMaxFileBytes = size_t{16} << 20;

// The stack-hardening options recorded in config.options, in this order. Absent from a readable
// config means "n" (Kconfig semantics: the option does not exist or its dependencies are unmet).
const std::vector<std::string>& RecordedOptions() {
  static const std::vector<std::string> k = {
      "CONFIG_HAVE_ARCH_RANDOMIZE_KSTACK_OFFSET",
      "CONFIG_RANDOMIZE_KSTACK_OFFSET",
      "CONFIG_RANDOMIZE_KSTACK_OFFSET_DEFAULT",
      "CONFIG_KSTACK_ERASE",
      "CONFIG_KSTACK_ERASE_RUNTIME_DISABLE",
      "CONFIG_KSTACK_ERASE_METRICS",
      "CONFIG_GCC_PLUGIN_STACKLEAK",
      "CONFIG_STACKLEAK_RUNTIME_DISABLE",
      "CONFIG_STACKLEAK_METRICS",
      "CONFIG_STACKPROTECTOR",
      "CONFIG_STACKPROTECTOR_STRONG",
      "CONFIG_INIT_STACK_NONE",
      "CONFIG_INIT_STACK_ALL_PATTERN",
      "CONFIG_INIT_STACK_ALL_ZERO",
      "CONFIG_VMAP_STACK",
      "CONFIG_PREEMPT_NONE",
      "CONFIG_PREEMPT_VOLUNTARY",
      "CONFIG_PREEMPT",
      "CONFIG_PREEMPT_LAZY",
      "CONFIG_PREEMPT_RT",
      "CONFIG_PREEMPT_DYNAMIC",
      "CONFIG_HZ",
  };
  return k;
}

enum class ReadStatus { kOk, kMissing, kDenied, kError };

struct ReadOutcome {
  ReadStatus status = ReadStatus::kMissing;
  std::string text;
  std::string error;  // strerror text when status is kDenied/kError
};

class Reader {
 public:
  explicit Reader(std::string root) : root_(std::move(root)) {}

  std::string Path(const std::string& rel) const {
    return (std::filesystem::path(root_) / rel).string();
  }

  // Reads a whole file (procfs files report size 0, so read until EOF), at most kMaxFileBytes.
  ReadOutcome Read(const std::string& rel) const {
    ReadOutcome out;
    int fd = ::open(Path(rel).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      out.status = (errno == ENOENT || errno == ENOTDIR) ? ReadStatus::kMissing
                   : (errno == EACCES || errno == EPERM) ? ReadStatus::kDenied
                                                         : ReadStatus::kError;
      out.error = std::strerror(errno);
      return out;
    }
    char buf[8192];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        out.status = (errno == EACCES || errno == EPERM) ? ReadStatus::kDenied : ReadStatus::kError;
        out.error = std::strerror(errno);
        ::close(fd);
        return out;
      }
      if (n == 0) break;
      out.text.append(buf, static_cast<size_t>(n));
      if (out.text.size() > kMaxFileBytes) {
        out.status = ReadStatus::kError;
        out.error = "file larger than 16 MiB";
        ::close(fd);
        return out;
      }
    }
    ::close(fd);
    out.status = ReadStatus::kOk;
    return out;
  }

  // A one-line text value (sysfs/procfs attribute): trimmed. Missing -> nullopt silently;
  // unreadable or non-printable -> nullopt + problem.
  std::optional<std::string> Line(const std::string& rel) {
    ReadOutcome r = Read(rel);
    if (r.status == ReadStatus::kMissing) return std::nullopt;
    if (r.status != ReadStatus::kOk) {
      Problem(fmt::format("cannot read /{}: {}", rel, r.error));
      return std::nullopt;
    }
    std::string s = Trim(r.text);
    for (char c : s) {
      if (!std::isprint(static_cast<unsigned char>(c)) && c != '\t' && c != '\n') {
        Problem(fmt::format("/{} holds non-text bytes; ignored", rel));
        return std::nullopt;
      }
    }
    return s;
  }

  std::vector<std::string> ListDir(const std::string& rel) const {
    std::vector<std::string> names;
    std::error_code ec;
    std::filesystem::directory_iterator it(Path(rel), ec);
    if (ec) return names;
    for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      names.push_back(it->path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  void Problem(std::string text) { problems_.push_back(std::move(text)); }
  const std::vector<std::string>& problems() const { return problems_; }
  bool is_real_root() const {
    std::error_code ec;
    return std::filesystem::equivalent(root_, "/", ec);
  }

 private:
  std::string root_;
  std::vector<std::string> problems_;
};

Json OrNull(const std::optional<std::string>& v) { return v ? Json(*v) : Json(nullptr); }

// ---- kernel -------------------------------------------------------------------------------------

struct KernelIdentity {
  std::optional<std::string> release, version, machine;
};

KernelIdentity ReadIdentity(const SysinfoOptions& options, Reader& reader) {
  KernelIdentity id;
  id.release = options.release.empty() ? reader.Line("proc/sys/kernel/osrelease")
                                       : std::optional<std::string>(options.release);
  id.version = options.version.empty() ? reader.Line("proc/sys/kernel/version")
                                       : std::optional<std::string>(options.version);
  id.machine = options.machine.empty() ? reader.Line("proc/sys/kernel/arch")
                                       : std::optional<std::string>(options.machine);
  if ((!id.release || !id.version || !id.machine) && reader.is_real_root()) {
    struct utsname u;
    if (::uname(&u) == 0) {
      if (!id.release) id.release = u.release;
      if (!id.version) id.version = u.version;
      if (!id.machine) id.machine = u.machine;
    }
  }
  return id;
}

std::optional<std::string> LastParamValue(const std::vector<CmdlineParam>& params,
                                          const std::string& wanted) {
  std::optional<std::string> v;
  for (const CmdlineParam& p : params) {
    if (p.name == wanted && p.value) v = p.value;
  }
  return v;
}

// ---- config -------------------------------------------------------------------------------------

struct ConfigCapture {
  std::optional<std::string> source;
  std::optional<Json> all;  // every option of the config; nullopt when unreadable
};

ConfigCapture ReadConfig(const std::optional<std::string>& release, Reader& reader) {
  ConfigCapture out;
  ReadOutcome gz = reader.Read("proc/config.gz");
  if (gz.status == ReadStatus::kOk) {
    std::optional<std::string> text = GunzipString(gz.text);
    std::optional<Json> parsed = text ? ParseKernelConfig(*text) : std::nullopt;
    if (parsed) {
      out.source = "/proc/config.gz";
      out.all = std::move(parsed);
      return out;
    }
    reader.Problem(text ? "/proc/config.gz holds no CONFIG_ lines; ignored"
                        : "/proc/config.gz is not a valid gzip stream (corrupt or truncated)");
  } else if (gz.status != ReadStatus::kMissing) {
    reader.Problem(fmt::format("cannot read /proc/config.gz: {}", gz.error));
  }
  if (release) {
    std::string rel = "boot/config-" + *release;
    ReadOutcome plain = reader.Read(rel);
    if (plain.status == ReadStatus::kOk) {
      std::optional<Json> parsed = ParseKernelConfig(plain.text);
      if (parsed) {
        out.source = "/" + rel;
        out.all = std::move(parsed);
        return out;
      }
      reader.Problem(fmt::format("/{} holds no CONFIG_ lines; ignored", rel));
    } else if (plain.status != ReadStatus::kMissing) {
      reader.Problem(fmt::format("cannot read /{}: {}", rel, plain.error));
    }
  }
  if (!out.all) {
    reader.Problem(fmt::format(
        "kernel config not found (/proc/config.gz, /boot/config-{}): config fields are unknown; "
        "`modprobe configs` or install the kernel's config file",
        release.value_or("<release>")));
  }
  return out;
}

std::string OptionValue(const Json& all, const std::string& name) {
  auto it = all.find(name);
  return it == all.end() ? "n" : it->get<std::string>();
}

// The model of kernel/Kconfig.preempt. With PREEMPT_DYNAMIC the boot-time choice is preempt=
// (or, when readable, the live value in debugfs sched/preempt: "none (voluntary) full lazy").
Json Preemption(const Json& all, const std::vector<CmdlineParam>& params, Reader& reader) {
  auto y = [&](const char* name) { return OptionValue(all, name) == "y"; };
  if (y("CONFIG_PREEMPT_RT")) return "rt";
  std::string base = y("CONFIG_PREEMPT_LAZY")        ? "lazy"
                     : y("CONFIG_PREEMPT")           ? "full"
                     : y("CONFIG_PREEMPT_VOLUNTARY") ? "voluntary"
                     : y("CONFIG_PREEMPT_NONE")      ? "none"
                                                     : "";
  if (!y("CONFIG_PREEMPT_DYNAMIC")) return base.empty() ? Json(nullptr) : Json(base);
  std::string mode = base;
  ReadOutcome live = reader.Read("sys/kernel/debug/sched/preempt");
  size_t open = live.text.find('('), close = live.text.find(')');
  if (live.status == ReadStatus::kOk && open != std::string::npos && close != std::string::npos &&
      close > open) {
    mode = live.text.substr(open + 1, close - open - 1);
  } else if (auto v = LastParamValue(params, "preempt")) {
    mode = *v;
  }
  return fmt::format("dynamic({})", mode.empty() ? "?" : mode);
}

// ---- cpu ----------------------------------------------------------------------------------------

// DMI vendor/product strings of common hypervisors (systemd-detect-virt uses the same signal).
bool DmiLooksVirtual(const std::string& vendor, const std::string& product) {
  static const char* const kMarkers[] = {
      "QEMU",
      "KVM",
      "VMware",
      "VirtualBox",
      "innotek",
      "Xen",
      "Bochs",
      "Parallels",
      "Amazon EC2",
      "Google Compute Engine",
      "OpenStack",
      "Firecracker",
      "Cloud Hypervisor",
      "BHYVE",
      "Virtual Machine"};  // "Virtual Machine": Microsoft Hyper-V product name
  for (const char* m : kMarkers) {
    if (vendor.find(m) != std::string::npos || product.find(m) != std::string::npos) return true;
  }
  return false;
}

// ---- sections of the capture ---------------------------------------------------------------

// "kernel" and "config": both depend on the cmdline and the config (effective randomisation).
struct KernelAndConfig {
  Json kernel = Json::object();
  Json config = Json::object();
};

KernelAndConfig CaptureKernelAndConfig(const SysinfoOptions& options, Reader& reader) {
  KernelIdentity id = ReadIdentity(options, reader);
  std::optional<std::string> cmdline = reader.Line("proc/cmdline");
  std::vector<CmdlineParam> params = cmdline ? ParseCmdline(*cmdline) : std::vector<CmdlineParam>{};
  KstackCmdline kstack = ParseKstackCmdline(params);

  ConfigCapture config = ReadConfig(id.release, reader);
  Json options_json = Json::object();
  for (const std::string& name : RecordedOptions()) {
    options_json[name] = config.all ? Json(OptionValue(*config.all, name)) : Json(nullptr);
  }
  Json effective = nullptr;
  Json erase_built = nullptr;
  Json preemption = nullptr;
  Json hz = nullptr;
  if (config.all) {
    const Json& all = *config.all;
    // CONFIG_RANDOMIZE_KSTACK_OFFSET was added after v5.13 (around v5.18/v5.19, unverified);
    // before it, the feature was built whenever the arch had it (only _DEFAULT existed).
    bool built = all.contains("CONFIG_RANDOMIZE_KSTACK_OFFSET")
                     ? OptionValue(all, "CONFIG_RANDOMIZE_KSTACK_OFFSET") == "y"
                     : OptionValue(all, "CONFIG_HAVE_ARCH_RANDOMIZE_KSTACK_OFFSET") == "y";
    bool by_default = OptionValue(all, "CONFIG_RANDOMIZE_KSTACK_OFFSET_DEFAULT") == "y";
    if (!built) {
      effective = false;
    } else if (cmdline) {
      effective = kstack.value.value_or(by_default);
    }
    erase_built = OptionValue(all, "CONFIG_KSTACK_ERASE") == "y" ||
                  OptionValue(all, "CONFIG_GCC_PLUGIN_STACKLEAK") == "y";
    preemption = Preemption(all, params, reader);
    if (auto v = sysinfo_text::DecimalNumber(OptionValue(all, "CONFIG_HZ")); v && *v > 0) hz = *v;
  } else if (cmdline && kstack.value == false) {
    effective = false;  // off on the command line: off whether or not it is built
  }

  KernelAndConfig out;
  Json& kernel = out.kernel;
  kernel["release"] = OrNull(id.release);
  kernel["version"] = OrNull(id.version);
  kernel["machine"] = OrNull(id.machine);
  kernel["hostname"] = OrNull(reader.Line("proc/sys/kernel/hostname"));
  kernel["banner"] = OrNull(reader.Line("proc/version"));
  kernel["cmdline"] = OrNull(cmdline);
  kernel["randomize_kstack_offset"] = cmdline ? Json(kstack.state) : Json(nullptr);
  kernel["effective_kstack_randomization"] = effective;

  out.config["source"] = OrNull(config.source);
  out.config["options"] = std::move(options_json);
  out.config["kstack_erase_built"] = erase_built;
  out.config["preemption"] = preemption;
  out.config["hz"] = hz;
  return out;
}

// sysctl: kernel.stack_erasing exists only with *_RUNTIME_DISABLE; it is mode 0600.
Json CaptureSysctl(Reader& reader) {
  ReadOutcome r = reader.Read("proc/sys/kernel/stack_erasing");
  Json v = nullptr;
  if (r.status == ReadStatus::kOk) {
    std::string t = Trim(r.text);
    if (t == "0" || t == "1") {
      v = t == "1" ? 1 : 0;
    } else {
      reader.Problem("/proc/sys/kernel/stack_erasing is neither 0 nor 1; ignored");
    }
  } else if (r.status == ReadStatus::kDenied) {
    reader.Problem(
        "cannot read /proc/sys/kernel/stack_erasing (mode 0600): run as root to "
        "record kernel.stack_erasing");
  } else if (r.status == ReadStatus::kError) {
    reader.Problem(fmt::format("cannot read /proc/sys/kernel/stack_erasing: {}", r.error));
  }
  Json sysctl = Json::object();
  sysctl["kernel.stack_erasing"] = v;
  return sysctl;
}

// The recorded cpuinfo flags: true/false, or null when cpuinfo has no "flags" line (arm64 has
// "Features").
Json CpuFlags(const std::optional<std::string>& flags_line) {
  std::set<std::string> flag_set;
  if (flags_line) {
    sysinfo_text::ForEachPiece(*flags_line, ' ', [&](std::string_view flag) {
      if (!flag.empty()) flag_set.emplace(flag);
    });
  }
  Json flags = Json::object();
  for (const char* f :
       {"constant_tsc", "nonstop_tsc", "tsc_known_freq", "pku", "ospke", "hypervisor"}) {
    flags[f] = flags_line ? Json(flag_set.count(f) > 0) : Json(nullptr);
  }
  return flags;
}

// arm64 CPU names by MIDR implementer and part, as the kernel names them
// (arch/arm64/include/asm/cputype.h: ARM_CPU_IMP_ARM, ARM_CPU_PART_NEOVERSE_*): the cores of the
// machines the kstack series were measured on (Graviton2/3/4, Ampere Altra, Grace).
struct Arm64Part {
  const char* implementer;
  const char* part;
  const char* name;
};
constexpr Arm64Part kArm64Parts[] = {
    {"0x41", "0xd0c", "Arm Neoverse-N1"},
    {"0x41", "0xd40", "Arm Neoverse-V1"},
    {"0x41", "0xd49", "Arm Neoverse-N2"},
    {"0x41", "0xd4f", "Arm Neoverse-V2"},
};

std::optional<std::string> Arm64PartName(const std::string& implementer, const std::string& part) {
  for (const Arm64Part& p : kArm64Parts) {
    if (implementer == p.implementer && part == p.part) return std::string(p.name);
  }
  return std::nullopt;
}

// The arm64 identity that /proc/cpuinfo gives instead of x86's flags and CPUID signature
// (arch/arm64/kernel/cpuinfo.c c_show: "Features", "CPU implementer", "CPU architecture",
// "CPU variant", "CPU part", "CPU revision"), null when cpuinfo has none of it and this is not an
// aarch64 process reading its own machine. `live`: root is "/", so this process's own facts
// apply: on aarch64 the hardware capabilities the kernel gives it (getauxval AT_HWCAP
// HWCAP_PACA, AT_HWCAP2 HWCAP2_BTI) and the counter frequency (CNTFRQ_EL0); otherwise pac and
// bti come from the Features line (the same capabilities, as the kernel prints them: "paca",
// "bti") and counter_freq_hz is null.
Json CaptureArm64(const std::function<std::optional<std::string>(const char*)>& info, bool live) {
  bool own = false;
#if defined(__aarch64__)
  own = live;
#else
  (void)live;
#endif
  const std::optional<std::string> implementer = info("CPU implementer");
  if (!implementer && !own) return nullptr;
  const std::optional<std::string> part = info("CPU part");
  const std::optional<std::string> features = info("Features");
  std::set<std::string> feature_set;
  Json feature_list = nullptr;
  if (features) {
    feature_list = Json::array();
    sysinfo_text::ForEachPiece(*features, ' ', [&](std::string_view f) {
      if (f.empty()) return;
      feature_set.emplace(f);
      feature_list.push_back(std::string(f));
    });
  }
  auto has = [&](const char* f) -> Json {
    return features ? Json(feature_set.count(f) > 0) : Json(nullptr);
  };
  Json arm = Json::object();
  arm["implementer"] = OrNull(implementer);
  arm["part"] = OrNull(part);
  arm["core"] = implementer && part ? OrNull(Arm64PartName(*implementer, *part)) : Json(nullptr);
  arm["variant"] = OrNull(info("CPU variant"));
  std::optional<uint64_t> revision;
  if (std::optional<std::string> r = info("CPU revision"))
    revision = sysinfo_text::DecimalNumber(*r);
  arm["revision"] = revision ? Json(*revision) : Json(nullptr);
  arm["features"] = feature_list;
  arm["pac"] = has("paca");
  arm["bti"] = has("bti");
  arm["counter_freq_hz"] = nullptr;
#if defined(__aarch64__)
  if (own) {
    arm["pac"] = (getauxval(AT_HWCAP) & HWCAP_PACA) != 0;
    arm["bti"] = (getauxval(AT_HWCAP2) & HWCAP2_BTI) != 0;
    uint64_t cntfrq = 0;
    asm volatile("mrs %0, cntfrq_el0" : "=r"(cntfrq));
    arm["counter_freq_hz"] = cntfrq;
  }
#endif
  return arm;
}

Json CaptureCpu(Reader& reader, bool live) {
  ReadOutcome cpuinfo_read = reader.Read("proc/cpuinfo");
  CpuInfo cpuinfo;
  if (cpuinfo_read.status == ReadStatus::kOk) {
    cpuinfo = ParseCpuInfo(cpuinfo_read.text);
    if (cpuinfo.first.empty())
      reader.Problem("/proc/cpuinfo has no \"key : value\" lines; ignored");
  }
  auto info = [&](const char* key) -> std::optional<std::string> {
    auto it = cpuinfo.first.find(key);
    if (it == cpuinfo.first.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
  std::optional<std::string> model = info("model name");
  if (!model && info("CPU implementer") && info("CPU part")) {
    model = Arm64PartName(*info("CPU implementer"), *info("CPU part"));
    if (!model) {
      model = fmt::format("implementer {} part {}", *info("CPU implementer"), *info("CPU part"));
    }
  }
  Json count = nullptr;
  if (auto online = reader.Line("sys/devices/system/cpu/online")) {
    if (auto n = CountCpuList(*online)) {
      count = *n;
    } else {
      reader.Problem("/sys/devices/system/cpu/online is not a CPU list (\"0-3,6\"); ignored");
    }
  }
  if (count.is_null() && cpuinfo.processors > 0) count = cpuinfo.processors;

  // x86's CPUID signature, in decimal as /proc/cpuinfo prints it: what tells CPU generations
  // apart where a hypervisor shortens the model name (a guest's "AMD EPYC" is family 25 model 1,
  // Zen 3, or family 23, Zen 2). null where absent (arm64) or not a plain decimal number.
  auto number = [&](const char* key) -> Json {
    std::optional<uint64_t> n;
    if (std::optional<std::string> v = info(key)) n = sysinfo_text::DecimalNumber(*v);
    return n ? Json(*n) : Json(nullptr);
  };
  Json cpu = Json::object();
  cpu["model"] = OrNull(model);
  cpu["vendor"] = OrNull(info("vendor_id"));
  cpu["family"] = number("cpu family");
  cpu["model_id"] = number("model");
  cpu["stepping"] = number("stepping");
  cpu["microcode"] = OrNull(info("microcode"));
  cpu["count_online"] = count;
  cpu["flags"] = CpuFlags(info("flags"));
  cpu["arm64"] = CaptureArm64(info, live);
  cpu["smt"] = OrNull(reader.Line("sys/devices/system/cpu/smt/control"));
  std::optional<std::string> active = reader.Line("sys/devices/system/cpu/smt/active");
  cpu["smt_active"] =
      active && (*active == "0" || *active == "1") ? Json(*active == "1") : Json(nullptr);
  cpu["governor"] = OrNull(reader.Line("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"));
  cpu["cpufreq_driver"] = OrNull(reader.Line("sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"));
  cpu["clocksource"] =
      OrNull(reader.Line("sys/devices/system/clocksource/clocksource0/current_clocksource"));
  cpu["clocksources_available"] =
      OrNull(reader.Line("sys/devices/system/clocksource/clocksource0/available_clocksource"));
  return cpu;
}

// One entry per file, sorted by name; null when the directory is absent.
Json CaptureVulnerabilities(Reader& reader) {
  std::vector<std::string> names = reader.ListDir("sys/devices/system/cpu/vulnerabilities");
  if (names.empty()) return nullptr;
  Json vulns = Json::object();
  for (const std::string& n : names) {
    vulns[n] = OrNull(reader.Line("sys/devices/system/cpu/vulnerabilities/" + n));
  }
  return vulns;
}

// `hypervisor_flag` is the cpuinfo flag (true/false/null) captured by CaptureCpu.
Json CaptureVirtualization(const Json& hypervisor_flag, Reader& reader) {
  std::optional<std::string> dmi_vendor = reader.Line("sys/class/dmi/id/sys_vendor");
  std::optional<std::string> dmi_product = reader.Line("sys/class/dmi/id/product_name");
  std::optional<std::string> hv_type = reader.Line("sys/hypervisor/type");
  Json is_vm = nullptr;
  bool dmi_virtual = DmiLooksVirtual(dmi_vendor.value_or(""), dmi_product.value_or(""));
  if (hypervisor_flag == true || dmi_virtual || hv_type) {
    is_vm = true;
  } else if (hypervisor_flag == false || dmi_vendor || dmi_product) {
    // x86 without the CPUID hypervisor bit and no virtual DMI, or non-x86 with real-looking
    // DMI: bare metal.
    is_vm = false;
  }
  Json virt = Json::object();
  virt["hypervisor_flag"] = hypervisor_flag;
  virt["hypervisor_type"] = OrNull(hv_type);
  virt["dmi_sys_vendor"] = OrNull(dmi_vendor);
  virt["dmi_product_name"] = OrNull(dmi_product);
  virt["is_vm"] = is_vm;
  return virt;
}

Json ToolIdentity() {
  Json tool = Json::object();
  tool["version"] = KSTACKLAB_VERSION;
  tool["build_type"] = KSTACKLAB_BUILD_TYPE;
#if defined(__clang__)
  tool["compiler"] = "clang " __clang_version__;
#elif defined(__GNUC__)
  tool["compiler"] = "gcc " __VERSION__;
#else
  tool["compiler"] = nullptr;
#endif
  return tool;
}

}  // namespace

Json CaptureEnvironment(const SysinfoOptions& options) {
  Reader reader(options.root);
  KernelAndConfig kernel_config = CaptureKernelAndConfig(options, reader);
  Json sysctl = CaptureSysctl(reader);
  Json cpu = CaptureCpu(reader, options.root == "/");
  Json vulns = CaptureVulnerabilities(reader);
  Json virt = CaptureVirtualization(cpu["flags"]["hypervisor"], reader);

  Json env = Json::object();
  env["kernel"] = std::move(kernel_config.kernel);
  env["config"] = std::move(kernel_config.config);
  env["sysctl"] = std::move(sysctl);
  env["cpu"] = std::move(cpu);
  env["vulnerabilities"] = std::move(vulns);
  env["virtualization"] = std::move(virt);
  env["tool"] = ToolIdentity();
  env["problems"] = reader.problems();
  return env;
}

}  // namespace kstacklab::sysinfo
