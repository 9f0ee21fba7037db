// EnvironmentWarnings() and EnvironmentSummary(): pure functions of a capture.
#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "kstacklab/sysinfo/sysinfo.h"

namespace kstacklab::sysinfo {

namespace {

// env[k1][k2]... or nullptr when any step is missing or not an object.
const Json* Find(const Json& env, std::initializer_list<const char*> keys) {
  const Json* cur = &env;
  for (const char* k : keys) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(k);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

bool IsTrue(const Json* v) { return v != nullptr && v->is_boolean() && v->get<bool>(); }
bool IsFalse(const Json* v) { return v != nullptr && v->is_boolean() && !v->get<bool>(); }
const std::string* Str(const Json* v) {
  return v != nullptr && v->is_string() ? v->get_ptr<const std::string*>() : nullptr;
}

std::string ValueText(const Json& v) {
  if (v.is_null()) return "?";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// Flattens a group into (key, value) rows; nested objects become "parent.child" except
// config.options whose CONFIG_ names stand alone.
void Flatten(const Json& obj, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& rows) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    std::string key = it.key() == "options" ? "" : prefix + it.key();
    if (it->is_object()) {
      Flatten(*it, key.empty() ? "" : key + ".", rows);
    } else if (it->is_array()) {
      std::string joined;
      for (const Json& e : *it) joined += (joined.empty() ? "" : ", ") + ValueText(e);
      rows.emplace_back(key, joined.empty() ? "(none)" : joined);
    } else {
      rows.emplace_back(key, ValueText(*it));
    }
  }
}

}  // namespace

std::vector<EnvWarning> EnvironmentWarnings(const Json& env) {
  std::vector<EnvWarning> out;
  if (IsTrue(Find(env, {"virtualization", "is_vm"}))) {
    const std::string* vendor = Str(Find(env, {"virtualization", "dmi_sys_vendor"}));
    out.push_back({"vm",
                   fmt::format("running in a virtual machine{}",
                               vendor ? fmt::format(" ({})", *vendor) : std::string()),
                   "results include virtualisation overhead; compare only runs from the same "
                   "host"});
  }
  // Only x86 reports these flags: null elsewhere, so no warning there.
  const Json* constant = Find(env, {"cpu", "flags", "constant_tsc"});
  const Json* nonstop = Find(env, {"cpu", "flags", "nonstop_tsc"});
  if (IsFalse(constant) || IsFalse(nonstop)) {
    std::vector<std::string> missing;
    if (IsFalse(constant)) missing.push_back("constant_tsc");
    if (IsFalse(nonstop)) missing.push_back("nonstop_tsc");
    out.push_back({"tsc-not-invariant",
                   fmt::format("the TSC is not invariant ({} missing in /proc/cpuinfo): its rate "
                               "may follow frequency or stop in deep C-states",
                               fmt::join(missing, ", ")),
                   "use a host with an invariant TSC, or fix the frequency (performance "
                   "governor) and disable deep C-states"});
  }
  const std::string* clocksource = Str(Find(env, {"cpu", "clocksource"}));
  if (clocksource && *clocksource != "tsc" && constant != nullptr && !constant->is_null()) {
    // The remedy depends on whether the kernel offers the TSC at all: a guest whose hypervisor
    // hides a stable TSC lists only its paravirtual clock, and no boot option brings the TSC back.
    const std::string* available = Str(Find(env, {"cpu", "clocksources_available"}));
    const bool tsc_offered =
        available == nullptr || (" " + *available + " ").find(" tsc ") != std::string::npos;
    out.push_back(
        {"clocksource",
         fmt::format("the clocksource is '{}', not 'tsc': clock_gettime() is slower and coarser",
                     *clocksource),
         tsc_offered ? "check dmesg for why the TSC was rejected; with a stable TSC write tsc to "
                       "/sys/devices/system/clocksource/clocksource0/current_clocksource, or "
                       "boot with tsc=reliable"
                     : fmt::format("the kernel offers no TSC clocksource here (available: {}), "
                                   "so nothing on this guest can switch it; kstacklab's timed "
                                   "calls read the TSC directly (timer.source) and are not "
                                   "affected; for clock_gettime-based peers use a host that "
                                   "exposes a stable TSC",
                                   *available)});
  }
  const std::string* governor = Str(Find(env, {"cpu", "governor"}));
  if (governor && *governor != "performance") {
    out.push_back(
        {"governor",
         fmt::format("cpufreq governor is '{}': the clock speed changes under load", *governor),
         "cpupower frequency-set -g performance (and restore it afterwards)"});
  }
  if (IsTrue(Find(env, {"cpu", "smt_active"}))) {
    out.push_back({"smt", "SMT is on: a busy sibling hyperthread shares the core and adds noise",
                   "keep the pinned CPU's sibling idle, or echo off > "
                   "/sys/devices/system/cpu/smt/control"});
  }
  const std::string* build = Str(Find(env, {"tool", "build_type"}));
  if (build && (build->rfind("Debug", 0) == 0 || build->find("sanitize") != std::string::npos)) {
    out.push_back({"debug-build",
                   fmt::format("kstacklab is a {} build: its own overhead is inflated", *build),
                   "rebuild with -DCMAKE_BUILD_TYPE=Release -DKSTACKLAB_SANITIZE=OFF"});
  }
  return out;
}

std::string EnvironmentSummary(const Json& env) {
  std::string out;
  if (!env.is_object()) return out;
  for (auto it = env.begin(); it != env.end(); ++it) {
    if (it.key() == "problems") continue;
    out += it.key();
    if (it.key() == "config") {
      const std::string* src = Str(Find(*it, {"source"}));
      out += src ? fmt::format(" ({})", *src) : " (not found)";
    }
    out += ":\n";
    std::vector<std::pair<std::string, std::string>> rows;
    if (it->is_object()) {
      Flatten(*it, "", rows);
    } else {
      rows.emplace_back("", ValueText(*it));
    }
    // Without stack erasing built the sysctl does not exist: "not built", as the campaign report
    // says, rather than the "?" of a value that could not be read.
    const Json* erase_built = Find(env, {"config", "kstack_erase_built"});
    if (it.key() == "sysctl" && erase_built != nullptr && erase_built->is_boolean() &&
        !erase_built->get<bool>()) {
      for (auto& [k, v] : rows) {
        if (k == "kernel.stack_erasing" && v == "?") v = "not built";
      }
    }
    size_t width = 0;
    for (const auto& [k, v] : rows) width = std::max(width, k.size());
    for (const auto& [k, v] : rows) {
      if (it.key() == "config" && k == "source") continue;
      if (k.empty()) {
        out += fmt::format("  {}\n", v);
      } else {
        out += fmt::format("  {:<{}}  {}\n", k + ":", width + 1, v);
      }
    }
  }
  std::vector<EnvWarning> warnings = EnvironmentWarnings(env);
  out += "warnings:\n";
  if (warnings.empty()) out += "  (none)\n";
  for (const EnvWarning& w : warnings) {
    out += fmt::format("  [{}] {}\n    remedy: {}\n", w.code, w.message, w.remedy);
  }
  const Json* problems = Find(env, {"problems"});
  out += "problems:\n";
  if (problems == nullptr || !problems->is_array() || problems->empty()) out += "  (none)\n";
  if (problems != nullptr && problems->is_array()) {
    for (const Json& p : *problems) out += fmt::format("  - {}\n", ValueText(p));
  }
  return out;
}

}  // namespace kstacklab::sysinfo
