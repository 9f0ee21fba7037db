// Environment capture (DESIGN.md job 1: "record the environment that explains the numbers"):
// kernel release/version/cmdline, the stack-hardening kernel config, sysctls, CPU, timer-related
// sysfs, virtualisation, tool version. Shown by `kstacklab env [--json]` and embedded as
// `environment` in every result file. The field list is documented in docs/environment.md.
//
// Contract: capture never fails. Whatever cannot be read is JSON null ("unknown"); content that
// is present but garbled (binary junk, truncated gzip, non-numeric sysctl) is also null and adds
// a one-line entry to the top-level "problems" array. Not for use inside a timed region (I/O).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/results/json.h"

namespace kstacklab::sysinfo {

// Environment variable that redirects every read to a fixture tree (tests): when set and
// non-empty, SysinfoOptionsFromEnvironment() uses it as `root`.
inline constexpr const char* kSysrootEnvVar = "KSTACKLAB_SYSROOT";

struct SysinfoOptions {
  // Every path is read as root + "/proc/...", root + "/sys/...", root + "/boot/...".
  std::string root = "/";
  // uname(2) overrides. Empty: read <root>/proc/sys/kernel/{osrelease,version,arch}; only when
  // root is "/" and those are unreadable, fall back to uname(2).
  std::string release;  // uname -r, e.g. "6.18.44"
  std::string version;  // uname -v, e.g. "#1 SMP PREEMPT_DYNAMIC ..."
  std::string machine;  // uname -m, e.g. "x86_64"
};

// Default options, with root taken from $KSTACKLAB_SYSROOT when set.
SysinfoOptions SysinfoOptionsFromEnvironment();

// The capture, keys in a stable documented order:
// {"kernel","config","sysctl","cpu","vulnerabilities","virtualization","tool","problems"}.
Json CaptureEnvironment(const SysinfoOptions& options = SysinfoOptions{});

// One environment problem for the measurement, diagnosed once with its remedy (STYLE.md 13).
struct EnvWarning {
  std::string code;     // stable id: "vm", "tsc-not-invariant", "governor", "smt", "clocksource",
                        // "debug-build"
  std::string message;  // what is wrong, one line
  std::string remedy;   // what to do, one line
};

// Warnings derived from a capture (CaptureEnvironment output or a result file's environment).
// Unknown fields never warn. Order: vm, tsc-not-invariant, clocksource, governor, smt, debug-build.
std::vector<EnvWarning> EnvironmentWarnings(const Json& env);

// Readable grouped "key: value" lines of a capture (what `kstacklab env` prints); unknown = "?".
std::string EnvironmentSummary(const Json& env);

// ---- Pure parsers, exposed for tests ----------------------------------------------------------

// The kernel's kstrtobool(): first char y/Y/1 -> true, n/N/0 -> false, "on"/"of(f)" by the first
// two chars (case-insensitive); anything else (including empty) -> nullopt (-EINVAL).
std::optional<bool> KernelStrToBool(std::string_view text);

struct CmdlineParam {
  std::string name;                  // quotes removed
  std::optional<std::string> value;  // nullopt for a bare "name"; quotes removed
};

// Splits a kernel command line like the kernel's next_arg(): whitespace-separated, double quotes
// group, the first '=' separates name and value; stops at a bare "--" (the rest goes to init).
std::vector<CmdlineParam> ParseCmdline(std::string_view cmdline);

// Parses a kernel .config text into {"CONFIG_X": "y"|"m"|"<string, unquoted>"|"<number>" |
// "n" (for "# CONFIG_X is not set")}. Lines that match neither form are ignored; returns nullopt
// when the text has no CONFIG_ line at all (garbled or not a config).
std::optional<Json> ParseKernelConfig(std::string_view text);

// The cmdline state of randomize_kstack_offset= as init/main.c sees it: early params are handled
// in command-line order, a malformed value is rejected ("Malformed early option") and leaves the
// static key as it was, so the last *valid* occurrence wins. parameq() treats '-' and '_' alike.
struct KstackCmdline {
  std::string state = "default";  // "on" | "off" | "default" | "invalid:<v>"
  std::optional<bool> value;      // the last valid value; nullopt when none
};
KstackCmdline ParseKstackCmdline(const std::vector<CmdlineParam>& params);

// The first processor block of /proc/cpuinfo as trimmed key -> value (the first occurrence of a
// key wins), plus the number of "processor" lines. Lines without ':' are skipped; never fails.
struct CpuInfo {
  std::map<std::string, std::string> first;
  int processors = 0;
};
CpuInfo ParseCpuInfo(std::string_view text);

// Decompresses a gzip stream (e.g. /proc/config.gz); nullopt on any error or truncation.
std::optional<std::string> GunzipString(std::string_view compressed);

}  // namespace kstacklab::sysinfo
