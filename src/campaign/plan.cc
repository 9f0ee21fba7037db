#include "kstacklab/campaign/plan.h"

#include <fmt/format.h>
#include <sched.h>
#include <sys/stat.h>
#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
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
    for (const auto& kv : map) {
      if (!kv.first.IsScalar())
        return Bad(kv.first, fmt::format("{}: a key must be a word", where));
      const std::string key = kv.first.Scalar();
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

Expected<Profile> ReadProfile(const Reader& r, const YAML::Node& node, const std::string& base) {
  KSTACKLAB_RETURN_IF_ERROR(
      r.Keys(node, "a profile", {"name", "kernel", "initrd", "cmdline", "config", "sysctl"}));
  Profile p;
  if (!node["name"]) return r.Bad(node, "a profile needs a name");
  KSTACKLAB_ASSIGN_OR_RETURN(p.name, r.Text(node["name"], "name", 64));
  const std::string who = fmt::format("profile '{}'", EscapeControl(p.name));
  if (!node["kernel"]) return r.Bad(node, who + " needs a kernel (a bzImage path)");
  KSTACKLAB_ASSIGN_OR_RETURN(p.kernel, r.Path(node["kernel"], who + " kernel", base));
  if (node["initrd"])
    KSTACKLAB_ASSIGN_OR_RETURN(p.initrd, r.Path(node["initrd"], who + " initrd", base));
  if (node["config"])
    KSTACKLAB_ASSIGN_OR_RETURN(p.config, r.Path(node["config"], who + " config", base));
  if (node["cmdline"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        p.cmdline, r.Text(node["cmdline"], who + " cmdline", PlanLimits::kMaxCmdlineBytes));
  }
  if (const YAML::Node s = node["sysctl"]) {
    if (!s.IsMap()) return r.Bad(s, who + " sysctl must be a mapping, e.g. {kernel.foo: 1}");
    if (s.size() > PlanLimits::kMaxSysctls) {
      return r.Bad(s, fmt::format("{} sets more than {} sysctls", who, PlanLimits::kMaxSysctls));
    }
    for (const auto& kv : s) {
      std::string name;
      KSTACKLAB_ASSIGN_OR_RETURN(name, r.Text(kv.first, who + " sysctl name", 256));
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

Status ReadEngine(const Reader& r, const YAML::Node& node, CampaignPlan& plan) {
  KSTACKLAB_RETURN_IF_ERROR(r.Keys(node, "engine",
                                   {"name", "cpus", "memory", "accel", "pin", "qemu_args",
                                    "boot_timeout", "init_timeout", "qemu", "busybox"}));
  QemuSettings& q = plan.qemu;
  if (node["name"])
    KSTACKLAB_ASSIGN_OR_RETURN(plan.engine, r.Text(node["name"], "engine name", 16));
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
    KSTACKLAB_ASSIGN_OR_RETURN(profile, ReadProfile(r, p, base));
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
  if (root["engine"]) KSTACKLAB_RETURN_IF_ERROR(ReadEngine(r, root["engine"], plan));
  if (root["strength"])
    KSTACKLAB_ASSIGN_OR_RETURN(plan.strength, r.Bool(root["strength"], "strength"));
  if (root["strength_samples"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(plan.strength_samples, r.Count(root["strength_samples"],
                                                              "strength_samples", 1000, 10000000));
  }
  return plan;
}

// The deepest nesting of flow brackets ([ and {) outside quotes and comments: yaml-cpp's parser
// recurses per level, so a plan of 60 KiB of '[' is refused before it is parsed.
constexpr int kMaxFlowDepth = 16;
int FlowDepth(const std::string& text) {
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

Status CheckProfile(Profile& p) {
  const std::string who = fmt::format("profile '{}'", p.name);
  std::error_code ec;
  p.kernel = fs::absolute(p.kernel, ec).lexically_normal().string();
  KSTACKLAB_RETURN_IF_ERROR(CheckFile(p.kernel, who + " kernel"));
  KSTACKLAB_ASSIGN_OR_RETURN(p.release, BzImageRelease(p.kernel));
  struct stat st {};
  if (::stat(p.kernel.c_str(), &st) == 0) {
    p.kernel_size = static_cast<uint64_t>(st.st_size);
    p.kernel_mtime = st.st_mtim.tv_sec;
  }
  if (!p.initrd.empty()) {
    p.initrd = fs::absolute(p.initrd, ec).lexically_normal().string();
    KSTACKLAB_RETURN_IF_ERROR(CheckFile(p.initrd, who + " initrd"));
  }
  if (p.config.empty() && !p.release.empty()) {
    const fs::path beside = fs::path(p.kernel).parent_path() / ("config-" + p.release);
    if (fs::is_regular_file(beside, ec)) p.config = beside.string();
  }
  if (!p.config.empty()) {
    p.config = fs::absolute(p.config, ec).lexically_normal().string();
    KSTACKLAB_RETURN_IF_ERROR(CheckFile(p.config, who + " config"));
  }
  if (p.cmdline.size() > PlanLimits::kMaxCmdlineBytes || !PrintableAscii(p.cmdline)) {
    return UsageError(fmt::format(
        "{} cmdline must be printable ASCII of at most {} bytes (a kernel command line)", who,
        PlanLimits::kMaxCmdlineBytes));
  }
  std::set<std::string> names;
  for (const auto& [name, value] : p.sysctls) {
    if (auto problem = SysctlProblem(name, value)) {
      return UsageError(fmt::format("{} sysctl '{}' {}", who, EscapeControl(name), *problem));
    }
    if (!names.insert(name).second) {
      return UsageError(fmt::format("{} sets sysctl '{}' twice", who, name));
    }
  }
  return OkStatus();
}

Status CheckEngine(const CampaignPlan& plan) {
  if (plan.engine != "qemu") {
    return UsageError(fmt::format(
        "engine '{}' is not available in this version of kstacklab; use engine: {{name: qemu}}",
        EscapeControl(plan.engine)));
  }
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

}  // namespace

Expected<CampaignPlan> ParsePlanYaml(const std::string& text, const std::string& source,
                                     const std::string& base_dir) {
  if (text.size() > PlanLimits::kMaxFileBytes) {
    return UsageError(fmt::format("{} is larger than {} KiB; a plan is a short file", source,
                                  PlanLimits::kMaxFileBytes / 1024));
  }
  if (auto problem = TextProblem(text); problem && problem->find("UTF-8") != std::string::npos) {
    return UsageError(fmt::format("{} {}", source, *problem));
  }
  if (FlowDepth(text) > kMaxFlowDepth) {
    return UsageError(
        fmt::format("{} nests lists or mappings deeper than {} levels; a plan is "
                    "flat",
                    source, kMaxFlowDepth));
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
  if (plan.profiles.empty()) return UsageError("the plan has no profiles");
  if (plan.profiles.size() > PlanLimits::kMaxProfiles) {
    return UsageError(fmt::format("more than {} profiles", PlanLimits::kMaxProfiles));
  }
  std::set<std::string> names;
  for (Profile& p : plan.profiles) {
    if (auto problem = NameProblem(p.name)) {
      return UsageError(fmt::format("profile name '{}' {}", EscapeControl(p.name), *problem));
    }
    if (!names.insert(p.name).second) {
      return UsageError(
          fmt::format("profile name '{}' is given twice; names must be unique", p.name));
    }
    KSTACKLAB_RETURN_IF_ERROR(CheckProfile(p));
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
  j["strength"] = plan.strength;
  j["strength_samples"] = plan.strength_samples;
  return j;
}

Expected<CampaignPlan> PlanFromJson(const Json& j) {
  try {
    CampaignPlan plan;
    for (const Json& pj : j.at("profiles")) {
      Profile p;
      p.name = pj.at("name").get<std::string>();
      p.kernel = pj.at("kernel").get<std::string>();
      p.release = pj.at("release").get<std::string>();
      p.kernel_size = pj.at("kernel_size").get<uint64_t>();
      p.kernel_mtime = pj.at("kernel_mtime").get<int64_t>();
      p.initrd = pj.at("initrd").get<std::string>();
      p.config = pj.at("config").get<std::string>();
      p.cmdline = pj.at("cmdline").get<std::string>();
      for (const auto& [k, v] : pj.at("sysctl").items())
        p.sysctls.emplace_back(k, v.get<std::string>());
      plan.profiles.push_back(std::move(p));
    }
    plan.run_args = j.at("run").get<std::vector<std::string>>();
    plan.boots = j.at("boots").get<uint64_t>();
    if (!j.at("target").is_null()) {
      const Json& t = j.at("target");
      plan.target = Target{t.at("metric").get<std::string>(), t.at("mdc_pct").get<double>(),
                           t.at("min_boots").get<uint64_t>(), t.at("max_boots").get<uint64_t>(),
                           t.at("budget_s").get<double>()};
    }
    plan.randomised = j.at("order").at("blocks").get<std::string>() == "randomised";
    plan.seed = j.at("order").at("seed").get<uint64_t>();
    plan.seed_given = true;
    const Json& e = j.at("engine");
    plan.engine = e.at("name").get<std::string>();
    QemuSettings& q = plan.qemu;
    q.binary = e.at("qemu").get<std::string>();
    q.busybox = e.at("busybox").get<std::string>();
    q.cpus = e.at("cpus").get<uint64_t>();
    q.memory = e.at("memory").get<std::string>();
    q.accel = e.at("accel").get<std::string>();
    q.pin = e.at("pin").get<std::vector<uint64_t>>();
    q.extra_args = e.at("qemu_args").get<std::vector<std::string>>();
    q.boot_timeout_s = e.at("boot_timeout_s").get<double>();
    q.init_timeout_s = e.at("init_timeout_s").get<double>();
    plan.strength = j.at("strength").get<bool>();
    plan.strength_samples = j.at("strength_samples").get<uint64_t>();
    if (plan.profiles.empty() || plan.MaxBlocks() == 0 ||
        plan.MaxBlocks() > PlanLimits::kMaxBoots) {
      return UsageError("its plan has no profiles or no boots");
    }
    return plan;
  } catch (const Json::exception& e) {
    return UsageError(fmt::format("its plan is damaged ({})", e.what()));
  }
}

}  // namespace kstacklab::campaign
