#include "kstacklab/campaign/plan.h"

#include <fmt/format.h>
#include <sched.h>
#include <sys/stat.h>
#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>

#include "kstacklab/fileio.h"
#include "kstacklab/results.h"
#include "kstacklab/text.h"

namespace kstacklab::campaign {
namespace {

namespace fs = std::filesystem;

// ---- the YAML reader ----------------------------------------------------------------------------

// Refuses aliases and anchors before the tree is built: a plan has no use for them, and a
// "billion laughs" document of nested aliases is small as text and huge as a tree walk.
class AliasRefuser : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override { Anchor(anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    if (!problem) problem = mark;
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Anchor(anchor, mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Anchor(anchor, mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Anchor(anchor, mark);
  }
  void OnMapEnd() override {}
  std::optional<YAML::Mark> problem;

 private:
  void Anchor(YAML::anchor_t anchor, const YAML::Mark& mark = YAML::Mark()) {
    if (anchor != YAML::NullAnchor && !problem) problem = mark;
  }
};

// Reads one plan document: `source` and the node's line in every message.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  Error Bad(const YAML::Node& node, const std::string& what) const {
    const YAML::Mark m = node.Mark();
    return UsageError(m.line >= 0 ? fmt::format("{} line {}: {}", source_, m.line + 1, what)
                                  : fmt::format("{}: {}", source_, what));
  }

  // Every key of `map` is one of `known`; a map is required.
  Status Keys(const YAML::Node& map, const std::string& where,
              const std::set<std::string>& known) const {
    if (!map.IsMap()) return Bad(map, fmt::format("{} must be a mapping (key: value)", where));
    std::set<std::string> seen;
    for (const auto& kv : map) {
      if (!kv.first.IsScalar())
        return Bad(kv.first, fmt::format("{}: a key must be a word", where));
      const std::string key = kv.first.Scalar();
      // yaml-cpp keeps the first of two equal keys and drops the other without a word.
      if (!seen.insert(key).second) {
        return Bad(kv.first, fmt::format("{}: key '{}' is given twice; say it once", where,
                                         EscapeControl(key)));
      }
      if (key == "<<")
        return Bad(kv.first, fmt::format("{}: merge keys (<<) are not taken", where));
      if (known.count(key) == 0) {
        std::string names;
        for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
        return Bad(kv.first, fmt::format("{}: unknown key '{}'; the keys are: {}", where,
                                         EscapeControl(key), names));
      }
    }
    return OkStatus();
  }

  Expected<std::string> Text(const YAML::Node& node, const std::string& key,
                             size_t max = PlanLimits::kMaxTextBytes) const {
    if (!node.IsScalar()) return Bad(node, fmt::format("{} must be a single value", key));
    const std::string& s = node.Scalar();
    if (s.size() > max) return Bad(node, fmt::format("{} is longer than {} bytes", key, max));
    if (auto problem = TextProblem(s)) {
      return Bad(node, fmt::format("{} {}", key, *problem));
    }
    return s;
  }

  Expected<uint64_t> Count(const YAML::Node& node, const std::string& key, uint64_t lo,
                           uint64_t hi) const {
    std::string s;
    KSTACKLAB_ASSIGN_OR_RETURN(s, Text(node, key, 32));
    auto v = ParseCount(s, key, lo, hi);
    if (!v.ok()) return Bad(node, v.error().message);
    return *v;
  }

  Expected<double> Number(const YAML::Node& node, const std::string& key, double lo,
                          double hi) const {
    std::string s;
    KSTACKLAB_ASSIGN_OR_RETURN(s, Text(node, key, 32));
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v < lo || v > hi) {
      return Bad(node, fmt::format("{} '{}' is not a number from {:g} to {:g}", key,
                                   EscapeControl(s), lo, hi));
    }
    return v;
  }

  Expected<double> DurationS(const YAML::Node& node, const std::string& key, double lo_s,
                             double hi_s, const char* example) const {
    std::string s;
    KSTACKLAB_ASSIGN_OR_RETURN(s, Text(node, key, 32));
    auto ns = ParseDurationNs(s, key, /*bare_seconds=*/true, lo_s * 1e9, hi_s * 1e9, example);
    if (!ns.ok()) return Bad(node, ns.error().message);
    return *ns / 1e9;
  }

  Expected<bool> Bool(const YAML::Node& node, const std::string& key) const {
    std::string s;
    KSTACKLAB_ASSIGN_OR_RETURN(s, Text(node, key, 8));
    if (s == "true") return true;
    if (s == "false") return false;
    return Bad(node, fmt::format("{} must be true or false", key));
  }

  Expected<std::vector<std::string>> Words(const YAML::Node& node, const std::string& key,
                                           size_t max_items) const {
    if (!node.IsSequence()) {
      return Bad(node, fmt::format("{} must be a list, e.g. [--suite, syscall]", key));
    }
    if (node.size() > max_items) {
      return Bad(node, fmt::format("{} has more than {} items", key, max_items));
    }
    std::vector<std::string> out;
    for (const YAML::Node& item : node) {
      std::string s;
      KSTACKLAB_ASSIGN_OR_RETURN(s, Text(item, key + " item"));
      out.push_back(std::move(s));
    }
    return out;
  }

  // A path as written, relative ones taken from the plan file's directory.
  Expected<std::string> Path(const YAML::Node& node, const std::string& key,
                             const std::string& base_dir) const {
    std::string s;
    KSTACKLAB_ASSIGN_OR_RETURN(s, Text(node, key));
    if (s.empty()) return Bad(node, fmt::format("{} is empty", key));
    if (s[0] != '/' && !base_dir.empty()) s = (fs::path(base_dir) / s).string();
    return s;
  }

 private:
  std::string source_;
};

Expected<Profile> ReadProfile(const Reader& r, const YAML::Node& node, const std::string& base,
                              const std::string& engine) {
  KSTACKLAB_RETURN_IF_ERROR(
      r.Keys(node, "a profile",
             {"name", "kernel", "initrd", "cmdline", "config", "sysctl", "boot_entry", "release"}));
  Profile p;
  if (!node["name"]) return r.Bad(node, "a profile needs a name");
  KSTACKLAB_ASSIGN_OR_RETURN(p.name, r.Text(node["name"], "name", 64));
  const std::string who = fmt::format("profile '{}'", EscapeControl(p.name));
  // Engine lava fetches its files itself: kernel and initrd are URLs, taken as written.
  const bool urls = engine == "lava";
  if (!node["kernel"]) {
    return r.Bad(node,
                 who + (urls ? " needs a kernel (a URL)" : " needs a kernel (a bzImage path)"));
  }
  if (urls) {
    KSTACKLAB_ASSIGN_OR_RETURN(p.kernel, r.Text(node["kernel"], who + " kernel"));
    if (node["initrd"])
      KSTACKLAB_ASSIGN_OR_RETURN(p.initrd, r.Text(node["initrd"], who + " initrd"));
  } else {
    KSTACKLAB_ASSIGN_OR_RETURN(p.kernel, r.Path(node["kernel"], who + " kernel", base));
    if (node["initrd"])
      KSTACKLAB_ASSIGN_OR_RETURN(p.initrd, r.Path(node["initrd"], who + " initrd", base));
  }
  if (node["config"])
    KSTACKLAB_ASSIGN_OR_RETURN(p.config, r.Path(node["config"], who + " config", base));
  if (node["boot_entry"] && engine != "ssh") {
    return r.Bad(node["boot_entry"],
                 fmt::format("{} boot_entry is a key of engine ssh (switch reboot); engine {} "
                             "takes none: leave it out",
                             who, engine));
  }
  if (node["boot_entry"])
    KSTACKLAB_ASSIGN_OR_RETURN(p.boot_entry, r.Text(node["boot_entry"], who + " boot_entry", 256));
  if (node["release"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        p.release, r.Text(node["release"], who + " release", PlanLimits::kMaxReleaseBytes));
  }
  if (node["cmdline"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        p.cmdline, r.Text(node["cmdline"], who + " cmdline", PlanLimits::kMaxCmdlineBytes));
  }
  if (const YAML::Node s = node["sysctl"]) {
    if (!s.IsMap()) return r.Bad(s, who + " sysctl must be a mapping, e.g. {kernel.foo: 1}");
    if (s.size() > PlanLimits::kMaxSysctls) {
      return r.Bad(s, fmt::format("{} sets more than {} sysctls", who, PlanLimits::kMaxSysctls));
    }
    std::set<std::string> seen;
    for (const auto& kv : s) {
      std::string name;
      KSTACKLAB_ASSIGN_OR_RETURN(name, r.Text(kv.first, who + " sysctl name", 256));
      if (!seen.insert(name).second) {
        return r.Bad(kv.first, fmt::format("{} sysctl '{}' is given twice; say it once", who,
                                           EscapeControl(name)));
      }
      std::string value;
      KSTACKLAB_ASSIGN_OR_RETURN(value,
                                 r.Text(kv.second, fmt::format("{} sysctl {}", who, name), 256));
      p.sysctls.emplace_back(std::move(name), std::move(value));
    }
  }
  return p;
}

Expected<Target> ReadTarget(const Reader& r, const YAML::Node& node) {
  KSTACKLAB_RETURN_IF_ERROR(
      r.Keys(node, "target", {"metric", "mdc_pct", "min_boots", "max_boots", "budget"}));
  Target t;
  if (node["metric"])
    KSTACKLAB_ASSIGN_OR_RETURN(t.metric, r.Text(node["metric"], "target metric", 32));
  if (!node["mdc_pct"])
    return r.Bad(node, "target needs mdc_pct (the detectable change to reach, %)");
  KSTACKLAB_ASSIGN_OR_RETURN(t.mdc_pct, r.Number(node["mdc_pct"], "target mdc_pct", 0.01, 1000));
  if (node["min_boots"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        t.min_boots, r.Count(node["min_boots"], "target min_boots", 2, PlanLimits::kMaxBoots));
  }
  if (node["max_boots"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        t.max_boots, r.Count(node["max_boots"], "target max_boots", 2, PlanLimits::kMaxBoots));
  }
  if (node["budget"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(t.budget_s, r.DurationS(node["budget"], "target budget", 1,
                                                       PlanLimits::kMaxBudgetNs / 1e9, "6h"));
  }
  return t;
}

Status ReadQemu(const Reader& r, const YAML::Node& node, CampaignPlan& plan) {
  KSTACKLAB_RETURN_IF_ERROR(r.Keys(node, "engine qemu",
                                   {"name", "cpus", "memory", "accel", "pin", "qemu_args",
                                    "boot_timeout", "init_timeout", "qemu", "busybox"}));
  QemuSettings& q = plan.qemu;
  if (node["cpus"]) KSTACKLAB_ASSIGN_OR_RETURN(q.cpus, r.Count(node["cpus"], "engine cpus", 1, 64));
  if (node["memory"])
    KSTACKLAB_ASSIGN_OR_RETURN(q.memory, r.Text(node["memory"], "engine memory", 16));
  if (node["accel"]) KSTACKLAB_ASSIGN_OR_RETURN(q.accel, r.Text(node["accel"], "engine accel", 8));
  if (const YAML::Node pin = node["pin"]) {
    if (!pin.IsSequence() || pin.size() == 0 || pin.size() > 64) {
      return r.Bad(pin, "engine pin must be a list of host CPU numbers, e.g. [2, 3]");
    }
    for (const YAML::Node& c : pin) {
      uint64_t cpu = 0;
      KSTACKLAB_ASSIGN_OR_RETURN(cpu, r.Count(c, "engine pin", 0, CPU_SETSIZE - 1));
      q.pin.push_back(cpu);
    }
  }
  if (node["qemu_args"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        q.extra_args, r.Words(node["qemu_args"], "engine qemu_args", PlanLimits::kMaxQemuArgs));
  }
  if (node["boot_timeout"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        q.boot_timeout_s,
        r.DurationS(node["boot_timeout"], "engine boot_timeout", 10, 7 * 86400, "30min"));
  }
  if (node["init_timeout"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        q.init_timeout_s,
        r.DurationS(node["init_timeout"], "engine init_timeout", 5, 3600, "2min"));
  }
  if (node["qemu"]) KSTACKLAB_ASSIGN_OR_RETURN(q.binary, r.Text(node["qemu"], "engine qemu"));
  if (node["busybox"])
    KSTACKLAB_ASSIGN_OR_RETURN(q.busybox, r.Text(node["busybox"], "engine busybox"));
  return OkStatus();
}

Status ReadSsh(const Reader& r, const YAML::Node& node, const std::string& base,
               CampaignPlan& plan) {
  KSTACKLAB_RETURN_IF_ERROR(r.Keys(
      node, "engine ssh",
      {"name", "host", "port", "user", "ssh_config", "switch", "sudo", "cmdline", "remote_dir",
       "reboot_command", "recover", "connect_timeout", "boot_timeout", "run_timeout"}));
  SshSettings& s = plan.ssh;
  if (!node["host"]) return r.Bad(node, "engine ssh needs a host (a name ssh reaches, e.g. sut1)");
  KSTACKLAB_ASSIGN_OR_RETURN(s.host, r.Text(node["host"], "engine host", 255));
  if (node["port"])
    KSTACKLAB_ASSIGN_OR_RETURN(s.port, r.Count(node["port"], "engine port", 1, 65535));
  if (node["user"]) KSTACKLAB_ASSIGN_OR_RETURN(s.user, r.Text(node["user"], "engine user", 64));
  if (node["ssh_config"])
    KSTACKLAB_ASSIGN_OR_RETURN(s.ssh_config, r.Path(node["ssh_config"], "engine ssh_config", base));
  if (node["switch"])
    KSTACKLAB_ASSIGN_OR_RETURN(s.switch_mode, r.Text(node["switch"], "engine switch", 16));
  if (node["sudo"]) KSTACKLAB_ASSIGN_OR_RETURN(s.sudo, r.Bool(node["sudo"], "engine sudo"));
  if (node["cmdline"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        s.cmdline, r.Text(node["cmdline"], "engine cmdline", PlanLimits::kMaxCmdlineBytes));
  }
  if (node["remote_dir"])
    KSTACKLAB_ASSIGN_OR_RETURN(s.remote_dir, r.Text(node["remote_dir"], "engine remote_dir", 256));
  if (node["reboot_command"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        s.reboot_command,
        r.Words(node["reboot_command"], "engine reboot_command", PlanLimits::kMaxQemuArgs));
  }
  if (node["recover"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        s.recover, r.Words(node["recover"], "engine recover", PlanLimits::kMaxQemuArgs));
  }
  if (node["connect_timeout"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        s.connect_timeout_s,
        r.DurationS(node["connect_timeout"], "engine connect_timeout", 1, 600, "10s"));
  }
  if (node["boot_timeout"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        s.boot_timeout_s,
        r.DurationS(node["boot_timeout"], "engine boot_timeout", 10, 86400, "10min"));
  }
  if (node["run_timeout"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        s.run_timeout_s,
        r.DurationS(node["run_timeout"], "engine run_timeout", 10, 7 * 86400, "2h"));
  }
  return OkStatus();
}

Status ReadLava(const Reader& r, const YAML::Node& node, CampaignPlan& plan) {
  KSTACKLAB_RETURN_IF_ERROR(
      r.Keys(node, "engine lava",
             {"name", "device_type", "identity", "boot_method", "deploy_to", "rootfs",
              "kstacklab_url", "prompts", "tags", "job_timeout", "lavacli"}));
  LavaSettings& l = plan.lava;
  if (node["device_type"])
    KSTACKLAB_ASSIGN_OR_RETURN(l.device_type,
                               r.Text(node["device_type"], "engine device_type", 64));
  if (node["identity"])
    KSTACKLAB_ASSIGN_OR_RETURN(l.identity, r.Text(node["identity"], "engine identity", 64));
  if (node["boot_method"])
    KSTACKLAB_ASSIGN_OR_RETURN(l.boot_method,
                               r.Text(node["boot_method"], "engine boot_method", 32));
  if (node["deploy_to"])
    KSTACKLAB_ASSIGN_OR_RETURN(l.deploy_to, r.Text(node["deploy_to"], "engine deploy_to", 32));
  if (node["rootfs"]) KSTACKLAB_ASSIGN_OR_RETURN(l.rootfs, r.Text(node["rootfs"], "engine rootfs"));
  if (node["kstacklab_url"])
    KSTACKLAB_ASSIGN_OR_RETURN(l.kstacklab_url,
                               r.Text(node["kstacklab_url"], "engine kstacklab_url"));
  if (node["prompts"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        l.prompts, r.Words(node["prompts"], "engine prompts", PlanLimits::kMaxQemuArgs));
  }
  if (node["tags"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(l.tags,
                               r.Words(node["tags"], "engine tags", PlanLimits::kMaxQemuArgs));
  }
  if (node["job_timeout"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        l.job_timeout_s,
        r.DurationS(node["job_timeout"], "engine job_timeout", 60, 7 * 86400, "2h"));
  }
  if (node["lavacli"])
    KSTACKLAB_ASSIGN_OR_RETURN(l.lavacli, r.Text(node["lavacli"], "engine lavacli"));
  return OkStatus();
}

// The engine's name first: the keys it takes and how profiles name their files depend on it.
Expected<std::string> EngineName(const Reader& r, const YAML::Node& root) {
  const YAML::Node node = root["engine"];
  if (!node) return std::string("qemu");
  if (!node.IsMap()) return r.Bad(node, "engine must be a mapping, e.g. {name: qemu}");
  if (!node["name"]) return std::string("qemu");
  std::string name;
  KSTACKLAB_ASSIGN_OR_RETURN(name, r.Text(node["name"], "engine name", 16));
  if (name != "qemu" && name != "ssh" && name != "lava") {
    return r.Bad(node["name"], fmt::format("engine name '{}' is unknown; give qemu, ssh or lava",
                                           EscapeControl(name)));
  }
  return name;
}

Status ReadEngine(const Reader& r, const YAML::Node& node, const std::string& base,
                  CampaignPlan& plan) {
  if (plan.engine == "ssh") return ReadSsh(r, node, base, plan);
  if (plan.engine == "lava") return ReadLava(r, node, plan);
  return ReadQemu(r, node, plan);
}

Status ReadOrder(const Reader& r, const YAML::Node& node, CampaignPlan& plan) {
  KSTACKLAB_RETURN_IF_ERROR(r.Keys(node, "order", {"blocks", "seed"}));
  if (node["blocks"]) {
    std::string b;
    KSTACKLAB_ASSIGN_OR_RETURN(b, r.Text(node["blocks"], "order blocks", 16));
    if (b != "randomised" && b != "randomized" && b != "fixed") {
      return r.Bad(node["blocks"], "order blocks must be randomised or fixed");
    }
    plan.randomised = b != "fixed";
  }
  if (node["seed"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(plan.seed, r.Count(node["seed"], "order seed", 0, UINT64_MAX));
    plan.seed_given = true;
  }
  return OkStatus();
}

Expected<CampaignPlan> ReadPlan(const Reader& r, const YAML::Node& root, const std::string& base) {
  KSTACKLAB_RETURN_IF_ERROR(r.Keys(
      root, "the plan",
      {"profiles", "run", "boots", "target", "order", "engine", "strength", "strength_samples"}));
  CampaignPlan plan;
  KSTACKLAB_ASSIGN_OR_RETURN(plan.engine, EngineName(r, root));
  const YAML::Node profiles = root["profiles"];
  if (!profiles || !profiles.IsSequence() || profiles.size() == 0) {
    return r.Bad(
        profiles ? profiles : root,
        "profiles must be a list of {name, kernel, cmdline, ...}; the first is the baseline");
  }
  if (profiles.size() > PlanLimits::kMaxProfiles) {
    return r.Bad(profiles, fmt::format("more than {} profiles", PlanLimits::kMaxProfiles));
  }
  for (const YAML::Node& p : profiles) {
    Profile profile;
    KSTACKLAB_ASSIGN_OR_RETURN(profile, ReadProfile(r, p, base, plan.engine));
    plan.profiles.push_back(std::move(profile));
  }
  if (root["run"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(plan.run_args, r.Words(root["run"], "run", PlanLimits::kMaxRunArgs));
  }
  if (root["boots"] && root["target"]) {
    return r.Bad(root["target"], "give boots or target, not both");
  }
  if (root["boots"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(plan.boots,
                               r.Count(root["boots"], "boots", 1, PlanLimits::kMaxBoots));
  } else if (root["target"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(plan.target, ReadTarget(r, root["target"]));
  } else {
    return r.Bad(root, "give boots (per profile) or target {metric, mdc_pct, max_boots, budget}");
  }
  if (root["order"]) KSTACKLAB_RETURN_IF_ERROR(ReadOrder(r, root["order"], plan));
  if (root["engine"]) KSTACKLAB_RETURN_IF_ERROR(ReadEngine(r, root["engine"], base, plan));
  if (root["strength"])
    KSTACKLAB_ASSIGN_OR_RETURN(plan.strength, r.Bool(root["strength"], "strength"));
  if (root["strength_samples"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(plan.strength_samples, r.Count(root["strength_samples"],
                                                              "strength_samples", 1000, 10000000));
  }
  return plan;
}

// ---- checks
// --------------------------------------------------------------------------------------

// A profile name is a label, a directory name and a compare column at once.
std::optional<std::string> NameProblem(const std::string& name) {
  if (name.empty() || name.size() > 64) return "must be 1 to 64 characters";
  if (name[0] == '.' || name[0] == '-') return "must not start with '.' or '-'";
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == '+';
    if (!ok) {
      return fmt::format(
          "has '{}': use letters, digits and - _ . + (it names a directory and "
          "a compare column)",
          EscapeControl(std::string(1, c)));
    }
  }
  return std::nullopt;
}

bool PrintableAscii(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

std::optional<std::string> SysctlProblem(const std::string& name, const std::string& value) {
  if (name.empty() || name.front() == '.' || name.back() == '.' ||
      name.find("..") != std::string::npos) {
    return "is not a sysctl name (e.g. kernel.randomize_va_space)";
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return "is not a sysctl name (letters, digits, _ - and dots)";
  }
  if (value.empty() || !PrintableAscii(value)) {
    return "needs a value of printable ASCII characters";
  }
  return std::nullopt;
}

// The run's own flags the campaign sets: the guest writes its file where the campaign reads it.
std::optional<std::string> ReservedRunArg(const std::string& arg) {
  static const char* const kReserved[] = {"--output", "--label", "--store", "--no-store",
                                          "--internal-session"};
  for (const char* r : kReserved) {
    const std::string_view rv(r);
    if (arg == rv ||
        (arg.size() > rv.size() && arg.compare(0, rv.size(), rv) == 0 && arg[rv.size()] == '=')) {
      return std::string(r);
    }
  }
  if (arg.size() >= 2 && arg[0] == '-' && arg[1] == 'o') return std::string("-o");
  return std::nullopt;
}

Status CheckFile(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return UsageError(fmt::format("{} '{}': {}; give an existing file", what, EscapeControl(path),
                                  std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return UsageError(fmt::format("{} '{}' is not a regular file", what, EscapeControl(path)));
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return UsageError(fmt::format("{} '{}' is not readable", what, EscapeControl(path)));
  }
  return OkStatus();
}

Status CheckMemory(const std::string& m) {
  size_t digits = 0;
  while (digits < m.size() && m[digits] >= '0' && m[digits] <= '9') ++digits;
  const std::string suffix = m.substr(digits);
  if (digits == 0 || digits > 6 || !(suffix.empty() || suffix == "M" || suffix == "G")) {
    return UsageError(
        fmt::format("engine memory '{}' is not a size; give e.g. 2G or 2048M", EscapeControl(m)));
  }
  return OkStatus();
}

// A URL LAVA can fetch: a scheme it knows, then printable ASCII without spaces or quotes (it
// goes into a job file and a QEMU command line as it is).
bool IsFetchableUrl(const std::string& url) {
  static const char* const kSchemes[] = {"http://", "https://", "file://", "ftp://"};
  bool scheme = false;
  for (const char* k : kSchemes) scheme = scheme || url.rfind(k, 0) == 0;
  if (!scheme || url.size() > PlanLimits::kMaxTextBytes) return false;
  for (char c : url) {
    if (c <= ' ' || c > '~' || c == '"' || c == '\'' || c == '\\') return false;
  }
  return true;
}

Status CheckCmdlineAndSysctls(const Profile& p) {
  const std::string who = fmt::format("profile '{}'", p.name);
  std::set<std::string> names;
  for (const auto& [name, value] : p.sysctls) {
    if (auto problem = SysctlProblem(name, value)) {
      return UsageError(fmt::format("{} sysctl '{}' {}", who, EscapeControl(name), *problem));
    }
    if (!names.insert(name).second) {
      return UsageError(fmt::format("{} sets sysctl '{}' twice", who, name));
    }
  }
  if (!PrintableAscii(p.boot_entry) || !PrintableAscii(p.release) ||
      p.release.find(' ') != std::string::npos) {
    return UsageError(
        fmt::format("{} boot_entry and release must be printable ASCII (release: "
                    "one word, as uname -r prints it)",
                    who));
  }
  // uname(2)'s release is char[__NEW_UTS_LEN + 1] (include/uapi/linux/utsname.h): a longer
  // release (the plan's, or an image's header string) could never equal `uname -r`, and every
  // boot would fail its check.
  if (p.release.size() > PlanLimits::kMaxReleaseBytes) {
    return UsageError(
        fmt::format("{} release '{}' is longer than {} bytes, more than uname -r can print", who,
                    EscapeControl(p.release.substr(0, 80)), PlanLimits::kMaxReleaseBytes));
  }
  return OkStatus();
}

// Engine lava: the files are URLs the lab fetches; the release is the plan's, if given.
Status CheckLavaProfile(const Profile& p) {
  const std::string who = fmt::format("profile '{}'", p.name);
  if (!IsFetchableUrl(p.kernel)) {
    return UsageError(fmt::format(
        "{} kernel '{}' is not a URL (engine lava: the lab fetches it; give http(s)://, ftp:// or "
        "file:// without spaces or quotes)",
        who, EscapeControl(p.kernel)));
  }
  if (!p.initrd.empty() && !IsFetchableUrl(p.initrd)) {
    return UsageError(
        fmt::format("{} initrd '{}' is not a URL (engine lava)", who, EscapeControl(p.initrd)));
  }
  if (!p.config.empty()) {
    return UsageError(fmt::format(
        "{} config: engine lava carries no file into the DUT; leave config out (the DUT's "
        "/boot/config-RELEASE is read if its rootfs has one)",
        who));
  }
  return CheckCmdlineAndSysctls(p);
}

Status CheckProfile(Profile& p, const std::string& engine) {
  if (engine == "lava") return CheckLavaProfile(p);
  const std::string who = fmt::format("profile '{}'", p.name);
  std::error_code ec;
  p.kernel = fs::absolute(p.kernel, ec).lexically_normal().string();
  KSTACKLAB_RETURN_IF_ERROR(CheckFile(p.kernel, who + " kernel"));
  std::string header_release;
  KSTACKLAB_ASSIGN_OR_RETURN(header_release, BzImageRelease(p.kernel));
  if (!p.release.empty() && !header_release.empty() && p.release != header_release) {
    return UsageError(fmt::format("{} release '{}' is not the image's own ({}); leave release out",
                                  who, EscapeControl(p.release), header_release));
  }
  if (p.release.empty()) p.release = header_release;
  struct stat st {};
  if (::stat(p.kernel.c_str(), &st) == 0) {
    p.kernel_size = static_cast<uint64_t>(st.st_size);
    p.kernel_mtime = st.st_mtim.tv_sec;
  }
  if (!p.initrd.empty()) {
    p.initrd = fs::absolute(p.initrd, ec).lexically_normal().string();
    KSTACKLAB_RETURN_IF_ERROR(CheckFile(p.initrd, who + " initrd"));
  }
  if (engine == "ssh" && !p.config.empty()) {
    return UsageError(
        fmt::format("{} config: engine ssh carries no configuration in; the machine's own "
                    "/boot/config-RELEASE (or /proc/config.gz) is read; leave config out",
                    who));
  }
  // Only the qemu engine carries the configuration into its guest (/boot/config-RELEASE there).
  if (engine == "qemu" && p.config.empty() && !p.release.empty()) {
    const fs::path beside = fs::path(p.kernel).parent_path() / ("config-" + p.release);
    if (fs::is_regular_file(beside, ec)) p.config = beside.string();
  }
  if (!p.config.empty()) {
    p.config = fs::absolute(p.config, ec).lexically_normal().string();
    KSTACKLAB_RETURN_IF_ERROR(CheckFile(p.config, who + " config"));
  }
  return CheckCmdlineAndSysctls(p);
}

Status CheckQemu(const CampaignPlan& plan) {
  const QemuSettings& q = plan.qemu;
  if (q.accel != "auto" && q.accel != "kvm" && q.accel != "tcg") {
    return UsageError(
        fmt::format("engine accel '{}' is unknown; give auto, kvm or tcg", EscapeControl(q.accel)));
  }
  KSTACKLAB_RETURN_IF_ERROR(CheckMemory(q.memory));
  for (const std::string& a : q.extra_args) {
    if (!PrintableAscii(a)) return UsageError("engine qemu_args must be printable ASCII");
  }
  if (q.init_timeout_s >= q.boot_timeout_s) {
    return UsageError("engine init_timeout must be shorter than boot_timeout");
  }
  return OkStatus();
}

// A word handed to ssh as an option value: never empty, never taken for an option, one word.
bool SshWord(const std::string& s) {
  if (s.empty() || s[0] == '-' || !PrintableAscii(s)) return false;
  return s.find_first_of(" \t'\"\\;&|$`<>(){}*?[]#~!") == std::string::npos;
}

Status CheckSsh(const CampaignPlan& plan) {
  const SshSettings& s = plan.ssh;
  if (!SshWord(s.host)) {
    return UsageError(fmt::format(
        "engine host '{}' is not a host name ssh takes (letters, digits, . - _ : and not "
        "starting with -)",
        EscapeControl(s.host)));
  }
  if (!SshWord(s.user)) {
    return UsageError(
        fmt::format("engine user '{}' is not a user name (one word, not starting "
                    "with -)",
                    EscapeControl(s.user)));
  }
  if (s.switch_mode != "kexec" && s.switch_mode != "reboot" && s.switch_mode != "alternate") {
    return UsageError(fmt::format("engine switch '{}' is unknown; give kexec, reboot or alternate",
                                  EscapeControl(s.switch_mode)));
  }
  if (s.remote_dir.size() < 2 || s.remote_dir[0] != '/' || !PrintableAscii(s.remote_dir) ||
      s.remote_dir.find("..") != std::string::npos) {
    return UsageError(
        fmt::format("engine remote_dir '{}' must be an absolute path on the machine, without ..",
                    EscapeControl(s.remote_dir)));
  }
  if (!s.ssh_config.empty())
    KSTACKLAB_RETURN_IF_ERROR(CheckFile(s.ssh_config, "engine ssh_config"));
  if (!PrintableAscii(s.cmdline)) return UsageError("engine cmdline must be printable ASCII");
  const bool reboots = s.switch_mode != "kexec";
  bool entry_used = false;
  for (const std::string& w : s.reboot_command)
    entry_used |= w.find("{entry}") != std::string::npos;
  if (reboots && s.reboot_command.empty()) {
    return UsageError("engine reboot_command is empty; give e.g. [grub-reboot, '{entry}']");
  }
  for (const Profile& p : plan.profiles) {
    if (reboots && entry_used && p.boot_entry.empty()) {
      return UsageError(fmt::format(
          "profile '{}' needs a boot_entry (engine switch {} boots it with {} ...): the name of "
          "its entry in the machine's boot menu",
          p.name, s.switch_mode, EscapeControl(s.reboot_command[0])));
    }
  }
  for (const auto& list : {s.reboot_command, s.recover}) {
    for (const std::string& w : list) {
      if (!PrintableAscii(w))
        return UsageError("engine reboot_command and recover must be printable ASCII");
    }
  }
  return OkStatus();
}

Status CheckLava(const CampaignPlan& plan) {
  const LavaSettings& l = plan.lava;
  if (!SshWord(l.device_type)) {
    return UsageError(fmt::format("engine device_type '{}' is not a LAVA device type name",
                                  EscapeControl(l.device_type)));
  }
  if (!l.identity.empty() && !SshWord(l.identity)) {
    return UsageError(fmt::format("engine identity '{}' is not a lavacli identity name",
                                  EscapeControl(l.identity)));
  }
  for (const std::string* url : {&l.rootfs, &l.kstacklab_url}) {
    if (!url->empty() && !IsFetchableUrl(*url)) {
      return UsageError(
          fmt::format("engine '{}' is not a URL the lab can fetch", EscapeControl(*url)));
    }
  }
  if (l.device_type == "qemu") {
    for (const Profile& p : plan.profiles) {
      if (p.cmdline.find_first_of("\"'\\") != std::string::npos) {
        return UsageError(fmt::format(
            "profile '{}' cmdline: the LAVA qemu device type passes it inside -append \"...\", "
            "which cannot hold quotes or backslashes",
            p.name));
      }
    }
  }
  for (const auto& list : {l.prompts, l.tags}) {
    for (const std::string& w : list) {
      if (w.empty() || !PrintableAscii(w))
        return UsageError("engine prompts and tags must be printable ASCII");
    }
  }
  return OkStatus();
}

// ---- values: the one check of what a plan may hold, whichever reader filled it -----------------
// The YAML reader refuses most of these at their line already; a stored plan (campaign.json,
// which anyone may hand over) reaches the same limits only here.

Status TextValue(const std::string& field, const std::string& s,
                 size_t max = PlanLimits::kMaxTextBytes) {
  if (s.size() > max) return UsageError(fmt::format("{} is longer than {} bytes", field, max));
  if (auto problem = TextProblem(s)) return UsageError(fmt::format("{} {}", field, *problem));
  return OkStatus();
}

Status ListValue(const std::string& field, const std::vector<std::string>& items, size_t max_items,
                 size_t max_bytes = PlanLimits::kMaxTextBytes) {
  if (items.size() > max_items) {
    return UsageError(fmt::format("{} has more than {} items", field, max_items));
  }
  for (const std::string& s : items) KSTACKLAB_RETURN_IF_ERROR(TextValue(field, s, max_bytes));
  return OkStatus();
}

Status CountValue(const std::string& field, uint64_t v, uint64_t lo, uint64_t hi) {
  if (v < lo || v > hi) {
    return UsageError(fmt::format("{} {} is out of range; give {} to {}", field, v, lo, hi));
  }
  return OkStatus();
}

Status SecondsValue(const std::string& field, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {
    return UsageError(
        fmt::format("{} {:g} s is out of range; give {:g} to {:g} seconds", field, v, lo, hi));
  }
  return OkStatus();
}

// A program the engine starts: a name looked up on PATH, or an absolute path. A relative path
// would name a different program from every working directory, and a leading '-' is an option.
Status ProgramValue(const std::string& field, const std::string& s) {
  KSTACKLAB_RETURN_IF_ERROR(TextValue(field, s));
  if (s.empty() || s[0] == '-' || !PrintableAscii(s) ||
      (s.find('/') != std::string::npos && s[0] != '/')) {
    return UsageError(
        fmt::format("{} '{}' is not a program: give a name found on PATH or an absolute path",
                    field, EscapeControl(s)));
  }
  return OkStatus();
}

Status CheckProfileValues(const Profile& p, const std::string& engine) {
  if (auto problem = NameProblem(p.name)) {
    return UsageError(fmt::format("profile name '{}' {}", EscapeControl(p.name), *problem));
  }
  const std::string who = fmt::format("profile '{}'", p.name);
  if (p.kernel.empty()) return UsageError(who + " needs a kernel");
  KSTACKLAB_RETURN_IF_ERROR(TextValue(who + " kernel", p.kernel));
  KSTACKLAB_RETURN_IF_ERROR(TextValue(who + " initrd", p.initrd));
  KSTACKLAB_RETURN_IF_ERROR(TextValue(who + " config", p.config));
  KSTACKLAB_RETURN_IF_ERROR(TextValue(who + " boot_entry", p.boot_entry, 256));
  KSTACKLAB_RETURN_IF_ERROR(TextValue(who + " release", p.release, PlanLimits::kMaxReleaseBytes));
  if (p.cmdline.size() > PlanLimits::kMaxCmdlineBytes || !PrintableAscii(p.cmdline)) {
    return UsageError(fmt::format(
        "{} cmdline must be printable ASCII of at most {} bytes (a kernel command line)", who,
        PlanLimits::kMaxCmdlineBytes));
  }
  for (const auto& [name, value] : p.sysctls) {
    KSTACKLAB_RETURN_IF_ERROR(TextValue(who + " sysctl name", name, 256));
    KSTACKLAB_RETURN_IF_ERROR(TextValue(fmt::format("{} sysctl {}", who, name), value, 256));
  }
  if (!p.boot_entry.empty() && engine != "ssh") {
    return UsageError(fmt::format(
        "{} boot_entry is a key of engine ssh (switch reboot); engine {} takes none", who, engine));
  }
  if (p.sysctls.size() > PlanLimits::kMaxSysctls) {
    return UsageError(fmt::format("{} sets more than {} sysctls", who, PlanLimits::kMaxSysctls));
  }
  return OkStatus();
}

Status CheckTargetValues(const CampaignPlan& plan) {
  if (!plan.target) return CountValue("boots", plan.boots, 1, PlanLimits::kMaxBoots);
  if (plan.boots != 0) return UsageError("give boots or target, not both");
  const Target& t = *plan.target;
  if (!(t.mdc_pct >= 0.01 && t.mdc_pct <= 1000)) {
    return UsageError(
        fmt::format("target mdc_pct {:g} is out of range; give 0.01 to 1000", t.mdc_pct));
  }
  KSTACKLAB_RETURN_IF_ERROR(CountValue("target min_boots", t.min_boots, 2, PlanLimits::kMaxBoots));
  KSTACKLAB_RETURN_IF_ERROR(CountValue("target max_boots", t.max_boots, 2, PlanLimits::kMaxBoots));
  if (t.budget_s != 0) {
    KSTACKLAB_RETURN_IF_ERROR(
        SecondsValue("target budget", t.budget_s, 1, PlanLimits::kMaxBudgetNs / 1e9));
  }
  return OkStatus();
}

Status CheckQemuValues(const QemuSettings& q) {
  KSTACKLAB_RETURN_IF_ERROR(ProgramValue("engine qemu", q.binary));
  KSTACKLAB_RETURN_IF_ERROR(ProgramValue("engine busybox", q.busybox));
  KSTACKLAB_RETURN_IF_ERROR(CountValue("engine cpus", q.cpus, 1, 64));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine memory", q.memory, 16));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine accel", q.accel, 8));
  if (q.pin.size() > 64) return UsageError("engine pin has more than 64 CPUs");
  for (uint64_t cpu : q.pin)
    KSTACKLAB_RETURN_IF_ERROR(CountValue("engine pin", cpu, 0, CPU_SETSIZE - 1));
  KSTACKLAB_RETURN_IF_ERROR(ListValue("engine qemu_args", q.extra_args, PlanLimits::kMaxQemuArgs));
  for (const std::string& a : q.extra_args) {
    if (!PrintableAscii(a)) return UsageError("engine qemu_args must be printable ASCII");
  }
  KSTACKLAB_RETURN_IF_ERROR(SecondsValue("engine boot_timeout", q.boot_timeout_s, 10, 7 * 86400));
  return SecondsValue("engine init_timeout", q.init_timeout_s, 5, 3600);
}

Status CheckSshValues(const SshSettings& s) {
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine host", s.host, 255));
  KSTACKLAB_RETURN_IF_ERROR(CountValue("engine port", s.port, 1, 65535));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine user", s.user, 64));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine ssh_config", s.ssh_config));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine switch", s.switch_mode, 16));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine cmdline", s.cmdline, PlanLimits::kMaxCmdlineBytes));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine remote_dir", s.remote_dir, 256));
  KSTACKLAB_RETURN_IF_ERROR(
      ListValue("engine reboot_command", s.reboot_command, PlanLimits::kMaxQemuArgs));
  KSTACKLAB_RETURN_IF_ERROR(ListValue("engine recover", s.recover, PlanLimits::kMaxQemuArgs));
  KSTACKLAB_RETURN_IF_ERROR(SecondsValue("engine connect_timeout", s.connect_timeout_s, 1, 600));
  KSTACKLAB_RETURN_IF_ERROR(SecondsValue("engine boot_timeout", s.boot_timeout_s, 10, 86400));
  return SecondsValue("engine run_timeout", s.run_timeout_s, 10, 7 * 86400);
}

Status CheckLavaValues(const LavaSettings& l) {
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine device_type", l.device_type, 64));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine identity", l.identity, 64));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine boot_method", l.boot_method, 32));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine deploy_to", l.deploy_to, 32));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine rootfs", l.rootfs));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine kstacklab_url", l.kstacklab_url));
  KSTACKLAB_RETURN_IF_ERROR(ListValue("engine prompts", l.prompts, PlanLimits::kMaxQemuArgs));
  KSTACKLAB_RETURN_IF_ERROR(ListValue("engine tags", l.tags, PlanLimits::kMaxQemuArgs));
  KSTACKLAB_RETURN_IF_ERROR(SecondsValue("engine job_timeout", l.job_timeout_s, 60, 7 * 86400));
  return ProgramValue("engine lavacli", l.lavacli);
}

Status CheckEngine(const CampaignPlan& plan) {
  if (plan.engine == "ssh") return CheckSsh(plan);
  if (plan.engine == "lava") return CheckLava(plan);
  if (plan.engine != "qemu") {
    return UsageError(
        fmt::format("engine '{}' is unknown; give qemu, ssh or lava", EscapeControl(plan.engine)));
  }
  return CheckQemu(plan);
}

}  // namespace

Status CheckPlanValues(const CampaignPlan& plan) {
  if (plan.profiles.empty()) return UsageError("the plan has no profiles");
  if (plan.profiles.size() > PlanLimits::kMaxProfiles) {
    return UsageError(fmt::format("more than {} profiles", PlanLimits::kMaxProfiles));
  }
  if (plan.engine != "qemu" && plan.engine != "ssh" && plan.engine != "lava") {
    return UsageError(
        fmt::format("engine '{}' is unknown; give qemu, ssh or lava", EscapeControl(plan.engine)));
  }
  for (const Profile& p : plan.profiles) {
    KSTACKLAB_RETURN_IF_ERROR(CheckProfileValues(p, plan.engine));
  }
  KSTACKLAB_RETURN_IF_ERROR(ListValue("run", plan.run_args, PlanLimits::kMaxRunArgs));
  KSTACKLAB_RETURN_IF_ERROR(CheckTargetValues(plan));
  KSTACKLAB_RETURN_IF_ERROR(CountValue("strength_samples", plan.strength_samples, 1000, 10000000));
  // Every engine's settings, the chosen one's and the defaults the others hold in a stored plan.
  KSTACKLAB_RETURN_IF_ERROR(CheckQemuValues(plan.qemu));
  KSTACKLAB_RETURN_IF_ERROR(CheckSshValues(plan.ssh));
  return CheckLavaValues(plan.lava);
}

int YamlFlowDepth(std::string_view text) {
  int depth = 0;
  int deepest = 0;
  char quote = 0;
  bool comment = false;
  for (char c : text) {
    if (comment) {
      comment = c != '\n';
    } else if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      comment = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

Expected<CampaignPlan> ParsePlanYaml(const std::string& text, const std::string& source,
                                     const std::string& base_dir) {
  if (text.size() > PlanLimits::kMaxFileBytes) {
    return UsageError(fmt::format("{} is larger than {} KiB; a plan is a short file", source,
                                  PlanLimits::kMaxFileBytes / 1024));
  }
  if (auto problem = TextProblem(text); problem && problem->find("UTF-8") != std::string::npos) {
    return UsageError(fmt::format("{} {}", source, *problem));
  }
  // yaml-cpp reads a raw NUL as the start of an escape (NUL and 'b' become U+0008), so the byte
  // would be reported as another character, or not at all.
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + nul, '\n'));
    return UsageError(fmt::format(
        "{} line {}: a NUL byte (\\0, U+0000) at offset {}; a plan is text", source, line, nul));
  }
  if (YamlFlowDepth(text) > kMaxYamlFlowDepth) {
    return UsageError(
        fmt::format("{} nests lists or mappings deeper than {} levels; a plan is "
                    "flat",
                    source, kMaxYamlFlowDepth));
  }
  Reader r(source);
  try {
    {
      std::istringstream in(text);
      YAML::Parser parser(in);
      AliasRefuser refuser;
      if (!parser.HandleNextDocument(refuser)) {
        return UsageError(fmt::format("{} is empty; see docs/campaign.md for a plan", source));
      }
      if (refuser.problem) {
        return UsageError(
            fmt::format("{} line {}: anchors and aliases (& *) are not taken in a plan", source,
                        refuser.problem->line + 1));
      }
      AliasRefuser second;
      if (parser.HandleNextDocument(second)) {
        return UsageError(fmt::format("{} holds more than one YAML document (---)", source));
      }
    }
    const YAML::Node root = YAML::Load(text);
    return ReadPlan(r, root, base_dir);
  } catch (const YAML::Exception& e) {
    return UsageError(fmt::format("{} line {}: not valid YAML: {}", source, e.mark.line + 1,
                                  EscapeControl(e.msg)));
  }
}

Expected<Profile> ParseProfileShorthand(const std::string& spec, const std::string& kernel) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    return UsageError(fmt::format(
        "'{}' is not NAME=CMDLINE, e.g. off=randomize_kstack_offset=off (the cmdline may be empty: "
        "'plain=')",
        EscapeControl(spec)));
  }
  Profile p;
  p.name = spec.substr(0, eq);
  p.cmdline = spec.substr(eq + 1);
  p.kernel = kernel;
  return p;
}

Status CheckPlan(CampaignPlan& plan) {
  KSTACKLAB_RETURN_IF_ERROR(CheckPlanValues(plan));
  std::set<std::string> names;
  for (Profile& p : plan.profiles) {
    if (auto problem = NameProblem(p.name)) {
      return UsageError(fmt::format("profile name '{}' {}", EscapeControl(p.name), *problem));
    }
    if (!names.insert(p.name).second) {
      return UsageError(
          fmt::format("profile name '{}' is given twice; names must be unique", p.name));
    }
    KSTACKLAB_RETURN_IF_ERROR(CheckProfile(p, plan.engine));
  }
  if (plan.boots == 0 && !plan.target) return UsageError("give a number of boots or a target");
  if (plan.boots > PlanLimits::kMaxBoots) {
    return UsageError(fmt::format("boots {} is more than {}", plan.boots, PlanLimits::kMaxBoots));
  }
  if (plan.target) {
    const Target& t = *plan.target;
    const auto& metrics = MetricNames();
    if (std::find(metrics.begin(), metrics.end(), t.metric) == metrics.end()) {
      return UsageError(
          fmt::format("target metric '{}' is unknown; give one of mean, p50, p99, "
                      "p99.9, ...",
                      EscapeControl(t.metric)));
    }
    if (!(t.mdc_pct > 0) || t.min_boots < 2 || t.max_boots < t.min_boots) {
      return UsageError("target: mdc_pct must be > 0 and 2 <= min_boots <= max_boots");
    }
    if (plan.profiles.size() < 2) {
      return UsageError("a target needs two profiles at least: the MDC is of a comparison");
    }
  }
  if (plan.run_args.size() > PlanLimits::kMaxRunArgs) {
    return UsageError(fmt::format("more than {} run arguments", PlanLimits::kMaxRunArgs));
  }
  for (const std::string& a : plan.run_args) {
    if (auto flag = ReservedRunArg(a)) {
      return UsageError(
          fmt::format("run argument '{}': the campaign sets {} itself (each boot's file is "
                      "DIR/PROFILE/boot-N.json, labelled with its profile); leave it out",
                      EscapeControl(a), *flag));
    }
    if (a.find('\n') != std::string::npos || a.find('\0') != std::string::npos) {
      return UsageError("a run argument holds a newline; give one argument per item");
    }
  }
  return CheckEngine(plan);
}

Expected<std::string> BzImageRelease(const std::string& path) {
  const std::string what = fmt::format("'{}'", EscapeControl(path));
  std::ifstream in(path, std::ios::binary);
  std::string head(size_t{64} * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  auto u16 = [&](size_t off) {
    return static_cast<unsigned>(static_cast<uint8_t>(head[off])) |
           (static_cast<unsigned>(static_cast<uint8_t>(head[off + 1])) << 8);
  };
  // Documentation/arch/x86/boot.rst: boot_flag 0xAA55 at 0x1FE, "HdrS" at 0x202, the protocol
  // version at 0x206 (2.00+ has kernel_version at 0x20E: a string at that value + 0x200).
  if (head.size() < 0x210 || u16(0x1FE) != 0xAA55 || head.compare(0x202, 4, "HdrS") != 0) {
    return UsageError(fmt::format(
        "{} is not an x86 kernel image (no bzImage setup header); give a bzImage such as "
        "/boot/vmlinuz-*",
        what));
  }
  if (u16(0x206) < 0x0200 || u16(0x20E) == 0) return std::string();
  const size_t off = u16(0x20E) + 0x200;
  if (off >= head.size()) return std::string();
  std::string release;
  for (size_t i = off; i < head.size() && i < off + 256; ++i) {
    const char c = head[i];
    if (c == '\0' || c == ' ') break;
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e) {
      return std::string();
    }
    release += c;
  }
  return release;
}

std::vector<std::string> CmdlineWords(const std::string& cmdline) {
  std::vector<std::string> words;
  std::string cur;
  bool quoted = false;
  for (char c : cmdline) {
    if (c == '"') quoted = !quoted;
    if (!quoted && (c == ' ' || c == '\t' || c == '\n')) {
      if (!cur.empty()) words.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

// ---- JSON form (campaign.json)
// -------------------------------------------------------------------

Json PlanToJson(const CampaignPlan& plan) {
  Json profiles = Json::array();
  for (const Profile& p : plan.profiles) {
    Json sys = Json::object();
    for (const auto& [k, v] : p.sysctls) sys[k] = v;
    profiles.push_back({{"name", p.name},
                        {"kernel", p.kernel},
                        {"release", p.release},
                        {"kernel_size", p.kernel_size},
                        {"kernel_mtime", p.kernel_mtime},
                        {"initrd", p.initrd},
                        {"config", p.config},
                        {"cmdline", p.cmdline},
                        {"boot_entry", p.boot_entry},
                        {"sysctl", std::move(sys)}});
  }
  Json j = {{"profiles", std::move(profiles)}, {"run", plan.run_args}};
  j["boots"] = plan.boots;
  if (plan.target) {
    j["target"] = {{"metric", plan.target->metric},
                   {"mdc_pct", plan.target->mdc_pct},
                   {"min_boots", plan.target->min_boots},
                   {"max_boots", plan.target->max_boots},
                   {"budget_s", plan.target->budget_s}};
  } else {
    j["target"] = nullptr;
  }
  j["order"] = {{"blocks", plan.randomised ? "randomised" : "fixed"}, {"seed", plan.seed}};
  const QemuSettings& q = plan.qemu;
  j["engine"] = {{"name", plan.engine},
                 {"qemu", q.binary},
                 {"busybox", q.busybox},
                 {"cpus", q.cpus},
                 {"memory", q.memory},
                 {"accel", q.accel},
                 {"pin", q.pin},
                 {"qemu_args", q.extra_args},
                 {"boot_timeout_s", q.boot_timeout_s},
                 {"init_timeout_s", q.init_timeout_s}};
  const SshSettings& s = plan.ssh;
  j["ssh"] = {{"host", s.host},
              {"port", s.port},
              {"user", s.user},
              {"ssh_config", s.ssh_config},
              {"switch", s.switch_mode},
              {"sudo", s.sudo},
              {"cmdline", s.cmdline},
              {"remote_dir", s.remote_dir},
              {"reboot_command", s.reboot_command},
              {"recover", s.recover},
              {"connect_timeout_s", s.connect_timeout_s},
              {"boot_timeout_s", s.boot_timeout_s},
              {"run_timeout_s", s.run_timeout_s}};
  const LavaSettings& l = plan.lava;
  j["lava"] = {
      {"device_type", l.device_type}, {"identity", l.identity}, {"boot_method", l.boot_method},
      {"deploy_to", l.deploy_to},     {"rootfs", l.rootfs},     {"kstacklab_url", l.kstacklab_url},
      {"prompts", l.prompts},         {"tags", l.tags},         {"job_timeout_s", l.job_timeout_s},
      {"lavacli", l.lavacli}};
  j["strength"] = plan.strength;
  j["strength_samples"] = plan.strength_samples;
  return j;
}

namespace {

// The readers below throw Json::exception on a missing or mistyped field; PlanFromJson turns it
// into its error.

Profile ProfileFromJson(const Json& pj) {
  Profile p;
  p.name = pj.at("name").get<std::string>();
  p.kernel = pj.at("kernel").get<std::string>();
  p.release = pj.at("release").get<std::string>();
  p.kernel_size = pj.at("kernel_size").get<uint64_t>();
  p.kernel_mtime = pj.at("kernel_mtime").get<int64_t>();
  p.initrd = pj.at("initrd").get<std::string>();
  p.config = pj.at("config").get<std::string>();
  p.cmdline = pj.at("cmdline").get<std::string>();
  p.boot_entry = pj.value("boot_entry", std::string());
  for (const auto& [k, v] : pj.at("sysctl").items())
    p.sysctls.emplace_back(k, v.get<std::string>());
  return p;
}

void ReadQemuSettings(const Json& e, QemuSettings& q) {
  q.binary = e.at("qemu").get<std::string>();
  q.busybox = e.at("busybox").get<std::string>();
  q.cpus = e.at("cpus").get<uint64_t>();
  q.memory = e.at("memory").get<std::string>();
  q.accel = e.at("accel").get<std::string>();
  q.pin = e.at("pin").get<std::vector<uint64_t>>();
  q.extra_args = e.at("qemu_args").get<std::vector<std::string>>();
  q.boot_timeout_s = e.at("boot_timeout_s").get<double>();
  q.init_timeout_s = e.at("init_timeout_s").get<double>();
}

void ReadSshSettings(const Json& sj, SshSettings& s) {
  s.host = sj.at("host").get<std::string>();
  s.port = sj.at("port").get<uint64_t>();
  s.user = sj.at("user").get<std::string>();
  s.ssh_config = sj.at("ssh_config").get<std::string>();
  s.switch_mode = sj.at("switch").get<std::string>();
  s.sudo = sj.at("sudo").get<bool>();
  s.cmdline = sj.at("cmdline").get<std::string>();
  s.remote_dir = sj.at("remote_dir").get<std::string>();
  s.reboot_command = sj.at("reboot_command").get<std::vector<std::string>>();
  s.recover = sj.at("recover").get<std::vector<std::string>>();
  s.connect_timeout_s = sj.at("connect_timeout_s").get<double>();
  s.boot_timeout_s = sj.at("boot_timeout_s").get<double>();
  s.run_timeout_s = sj.at("run_timeout_s").get<double>();
}

void ReadLavaSettings(const Json& lj, LavaSettings& l) {
  l.device_type = lj.at("device_type").get<std::string>();
  l.identity = lj.at("identity").get<std::string>();
  l.boot_method = lj.at("boot_method").get<std::string>();
  l.deploy_to = lj.at("deploy_to").get<std::string>();
  l.rootfs = lj.at("rootfs").get<std::string>();
  l.kstacklab_url = lj.at("kstacklab_url").get<std::string>();
  l.prompts = lj.at("prompts").get<std::vector<std::string>>();
  l.tags = lj.at("tags").get<std::vector<std::string>>();
  l.job_timeout_s = lj.at("job_timeout_s").get<double>();
  l.lavacli = lj.at("lavacli").get<std::string>();
}

}  // namespace

void KnownJsonKeys(const Json& obj, std::initializer_list<std::string_view> known,
                   const char* where) {
  if (!obj.is_object()) return;
  for (const auto& item : obj.items()) {
    if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
      throw Json::other_error::create(
          501, fmt::format("{}: unknown key '{}'", where, EscapeControl(item.key())), &obj);
    }
  }
}

namespace {

void KnownPlanKeys(const Json& j) {
  KnownJsonKeys(j,
                {"profiles", "run", "boots", "target", "order", "engine", "ssh", "lava", "strength",
                 "strength_samples"},
                "plan");
  for (const Json& pj : j.at("profiles")) {
    KnownJsonKeys(pj,
                  {"name", "kernel", "release", "kernel_size", "kernel_mtime", "initrd", "config",
                   "cmdline", "boot_entry", "sysctl"},
                  "plan profile");
  }
  KnownJsonKeys(j.at("target"), {"metric", "mdc_pct", "min_boots", "max_boots", "budget_s"},
                "plan target");
  KnownJsonKeys(j.at("order"), {"blocks", "seed"}, "plan order");
  KnownJsonKeys(j.at("engine"),
                {"name", "qemu", "busybox", "cpus", "memory", "accel", "pin", "qemu_args",
                 "boot_timeout_s", "init_timeout_s"},
                "plan engine");
  if (j.contains("ssh")) {
    KnownJsonKeys(
        j.at("ssh"),
        {"host", "port", "user", "ssh_config", "switch", "sudo", "cmdline", "remote_dir",
         "reboot_command", "recover", "connect_timeout_s", "boot_timeout_s", "run_timeout_s"},
        "plan ssh");
  }
  if (j.contains("lava")) {
    KnownJsonKeys(j.at("lava"),
                  {"device_type", "identity", "boot_method", "deploy_to", "rootfs", "kstacklab_url",
                   "prompts", "tags", "job_timeout_s", "lavacli"},
                  "plan lava");
  }
}

}  // namespace

Expected<CampaignPlan> PlanFromJson(const Json& j) {
  try {
    KnownPlanKeys(j);
    CampaignPlan plan;
    for (const Json& pj : j.at("profiles")) plan.profiles.push_back(ProfileFromJson(pj));
    plan.run_args = j.at("run").get<std::vector<std::string>>();
    plan.boots = j.at("boots").get<uint64_t>();
    if (!j.at("target").is_null()) {
      const Json& t = j.at("target");
      plan.target = Target{t.at("metric").get<std::string>(), t.at("mdc_pct").get<double>(),
                           t.at("min_boots").get<uint64_t>(), t.at("max_boots").get<uint64_t>(),
                           t.at("budget_s").get<double>()};
    }
    const std::string blocks = j.at("order").at("blocks").get<std::string>();
    if (blocks != "randomised" && blocks != "fixed") {
      return UsageError(fmt::format("its plan's order blocks '{}' is not randomised or fixed",
                                    EscapeControl(blocks)));
    }
    plan.randomised = blocks == "randomised";
    plan.seed = j.at("order").at("seed").get<uint64_t>();
    plan.seed_given = true;
    const Json& e = j.at("engine");
    plan.engine = e.at("name").get<std::string>();
    ReadQemuSettings(e, plan.qemu);
    // Campaigns begun before the ssh and lava engines have neither section.
    if (j.contains("ssh")) ReadSshSettings(j.at("ssh"), plan.ssh);
    if (j.contains("lava")) ReadLavaSettings(j.at("lava"), plan.lava);
    plan.strength = j.at("strength").get<bool>();
    plan.strength_samples = j.at("strength_samples").get<uint64_t>();
    // The stored plan holds what a plan file may hold, checked by the same function.
    KSTACKLAB_RETURN_IF_ERROR(CheckPlanValues(plan));
    return plan;
  } catch (const Json::exception& e) {
    return UsageError(fmt::format("its plan is damaged ({})", e.what()));
  }
}

}  // namespace kstacklab::campaign
