// The engine table: every campaign engine is one row, built from its settings struct by Row<S>()
// (the struct's kName, its YAML keys, reader, checks, JSON form and factory). The plan's readers,
// its checks, campaign.json, the factory, the report and the Fastpath export ask the row; nothing
// else names an engine. CONTRIBUTING.md "Adding a campaign engine" is a worked example.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/campaign/plan_fields.h"
#include "kstacklab/common/error.h"
#include "kstacklab/results/json.h"

namespace kstacklab::campaign {

// How an engine's profiles name their files.
enum class ProfileFiles {
  kLocal,  // paths on this host (bzImage, initrd): checked, identified, resumed against
  kUrls,   // URLs a lab fetches itself, taken as written
};

// What the report and the Fastpath export say of the machine the campaign measures.
struct EngineMachine {
  std::string name;  // the machine's name ("qemu-guest", a host name, "lava-x86")
  // When it is reached over SSH: the user and host to say so (Fastpath's `connection`).
  std::string ssh_user;
  std::string ssh_host;
};

// One row of the engine table. Made by Row<S>(); the functions take the row's own settings.
struct EngineRow {
  const char* name;     // the plan's engine name
  const char* summary;  // one line for the documentation and the messages naming engines
  ProfileFiles files;
  bool boot_entries;  // its profiles may name a bootloader entry (boot_entry)
  // campaign.json: the object its settings are stored in: "engine" (beside the name) or a key of
  // the plan of its own; `json_keys` every key it writes there.
  const char* json_key;
  std::span<const std::string_view> yaml_keys;  // the `engine:` keys besides name
  std::unique_ptr<EngineSettings> (*defaults)();
  // Reads the `engine:` section (every value named "engine KEY") or the shorthand's flags.
  Status (*read)(const PlanSection& section, EngineSettings& settings);
  std::span<const ShorthandFlag> shorthand;  // the shorthand's flags of its keys (S::kShorthand)
  // The values alone (types, lengths, ranges), as CheckPlanValues holds a stored plan to them.
  Status (*check_values)(const EngineSettings& settings);
  // Everything else before boot 1 that needs the whole plan (its profiles); no file looked at
  // but the settings' own (an ssh_config).
  Status (*check)(const EngineSettings& settings, const CampaignPlan& plan);
  // A profile's files and keys as this engine takes them, after the shared checks of a local
  // image (ProfileFiles::kLocal) and before the shared checks of cmdline and sysctls.
  Status (*check_profile)(const EngineSettings& settings, Profile& profile);
  Json (*to_json)(const EngineSettings& settings);
  // Throws Json::exception on a missing, mistyped or unknown key (KnownJsonKeys).
  void (*from_json)(const Json& j, EngineSettings& settings);
  EngineMachine (*machine)(const EngineSettings& settings);
  // Whether a machine run as `how` says (BootFacts::how, campaign.json's `accel`) had an emulated
  // CPU, for a state read back: S::Emulated(how) where the settings struct has it, else false.
  bool (*emulated)(std::string_view how);
  std::unique_ptr<Engine> (*make)(const CampaignPlan& plan, const std::string& work_dir,
                                  const std::string& guest_binary);
};

namespace engine_internal {

// The row of settings struct S, which has: kName, kSummary, kFiles, kBootEntries, kJsonKey,
// kYamlKeys (a static array of string_view), optionally kShorthand (a static array of
// ShorthandFlag: the shorthand's flags of its keys), and the members Read, CheckValues, Check,
// CheckProfile, ToJson, FromJson, Machine and a static Make (see qemu.h for one); a static
// Emulated(how) when one of its machines can have an emulated CPU.
template <class S>
EngineRow Row() {
  return EngineRow{
      .name = S::kName,
      .summary = S::kSummary,
      .files = S::kFiles,
      .boot_entries = S::kBootEntries,
      .json_key = S::kJsonKey,
      .yaml_keys = S::kYamlKeys,
      .defaults = []() -> std::unique_ptr<EngineSettings> { return std::make_unique<S>(); },
      .read = [](const PlanSection& section,
                 EngineSettings& s) { return static_cast<S&>(s).Read(section); },
      .shorthand =
          [] {
            if constexpr (requires { S::kShorthand; }) {
              return std::span<const ShorthandFlag>(S::kShorthand);
            } else {
              return std::span<const ShorthandFlag>();
            }
          }(),
      .check_values =
          [](const EngineSettings& s) { return static_cast<const S&>(s).CheckValues(); },
      .check = [](const EngineSettings& s,
                  const CampaignPlan& plan) { return static_cast<const S&>(s).Check(plan); },
      .check_profile = [](const EngineSettings& s,
                          Profile& p) { return static_cast<const S&>(s).CheckProfile(p); },
      .to_json = [](const EngineSettings& s) { return static_cast<const S&>(s).ToJson(); },
      .from_json = [](const Json& j, EngineSettings& s) { static_cast<S&>(s).FromJson(j); },
      .machine = [](const EngineSettings& s) { return static_cast<const S&>(s).Machine(); },
      .emulated =
          [](std::string_view how) {
            if constexpr (requires { S::Emulated(how); }) {
              return S::Emulated(how);
            } else {
              (void)how;
              return false;
            }
          },
      .make = &S::Make,
  };
}

}  // namespace engine_internal

using EngineTable = std::span<const EngineRow>;

// The engine table: qemu (the default, first), ssh, lava.
EngineTable Engines();

// The row named `name` in `table`, or a UsageError listing the names ("give qemu, ssh or lava").
Expected<const EngineRow*> FindEngine(std::string_view name, EngineTable table = Engines());

// "qemu, ssh or lava": the table's names, for messages.
std::string EngineNames(EngineTable table = Engines());

// The plan readers and the JSON form over another table (a test's, with a row of its own);
// plan.h's functions are these over Engines(). PlanToJson writes every row's section, the plan's
// engine's settings in its own and every other row's defaults (the form campaign.json has always
// had); PlanFromJson reads and checks every section present and keeps the plan's engine's.
Expected<CampaignPlan> ParsePlanYaml(const std::string& text, const std::string& source,
                                     const std::string& base_dir, EngineTable table);
Json PlanToJson(const CampaignPlan& plan, EngineTable table);
Expected<CampaignPlan> PlanFromJson(const Json& j, EngineTable table);

// ---- the values engines check their settings with (the messages name `field`) ---------------
Status TextValue(const std::string& field, const std::string& s,
                 size_t max = CampaignLimits::kMaxTextBytes);
Status ListValue(const std::string& field, const std::vector<std::string>& items, size_t max_items,
                 size_t max_bytes = CampaignLimits::kMaxTextBytes);
Status CountValue(const std::string& field, uint64_t v, uint64_t lo, uint64_t hi);
Status SecondsValue(const std::string& field, double v, double lo, double hi);
// A program the engine starts: a name looked up on PATH, or an absolute path.
Status ProgramValue(const std::string& field, const std::string& s);
// Printable ASCII (0x20 to 0x7e) only; "" is.
bool PrintableAscii(const std::string& s);
// A word handed to ssh or lavacli as an option value: never empty, never taken for an option, one
// word without shell characters.
bool OptionWord(const std::string& s);
// A URL a lab can fetch: http(s)://, ftp:// or file://, printable ASCII without spaces or quotes.
bool IsFetchableUrl(const std::string& url);
// An existing, regular, readable file, or a UsageError naming `what`.
Status CheckFile(const std::string& path, const std::string& what);

}  // namespace kstacklab::campaign
