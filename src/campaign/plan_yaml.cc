// The plan file's reader (YAML, yaml-cpp): every key known, every value typed and bounded, the
// engine's section read by its row of the engine table (engines.h) through PlanSection.
#include <fmt/format.h>
#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/campaign/engines.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/campaign/plan_fields.h"
#include "kstacklab/common/text.h"

namespace kstacklab::campaign {
namespace {

namespace fs = std::filesystem;

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
  // A bisect's plan: the boots are the rule's, so `boots` and `target` are refused, not required.
  bool bisect = false;

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
                             size_t max = CampaignLimits::kMaxTextBytes) const {
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

  Expected<double> Number(const YAML::Node& node, const std::string& key, double lo, double hi,
                          const char* example) const {
    std::string s;
    KSTACKLAB_ASSIGN_OR_RETURN(s, Text(node, key, 32));
    auto v = ParseNumber(s, key, example, lo, hi);
    if (!v.ok()) return Bad(node, v.error().message);
    return *v;
  }

  Expected<double> DurationS(const YAML::Node& node, const std::string& key, double lo_s,
                             double hi_s, const char* example) const {
    std::string s;
    KSTACKLAB_ASSIGN_OR_RETURN(s, Text(node, key, 32));
    auto ns = ParseDurationNs(s, key, lo_s * 1e9, hi_s * 1e9, example);
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
                              const EngineRow& engine) {
  KSTACKLAB_RETURN_IF_ERROR(r.Keys(node, "a profile",
                                   {"name", "kernel", "initrd", "cmdline", "config", "sysctl",
                                    "boot_entry", "release", "arch"}));
  Profile p;
  if (!node["name"]) return r.Bad(node, "a profile needs a name");
  KSTACKLAB_ASSIGN_OR_RETURN(p.name, r.Text(node["name"], "name", 64));
  const std::string who = fmt::format("profile '{}'", EscapeControl(p.name));
  // An engine that fetches its files itself (lava): kernel and initrd are URLs, taken as written.
  const bool urls = engine.files == ProfileFiles::kUrls;
  if (!node["kernel"]) {
    return r.Bad(node,
                 who + (urls ? " needs a kernel (a URL)" : " needs a kernel (an image's path)"));
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
  if (node["boot_entry"] && !engine.boot_entries) {
    return r.Bad(node["boot_entry"],
                 fmt::format("{} boot_entry is a key of engine ssh (switch reboot); engine {} "
                             "takes none: leave it out",
                             who, engine.name));
  }
  if (node["boot_entry"])
    KSTACKLAB_ASSIGN_OR_RETURN(p.boot_entry, r.Text(node["boot_entry"], who + " boot_entry", 256));
  if (node["release"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        p.release, r.Text(node["release"], who + " release", CampaignLimits::kMaxReleaseBytes));
  }
  if (node["arch"]) KSTACKLAB_ASSIGN_OR_RETURN(p.arch, r.Text(node["arch"], who + " arch", 16));
  if (node["cmdline"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        p.cmdline, r.Text(node["cmdline"], who + " cmdline", CampaignLimits::kMaxCmdlineBytes));
  }
  if (const YAML::Node s = node["sysctl"]) {
    if (!s.IsMap()) return r.Bad(s, who + " sysctl must be a mapping, e.g. {kernel.foo: 1}");
    if (s.size() > CampaignLimits::kMaxSysctls) {
      return r.Bad(s,
                   fmt::format("{} sets more than {} sysctls", who, CampaignLimits::kMaxSysctls));
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

// A bisect plan's `kernels:` section: a git range and its build (git_range.h). The commits are
// resolved later, by git.
Expected<GitRange> ReadGitRange(const Reader& r, const YAML::Node& node, const std::string& base) {
  KSTACKLAB_RETURN_IF_ERROR(
      r.Keys(node, "kernels",
             {"tree", "good", "bad", "command", "image", "cmdline", "initrd", "build_timeout"}));
  GitRange g;
  for (const char* key : {"tree", "good", "bad", "command", "image"}) {
    if (!node[key]) {
      return r.Bad(node, fmt::format("kernels needs {}: tree, good, bad, command (a list, e.g. "
                                     "[make, -j8, bzImage]) and image (e.g. "
                                     "arch/x86/boot/bzImage)",
                                     key));
    }
  }
  KSTACKLAB_ASSIGN_OR_RETURN(g.tree, r.Path(node["tree"], "kernels tree", base));
  KSTACKLAB_ASSIGN_OR_RETURN(g.good, r.Text(node["good"], "kernels good", 256));
  KSTACKLAB_ASSIGN_OR_RETURN(g.bad, r.Text(node["bad"], "kernels bad", 256));
  KSTACKLAB_ASSIGN_OR_RETURN(
      g.command, r.Words(node["command"], "kernels command", CampaignLimits::kMaxRunArgs));
  KSTACKLAB_ASSIGN_OR_RETURN(g.image, r.Text(node["image"], "kernels image"));
  if (node["cmdline"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        g.cmdline, r.Text(node["cmdline"], "kernels cmdline", CampaignLimits::kMaxCmdlineBytes));
  }
  if (node["initrd"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(g.initrd, r.Path(node["initrd"], "kernels initrd", base));
  }
  if (node["build_timeout"]) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        g.build_timeout_s,
        r.DurationS(node["build_timeout"], "kernels build_timeout",
                    GitRangeLimits::kMinBuildTimeoutS, GitRangeLimits::kMaxBuildTimeoutS, "2h"));
  }
  std::error_code ec;
  g.tree = fs::absolute(g.tree, ec).lexically_normal().string();
  if (!g.initrd.empty()) g.initrd = fs::absolute(g.initrd, ec).lexically_normal().string();
  if (Status st = CheckGitRangeValues(g); !st.ok()) return r.Bad(node, st.error().message);
  return g;
}

// A mapping of the plan file as the plan's fields and an engine's row read it: "PART KEY" ("engine
// cpus", "target mdc_pct"; the top level's keys alone) and the line in messages.
class YamlSection : public PlanSection {
 public:
  YamlSection(const Reader& r, const YAML::Node& node, const std::string& base,
              std::string_view part)
      : r_(r), node_(node), base_(base), part_(part) {}
  bool Has(std::string_view key) const override { return static_cast<bool>(At(key)); }
  Expected<std::string> Text(std::string_view key, size_t max) const override {
    return r_.Text(At(key), Name(key), max);
  }
  Expected<uint64_t> Count(std::string_view key, uint64_t lo, uint64_t hi) const override {
    return r_.Count(At(key), Name(key), lo, hi);
  }
  Expected<double> Number(std::string_view key, double lo, double hi,
                          const char* example) const override {
    return r_.Number(At(key), Name(key), lo, hi, example);
  }
  Expected<std::vector<uint64_t>> Counts(std::string_view key, size_t max_items, uint64_t lo,
                                         uint64_t hi, std::string_view shape) const override {
    const YAML::Node list = At(key);
    if (!list.IsSequence() || list.size() == 0 || list.size() > max_items) {
      return r_.Bad(list, std::string(shape));
    }
    std::vector<uint64_t> out;
    for (const YAML::Node& item : list) {
      uint64_t v = 0;
      KSTACKLAB_ASSIGN_OR_RETURN(v, r_.Count(item, Name(key), lo, hi));
      out.push_back(v);
    }
    return out;
  }
  Expected<double> DurationS(std::string_view key, double lo_s, double hi_s,
                             const char* example) const override {
    return r_.DurationS(At(key), Name(key), lo_s, hi_s, example);
  }
  Expected<bool> Bool(std::string_view key) const override { return r_.Bool(At(key), Name(key)); }
  Expected<std::vector<std::string>> Words(std::string_view key, size_t max_items) const override {
    return r_.Words(At(key), Name(key), max_items);
  }
  Expected<std::string> Path(std::string_view key) const override {
    return r_.Path(At(key), Name(key), base_);
  }
  Error Bad(const std::string& what) const override { return r_.Bad(node_, what); }
  std::string Name(std::string_view key) const override {
    return part_.empty() ? std::string(key) : fmt::format("{} {}", part_, key);
  }

 private:
  YAML::Node At(std::string_view key) const { return node_[std::string(key)]; }

  const Reader& r_;
  const YAML::Node& node_;
  const std::string& base_;
  std::string_view part_;
};

// Keys of a mapping: the plan's fields of `part` and `more` (what other code reads there).
std::set<std::string> KeysOf(PlanPart part, std::initializer_list<const char*> more = {}) {
  std::set<std::string> keys(more.begin(), more.end());
  for (std::string& k : PartKeys(part)) keys.insert(std::move(k));
  return keys;
}

// `target:` or `order:`: its keys, then its fields.
Status ReadPart(const Reader& r, const YAML::Node& node, const std::string& base, PlanPart part,
                CampaignPlan& plan) {
  KSTACKLAB_RETURN_IF_ERROR(r.Keys(node, PartKey(part), KeysOf(part)));
  return ReadPlanPart(part, YamlSection(r, node, base, PartKey(part)), plan);
}

// The engine's row first: the keys it takes and how profiles name their files depend on it.
Expected<const EngineRow*> EngineOf(const Reader& r, const YAML::Node& root, EngineTable table) {
  const YAML::Node node = root["engine"];
  if (!node) return &table.front();
  if (!node.IsMap()) return r.Bad(node, "engine must be a mapping, e.g. {name: qemu}");
  if (!node["name"]) return &table.front();
  std::string name;
  KSTACKLAB_ASSIGN_OR_RETURN(name, r.Text(node["name"], "engine name", 16));
  auto row = FindEngine(name, table);
  if (!row.ok()) {
    return r.Bad(node["name"], fmt::format("engine name '{}' is unknown; give {}",
                                           EscapeControl(name), EngineNames(table)));
  }
  return *row;
}

Status ReadEngine(const Reader& r, const YAML::Node& node, const std::string& base,
                  PlanEngine& engine) {
  const EngineRow& row = engine.row();
  std::set<std::string> keys = {"name"};
  for (std::string_view k : row.yaml_keys) keys.emplace(k);
  KSTACKLAB_RETURN_IF_ERROR(r.Keys(node, fmt::format("engine {}", row.name), keys));
  return row.read(YamlSection(r, node, base, "engine"), engine.settings());
}

Status ReadProfiles(const Reader& r, const YAML::Node& root, const std::string& base,
                    const EngineRow& engine, CampaignPlan& plan) {
  const YAML::Node profiles = root["profiles"];
  if (!profiles || !profiles.IsSequence() || profiles.size() == 0) {
    return r.Bad(
        profiles ? profiles : root,
        "profiles must be a list of {name, kernel, cmdline, ...}; the first is the baseline");
  }
  if (profiles.size() > CampaignLimits::kMaxProfiles) {
    return r.Bad(profiles, fmt::format("more than {} profiles", CampaignLimits::kMaxProfiles));
  }
  for (const YAML::Node& p : profiles) {
    Profile profile;
    KSTACKLAB_ASSIGN_OR_RETURN(profile, ReadProfile(r, p, base, engine));
    plan.profiles.push_back(std::move(profile));
  }
  return OkStatus();
}

// The kernels of a bisect plan given as a git range (`kernels:`, when `range` may take one):
// true when it is, the plan's profiles then left empty.
Expected<bool> ReadKernelsRange(const Reader& r, const YAML::Node& root, const std::string& base,
                                std::optional<GitRange>* range) {
  if (!root["kernels"]) return false;
  if (range == nullptr) {
    return r.Bad(root["kernels"],
                 "kernels (a git range) is a key of a bisect's plan; a campaign gives profiles");
  }
  if (root["profiles"]) {
    return r.Bad(root["kernels"],
                 "give the kernels as profiles (built images) or as kernels (a git range), not "
                 "both");
  }
  KSTACKLAB_ASSIGN_OR_RETURN(*range, ReadGitRange(r, root["kernels"], base));
  return true;
}

Expected<CampaignPlan> ReadPlan(const Reader& r, const YAML::Node& root, const std::string& base,
                                EngineTable table, std::optional<GitRange>* range) {
  KSTACKLAB_RETURN_IF_ERROR(
      r.Keys(root, "the plan",
             KeysOf(PlanPart::kPlan, {"profiles", "kernels", "target", "order", "engine"})));
  CampaignPlan plan;
  const EngineRow* engine = nullptr;
  KSTACKLAB_ASSIGN_OR_RETURN(engine, EngineOf(r, root, table));
  plan.engine = PlanEngine(*engine);
  bool git_range = false;
  KSTACKLAB_ASSIGN_OR_RETURN(git_range, ReadKernelsRange(r, root, base, range));
  if (git_range && engine->files == ProfileFiles::kUrls) {
    return r.Bad(root["kernels"],
                 fmt::format("engine {} boots kernels from URLs; a git range's images are built "
                             "here: give the kernels as profiles",
                             engine->name));
  }
  if (!git_range) KSTACKLAB_RETURN_IF_ERROR(ReadProfiles(r, root, base, *engine, plan));
  if (r.bisect && (root["boots"] || root["target"])) {
    return r.Bad(root["boots"] ? root["boots"] : root["target"],
                 "a bisect's rule decides how often each kernel boots; remove boots and target");
  }
  if (root["boots"] && root["target"]) {
    return r.Bad(root["target"], "give boots or target, not both");
  }
  if (!root["boots"] && !root["target"] && !r.bisect) {  // a bisect's campaigns set their own
    return r.Bad(root, "give boots (per profile) or target {metric, mdc_pct, max_boots, budget}");
  }
  KSTACKLAB_RETURN_IF_ERROR(ReadPlanPart(PlanPart::kPlan, YamlSection(r, root, base, ""), plan));
  if (root["target"]) {
    plan.target = Target{};
    KSTACKLAB_RETURN_IF_ERROR(ReadPart(r, root["target"], base, PlanPart::kTarget, plan));
  }
  if (root["order"])
    KSTACKLAB_RETURN_IF_ERROR(ReadPart(r, root["order"], base, PlanPart::kOrder, plan));
  if (root["engine"]) KSTACKLAB_RETURN_IF_ERROR(ReadEngine(r, root["engine"], base, plan.engine));
  return plan;
}

}  // namespace

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

namespace {
Expected<CampaignPlan> ParseYaml(const std::string& text, const std::string& source,
                                 const std::string& base_dir, EngineTable table, bool bisect,
                                 std::optional<GitRange>* range = nullptr) {
  if (text.size() > CampaignLimits::kMaxFileBytes) {
    return UsageError(fmt::format("{} is larger than {} KiB; a plan is a short file", source,
                                  CampaignLimits::kMaxFileBytes / 1024));
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
  r.bisect = bisect;
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
    return ReadPlan(r, root, base_dir, table, range);
  } catch (const YAML::Exception& e) {
    return UsageError(fmt::format("{} line {}: not valid YAML: {}", source, e.mark.line + 1,
                                  EscapeControl(e.msg)));
  }
}

}  // namespace

Expected<CampaignPlan> ParsePlanYaml(const std::string& text, const std::string& source,
                                     const std::string& base_dir, EngineTable table) {
  return ParseYaml(text, source, base_dir, table, false);
}

Expected<CampaignPlan> ParsePlanYaml(const std::string& text, const std::string& source,
                                     const std::string& base_dir) {
  return ParseYaml(text, source, base_dir, Engines(), false);
}

Expected<CampaignPlan> ParseBisectPlanYaml(const std::string& text, const std::string& source,
                                           const std::string& base_dir) {
  return ParseYaml(text, source, base_dir, Engines(), true);
}

Expected<CampaignPlan> ParseBisectPlanYaml(const std::string& text, const std::string& source,
                                           const std::string& base_dir,
                                           std::optional<GitRange>* range) {
  range->reset();
  return ParseYaml(text, source, base_dir, Engines(), true, range);
}

}  // namespace kstacklab::campaign
