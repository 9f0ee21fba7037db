// A boot campaign's plan: which configurations (profiles) to boot, how often, in which order, on
// which engine, and what `kstacklab run` measures in each boot. Built from a YAML plan file
// (yaml-cpp) or from the command line's shorthand, checked whole before the first boot
// (CheckPlan), and kept in the campaign directory as JSON (PlanToJson / PlanFromJson) so a resumed
// campaign runs the plan it started with. docs/campaign.md describes every field.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kstacklab/campaign/git_range.h"
#include "kstacklab/common/error.h"
#include "kstacklab/results/json.h"

namespace kstacklab::campaign {

// What a reader accepts (docs/result-schema.md "Limits"): a plan is a short hand-written file.
struct CampaignLimits {
  static constexpr size_t kMaxFileBytes = 65536;  // 64 KiB
  static constexpr size_t kMaxProfiles = 32;
  static constexpr size_t kMaxRunArgs = 256;
  static constexpr size_t kMaxSysctls = 64;
  static constexpr size_t kMaxQemuArgs = 64;        // any engine's list (qemu_args, recover, ...)
  static constexpr uint64_t kMaxBoots = 1000;       // per profile
  static constexpr size_t kMaxCmdlineBytes = 2048;  // x86's COMMAND_LINE_SIZE
  static constexpr size_t kMaxTextBytes = 4096;     // any other single value
  // A kernel release: uname(2)'s utsname.release is char[__NEW_UTS_LEN + 1], __NEW_UTS_LEN 64.
  static constexpr size_t kMaxReleaseBytes = 64;
  static constexpr double kMaxBudgetNs = 30 * 86400e9;  // 30 days
};

// One configuration that needs a boot. Its name is the label of its result files.
// Members after `kernel` have initialisers: a profile written {name, kernel} leaves them empty.
struct Profile {
  std::string name;
  std::string kernel;     // path of a kernel image (kernel_image.h; made absolute by CheckPlan)
  std::string initrd{};   // optional extra initramfs, concatenated before the engine's own
  std::string cmdline{};  // the profile's kernel arguments (the engine adds its console)
  std::string config{};   // the kernel's .config; "" = config-RELEASE beside the image, if any
  // Engine ssh with switch reboot: the boot entry the machine's bootloader boots this profile
  // from (grub-reboot's ENTRY); "" elsewhere.
  std::string boot_entry{};
  std::vector<std::pair<std::string, std::string>> sysctls{};  // set in the guest before the run
  // Filled by CheckPlan from the image ("6.1.0-57-amd64": a bzImage's setup header, an arm64
  // Image's banner); "" when a bzImage's header carries no version string. Engine lava (the
  // kernel is a URL): the plan's `release`, if given.
  std::string release{};
  // Identity of the image when the campaign started (size, mtime), so a resume notices a kernel
  // replaced under the same name.
  uint64_t kernel_size = 0;
  int64_t kernel_mtime = 0;
  // The image's architecture, a `uname -m` word of the table in arch.h ("x86_64", "aarch64"):
  // read from the image by CheckPlan (a plan's `arch` must agree with it). Engine lava (a URL):
  // the plan's `arch`, x86_64 when it gives none.
  std::string arch{};
};

// The stopping rule (a precision rule: it never looks at the observed difference).
struct Target {
  std::string metric = "mean";
  // The range of mdc_pct, in percent, wherever a plan gives it (YAML, JSON, --target-mdc).
  static constexpr double kMinMdcPct = 0.01, kMaxMdcPct = 1000;
  double mdc_pct = 0;       // stop when every row's MDC of `metric` is at or below this
  uint64_t min_boots = 3;   // per profile, before the rule is looked at (a verdict needs 3)
  uint64_t max_boots = 40;  // per profile
  double budget_s = 0;      // wall time of the boots; 0 = none
};

// One engine's settings (the `engine:` section of a plan). Each engine's own struct derives from
// EngineSettingsOf<itself> and is read, checked, stored and made into an engine by its row of the
// engine table (engines.h); nothing outside that row names the engine.
class EngineSettings {
 public:
  virtual ~EngineSettings() = default;
  virtual std::unique_ptr<EngineSettings> Clone() const = 0;

 protected:
  EngineSettings() = default;
  EngineSettings(const EngineSettings&) = default;
  EngineSettings& operator=(const EngineSettings&) = default;
};
template <class Self>
class EngineSettingsOf : public EngineSettings {
 public:
  std::unique_ptr<EngineSettings> Clone() const override {
    return std::make_unique<Self>(static_cast<const Self&>(*this));
  }
};

struct EngineRow;  // engines.h

// The plan's engine: its row in the engine table and its settings (a value: copies copy them).
// Default: the table's first row (qemu) with its defaults.
class PlanEngine {
 public:
  PlanEngine();
  explicit PlanEngine(const EngineRow& row);  // the row's defaults
  PlanEngine(const EngineRow& row, std::unique_ptr<EngineSettings> settings);
  PlanEngine(const PlanEngine& other);
  PlanEngine& operator=(const PlanEngine& other);
  PlanEngine(PlanEngine&&) noexcept = default;
  PlanEngine& operator=(PlanEngine&&) noexcept = default;
  ~PlanEngine() = default;

  const EngineRow& row() const { return *row_; }
  const char* name() const;
  const EngineSettings& settings() const { return *settings_; }
  EngineSettings& settings() { return *settings_; }
  // This engine's settings as `S`; nullptr when the plan has another engine.
  template <class S>
  S* Find() {
    return dynamic_cast<S*>(settings_.get());
  }
  template <class S>
  const S* Find() const {
    return dynamic_cast<const S*>(settings_.get());
  }

 private:
  const EngineRow* row_;
  std::unique_ptr<EngineSettings> settings_;
};

struct CampaignPlan {
  std::vector<Profile> profiles;      // profiles[0] is the baseline
  std::vector<std::string> run_args;  // `kstacklab run` arguments of every boot
  uint64_t boots = 0;                 // per profile; 0 when `target` decides
  std::optional<Target> target;
  bool randomised = true;  // order: each block a seeded permutation of the profiles
  uint64_t seed = 0;
  bool seed_given = false;
  PlanEngine engine;      // the engine and its settings (engine: {name, ...})
  bool strength = false;  // also `entropy --kernel` in every boot
  uint64_t strength_samples = 100000;
  // The kstacklab binary that runs in the guest or on the machine (the plan's `kstacklab:`),
  // made absolute by CheckPlan; "" = this program, where its architecture is the profiles'.
  std::string kstacklab;

  // Blocks to plan for: `boots`, or the target's max_boots.
  uint64_t MaxBlocks() const { return target ? target->max_boots : boots; }
};

// The plan's engine settings as S (an engine's own code and tests): a plan with another engine
// is a broken invariant (KSTACKLAB_CHECK).
template <class S>
S& SettingsOf(CampaignPlan& plan) {
  S* s = plan.engine.Find<S>();
  KSTACKLAB_CHECK(s != nullptr);
  return *s;
}
template <class S>
const S& SettingsOf(const CampaignPlan& plan) {
  const S* s = plan.engine.Find<S>();
  KSTACKLAB_CHECK(s != nullptr);
  return *s;
}

// Parses a plan file's text (`source` names it in messages). Unknown keys, wrong types, values out
// of range, aliases and merge keys, and anything beyond CampaignLimits -> UsageError naming the key
// and the line. Never throws. Paths stay as written, relative ones resolved against `base_dir`.
Expected<CampaignPlan> ParsePlanYaml(const std::string& text, const std::string& source,
                                     const std::string& base_dir);

// A bisect's plan file (kstacklab bisect): a campaign plan whose profiles are the kernels, oldest
// first, without boots or target (refused: the bisect's rule decides each campaign's boots).
Expected<CampaignPlan> ParseBisectPlanYaml(const std::string& text, const std::string& source,
                                           const std::string& base_dir);
// The same, whose kernels may instead be a git range (`kernels: {tree, good, bad, command, image,
// ...}`, git_range.h): then the range (its commits not resolved yet: ResolveGitRange) goes to
// *range and the plan's profiles are left empty; else *range is left empty.
Expected<CampaignPlan> ParseBisectPlanYaml(const std::string& text, const std::string& source,
                                           const std::string& base_dir,
                                           std::optional<GitRange>* range);

// The deepest nesting of YAML flow brackets ([ and {) outside quotes and comments. yaml-cpp's
// parser recurses once per level, so its readers refuse text deeper than kMaxYamlFlowDepth before
// parsing it.
inline constexpr int kMaxYamlFlowDepth = 16;
int YamlFlowDepth(std::string_view text);

// "NAME=CMDLINE" (split at the first '=') -> a profile with that kernel.
Expected<Profile> ParseProfileShorthand(const std::string& spec, const std::string& kernel);

// Everything checkable before the first boot, none of it by booting: at least one profile (two to
// compare), unique valid names, readable kernel images of a known format (kernel_image.h: the
// architecture and release are read from each), one architecture for every profile, a kstacklab
// binary of that architecture (the plan's, or this program), readable initrd/config files, sysctl
// names and values, command lines, boots or a target, engine settings. Fills Profile::release,
// Profile::arch and the identity fields and makes paths absolute. UsageErrors naming the profile
// and field.
Status CheckPlan(CampaignPlan& plan);

// The path of the kstacklab binary the engine runs in the guest or on the machine: the plan's
// `kstacklab`, or `self` (this program's path) when it gives none.
std::string GuestBinary(const CampaignPlan& plan, const std::string& self);

// The profile's kernel arguments split as the kernel splits its command line (spaces outside
// double quotes), for checking that a booted /proc/cmdline holds each of them.
std::vector<std::string> CmdlineWords(const std::string& cmdline);

// What a plan may hold, whichever reader filled it: every value's type, length, range and
// characters, the engine's settings (its row's check of values). No file is looked at. CheckPlan
// calls it first; PlanFromJson calls it on a stored plan, so campaign.json is held to the limits of
// a plan file. UsageError naming the field.
Status CheckPlanValues(const CampaignPlan& plan);

Json PlanToJson(const CampaignPlan& plan);
// A stored plan (campaign.json's "plan"): every key known, every value passing CheckPlanValues.
Expected<CampaignPlan> PlanFromJson(const Json& j);

// For the readers of campaign.json, inside their try blocks: throws Json::other_error naming
// `where` and the first key of the object `obj` that is not in `known` (nothing for a non-object).
void KnownJsonKeys(const Json& obj, std::initializer_list<std::string_view> known,
                   const char* where);

}  // namespace kstacklab::campaign
