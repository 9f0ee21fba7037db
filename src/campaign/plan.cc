// A plan's checks (CheckPlanValues, CheckPlan: everything before boot 1) and its JSON form
// (campaign.json). The YAML reader is plan_yaml.cc; each engine's own settings are its row's
// (engines.h).
#include "kstacklab/campaign/plan.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "kstacklab/campaign/arch.h"
#include "kstacklab/campaign/engines.h"
#include "kstacklab/campaign/kernel_image.h"
#include "kstacklab/campaign/plan_fields.h"
#include "kstacklab/common/text.h"
#include "kstacklab/results/results.h"

namespace kstacklab::campaign {
namespace {

namespace fs = std::filesystem;

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
  if (p.release.size() > CampaignLimits::kMaxReleaseBytes) {
    return UsageError(
        fmt::format("{} release '{}' is longer than {} bytes, more than uname -r can print", who,
                    EscapeControl(p.release.substr(0, 80)), CampaignLimits::kMaxReleaseBytes));
  }
  return OkStatus();
}

// A profile's image on this host: an absolute path to a readable kernel image of a known format
// whose release and architecture agree with the plan's, its identity (size, mtime) for a resume,
// and a readable initrd.
Status CheckLocalImage(Profile& p) {
  const std::string who = fmt::format("profile '{}'", p.name);
  std::error_code ec;
  p.kernel = fs::absolute(p.kernel, ec).lexically_normal().string();
  KSTACKLAB_RETURN_IF_ERROR(CheckFile(p.kernel, who + " kernel"));
  KernelImage image;
  KSTACKLAB_ASSIGN_OR_RETURN(image, ReadKernelImage(p.kernel));
  if (!p.release.empty() && !image.release.empty() && p.release != image.release) {
    return UsageError(fmt::format("{} release '{}' is not the image's own ({}); leave release out",
                                  who, EscapeControl(p.release), image.release));
  }
  if (p.release.empty()) p.release = image.release;
  if (!p.arch.empty() && p.arch != image.arch->name) {
    return UsageError(fmt::format(
        "{} arch '{}' is not its image's: '{}' is an {} {}; leave arch out", who,
        EscapeControl(p.arch), EscapeControl(p.kernel), image.arch->name, image.format));
  }
  p.arch = image.arch->name;
  struct stat st {};
  if (::stat(p.kernel.c_str(), &st) == 0) {
    p.kernel_size = static_cast<uint64_t>(st.st_size);
    p.kernel_mtime = st.st_mtim.tv_sec;
  }
  if (!p.initrd.empty()) {
    p.initrd = fs::absolute(p.initrd, ec).lexically_normal().string();
    KSTACKLAB_RETURN_IF_ERROR(CheckFile(p.initrd, who + " initrd"));
  }
  return OkStatus();
}

Status CheckProfile(Profile& p, const PlanEngine& engine) {
  const EngineRow& row = engine.row();
  if (row.files == ProfileFiles::kLocal) KSTACKLAB_RETURN_IF_ERROR(CheckLocalImage(p));
  KSTACKLAB_RETURN_IF_ERROR(row.check_profile(engine.settings(), p));
  if (!p.config.empty()) {
    std::error_code ec;
    p.config = fs::absolute(p.config, ec).lexically_normal().string();
    KSTACKLAB_RETURN_IF_ERROR(CheckFile(p.config, fmt::format("profile '{}' config", p.name)));
  }
  return CheckCmdlineAndSysctls(p);
}

// ---- values: the one check of what a plan may hold, whichever reader filled it -----------------
// The YAML reader refuses most of these at their line already; a stored plan (campaign.json,
// which anyone may hand over) reaches the same limits only here.

Status CheckProfileValues(const Profile& p, const EngineRow& engine) {
  if (auto problem = NameProblem(p.name)) {
    return UsageError(fmt::format("profile name '{}' {}", EscapeControl(p.name), *problem));
  }
  const std::string who = fmt::format("profile '{}'", p.name);
  if (p.kernel.empty()) return UsageError(who + " needs a kernel");
  KSTACKLAB_RETURN_IF_ERROR(TextValue(who + " kernel", p.kernel));
  KSTACKLAB_RETURN_IF_ERROR(TextValue(who + " initrd", p.initrd));
  KSTACKLAB_RETURN_IF_ERROR(TextValue(who + " config", p.config));
  KSTACKLAB_RETURN_IF_ERROR(TextValue(who + " boot_entry", p.boot_entry, 256));
  KSTACKLAB_RETURN_IF_ERROR(
      TextValue(who + " release", p.release, CampaignLimits::kMaxReleaseBytes));
  if (p.cmdline.size() > CampaignLimits::kMaxCmdlineBytes || !PrintableAscii(p.cmdline)) {
    return UsageError(fmt::format(
        "{} cmdline must be printable ASCII of at most {} bytes (a kernel command line)", who,
        CampaignLimits::kMaxCmdlineBytes));
  }
  for (const auto& [name, value] : p.sysctls) {
    KSTACKLAB_RETURN_IF_ERROR(TextValue(who + " sysctl name", name, 256));
    KSTACKLAB_RETURN_IF_ERROR(TextValue(fmt::format("{} sysctl {}", who, name), value, 256));
  }
  if (!p.boot_entry.empty() && !engine.boot_entries) {
    return UsageError(
        fmt::format("{} boot_entry is a key of engine ssh (switch reboot); engine {} takes none",
                    who, engine.name));
  }
  if (p.sysctls.size() > CampaignLimits::kMaxSysctls) {
    return UsageError(
        fmt::format("{} sets more than {} sysctls", who, CampaignLimits::kMaxSysctls));
  }
  if (!p.arch.empty() && FindArchitecture(p.arch) == nullptr) {
    return UsageError(fmt::format("{} arch '{}' is unknown; give {} (as uname -m prints it)", who,
                                  EscapeControl(p.arch.substr(0, 80)), ArchitectureNames()));
  }
  return OkStatus();
}

// Every profile has one architecture (an engine URL's profile without one is x86_64), and the
// kstacklab that runs there is built for it.
Status CheckArchitecture(CampaignPlan& plan) {
  for (Profile& p : plan.profiles) {
    if (p.arch.empty()) p.arch = "x86_64";
  }
  const Profile& first = plan.profiles.front();
  for (const Profile& p : plan.profiles) {
    if (p.arch != first.arch) {
      return UsageError(fmt::format(
          "profile '{}' kernel '{}' is {} but profile '{}' kernel '{}' is {}: a campaign boots "
          "one architecture; give every profile an image of one",
          first.name, EscapeControl(first.kernel), first.arch, p.name, EscapeControl(p.kernel),
          p.arch));
    }
  }
  if (plan.engine.row().files != ProfileFiles::kLocal) return OkStatus();
  if (plan.kstacklab.empty()) {
    if (first.arch == HostArchitecture().name) return OkStatus();
    return UsageError(fmt::format(
        "profile '{}' kernel '{}' is {} but this kstacklab is built for {}: name a kstacklab "
        "built for {} (the plan's kstacklab: PATH, or the shorthand's flag of that name)",
        first.name, EscapeControl(first.kernel), first.arch, HostArchitecture().name, first.arch));
  }
  std::error_code ec;
  plan.kstacklab = fs::absolute(plan.kstacklab, ec).lexically_normal().string();
  const Architecture* binary = nullptr;
  KSTACKLAB_ASSIGN_OR_RETURN(binary, ElfArchitecture(plan.kstacklab, "kstacklab"));
  if (first.arch != binary->name) {
    return UsageError(fmt::format(
        "kstacklab '{}' is built for {} but profile '{}' kernel '{}' is {}: name a kstacklab "
        "built for {}",
        EscapeControl(plan.kstacklab), binary->name, first.name, EscapeControl(first.kernel),
        first.arch, first.arch));
  }
  return OkStatus();
}

// Boots or a target (the fields' own values: CheckFieldValues).
Status CheckBootsOrTarget(const CampaignPlan& plan) {
  if (!plan.target) return CountValue("boots", plan.boots, 1, CampaignLimits::kMaxBoots);
  if (plan.boots != 0) return UsageError("give boots or target, not both");
  return OkStatus();
}

}  // namespace

Status CheckPlanValues(const CampaignPlan& plan) {
  if (plan.profiles.empty()) return UsageError("the plan has no profiles");
  if (plan.profiles.size() > CampaignLimits::kMaxProfiles) {
    return UsageError(fmt::format("more than {} profiles", CampaignLimits::kMaxProfiles));
  }
  for (const Profile& p : plan.profiles) {
    KSTACKLAB_RETURN_IF_ERROR(CheckProfileValues(p, plan.engine.row()));
  }
  KSTACKLAB_RETURN_IF_ERROR(CheckBootsOrTarget(plan));
  KSTACKLAB_RETURN_IF_ERROR(CheckFieldValues(plan));
  // PlanFromJson holds the other engines' sections of a stored plan to their rows' checks too.
  return plan.engine.row().check_values(plan.engine.settings());
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
  KSTACKLAB_RETURN_IF_ERROR(CheckArchitecture(plan));
  if (plan.boots == 0 && !plan.target) return UsageError("give a number of boots or a target");
  if (plan.boots > CampaignLimits::kMaxBoots) {
    return UsageError(
        fmt::format("boots {} is more than {}", plan.boots, CampaignLimits::kMaxBoots));
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
  if (plan.run_args.size() > CampaignLimits::kMaxRunArgs) {
    return UsageError(fmt::format("more than {} run arguments", CampaignLimits::kMaxRunArgs));
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
  return plan.engine.row().check(plan.engine.settings(), plan);
}

std::string GuestBinary(const CampaignPlan& plan, const std::string& self) {
  return plan.kstacklab.empty() ? self : plan.kstacklab;
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

namespace {

// The table's rows, and the plan's own engine's if the table lacks it.
std::vector<const EngineRow*> RowsOf(const CampaignPlan& plan, EngineTable table) {
  std::vector<const EngineRow*> rows;
  bool has_own = false;
  for (const EngineRow& row : table) {
    rows.push_back(&row);
    has_own |= &row == &plan.engine.row();
  }
  if (!has_own) rows.push_back(&plan.engine.row());
  return rows;
}

}  // namespace

Json PlanToJson(const CampaignPlan& plan) { return PlanToJson(plan, Engines()); }

Json PlanToJson(const CampaignPlan& plan, EngineTable table) {
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
                        {"arch", p.arch},
                        {"sysctl", std::move(sys)}});
  }
  Json j = {{"profiles", std::move(profiles)}};
  PartToJson(PlanPart::kPlan, plan, j);
  j["target"] = nullptr;
  if (plan.target) PartToJson(PlanPart::kTarget, plan, j["target"]);
  PartToJson(PlanPart::kOrder, plan, j["order"]);
  // Every row's section: the plan's engine's settings, the other rows' defaults; the engine's
  // name first in "engine".
  j["engine"] = {{"name", plan.engine.name()}};
  for (const EngineRow* row : RowsOf(plan, table)) {
    const bool own = row == &plan.engine.row();
    Json section = row->to_json(own ? plan.engine.settings() : *row->defaults());
    if (j.contains(row->json_key)) {
      j[row->json_key].update(section);
    } else {
      j[row->json_key] = std::move(section);
    }
  }
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
  // Campaigns begun before architectures were read have none stored: CheckPlan reads it again.
  p.arch = pj.value("arch", std::string());
  for (const auto& [k, v] : pj.at("sysctl").items())
    p.sysctls.emplace_back(k, v.get<std::string>());
  return p;
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

void KnownPlanKeys(const Json& j, EngineTable table) {
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    const bool known = key == "profiles" || key == "target" || key == "order" || key == "engine" ||
                       std::any_of(PlanFields().begin(), PlanFields().end(),
                                   [&](const PlanField& f) {
                                     return f.part == PlanPart::kPlan && key == f.json_key;
                                   }) ||
                       std::any_of(table.begin(), table.end(),
                                   [&](const EngineRow& row) { return key == row.json_key; });
    if (!known) {
      throw Json::other_error::create(
          501, fmt::format("plan: unknown key '{}'", EscapeControl(key)), &j);
    }
  }
  for (const Json& pj : j.at("profiles")) {
    KnownJsonKeys(pj,
                  {"name", "kernel", "release", "kernel_size", "kernel_mtime", "initrd", "config",
                   "cmdline", "boot_entry", "arch", "sysctl"},
                  "plan profile");
  }
  for (PlanPart part : {PlanPart::kTarget, PlanPart::kOrder}) {
    const Json& obj = j.at(PartKey(part));
    if (!obj.is_object()) continue;
    for (const auto& item : obj.items()) {
      if (std::none_of(PlanFields().begin(), PlanFields().end(), [&](const PlanField& f) {
            return f.part == part && item.key() == f.json_key;
          })) {
        throw Json::other_error::create(
            501, fmt::format("plan {}: unknown key '{}'", PartKey(part), EscapeControl(item.key())),
            &obj);
      }
    }
  }
}

// The plan's engine from its stored sections: every section present is read by its row
// (campaigns begun before the ssh and lava engines have neither section), the named one kept in
// the plan, the others' in `others` for their rows' checks of values.
Expected<PlanEngine> EngineFromJson(
    const Json& j, EngineTable table,
    std::vector<std::pair<const EngineRow*, std::unique_ptr<EngineSettings>>>& others) {
  const EngineRow* engine = nullptr;
  KSTACKLAB_ASSIGN_OR_RETURN(engine,
                             FindEngine(j.at("engine").at("name").get<std::string>(), table));
  std::unique_ptr<EngineSettings> own = engine->defaults();
  for (const EngineRow& row : table) {
    if (!j.contains(row.json_key)) continue;
    std::unique_ptr<EngineSettings> settings = row.defaults();
    row.from_json(j.at(row.json_key), *settings);
    if (&row == engine) {
      own = std::move(settings);
    } else {
      others.emplace_back(&row, std::move(settings));
    }
  }
  return PlanEngine(*engine, std::move(own));
}

}  // namespace

Expected<CampaignPlan> PlanFromJson(const Json& j) { return PlanFromJson(j, Engines()); }

Expected<CampaignPlan> PlanFromJson(const Json& j, EngineTable table) {
  try {
    KnownPlanKeys(j, table);
    CampaignPlan plan;
    for (const Json& pj : j.at("profiles")) plan.profiles.push_back(ProfileFromJson(pj));
    PartFromJson(PlanPart::kPlan, j, plan);
    if (!j.at("target").is_null()) {
      plan.target = Target{};
      PartFromJson(PlanPart::kTarget, j.at("target"), plan);
    }
    PartFromJson(PlanPart::kOrder, j.at("order"), plan);
    std::vector<std::pair<const EngineRow*, std::unique_ptr<EngineSettings>>> others;
    KSTACKLAB_ASSIGN_OR_RETURN(plan.engine, EngineFromJson(j, table, others));
    // The stored plan holds what a plan file may hold, checked by the same function; the other
    // engines' sections hold their defaults, or what a plan file may give them.
    KSTACKLAB_RETURN_IF_ERROR(CheckPlanValues(plan));
    for (const auto& [row, settings] : others)
      KSTACKLAB_RETURN_IF_ERROR(row->check_values(*settings));
    return plan;
  } catch (const Json::exception& e) {
    return UsageError(fmt::format("its plan is damaged ({})", e.what()));
  }
}

}  // namespace kstacklab::campaign
