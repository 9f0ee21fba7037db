// A campaign plan's options, each described once: its plan-file key, its campaign.json key, its
// shorthand flag, its range, its default and its words are one row of PlanFields(). The plan
// file's reader (plan_yaml.cc), campaign.json's form (plan.cc), the values' check
// (CheckPlanValues) and the command line's shorthand, --help and completion (cli/campaign_cmd.cc)
// iterate the rows; an engine's own keys are its row of the engine table (engines.h) and its
// shorthand flags its settings' kShorthand. The profiles (a list) and the engine (a row of the
// engine table) are read by their own code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kstacklab/campaign/plan.h"
#include "kstacklab/common/error.h"
#include "kstacklab/results/json.h"

namespace kstacklab::campaign {

// One mapping of a plan as a reader sees it: the plan's top level, its target, its order, an
// engine's section; from a plan file (YAML, the line in messages) or the shorthand's flags (the
// flag in messages). Every value is named as its source names it; a reader never sees YAML.
class PlanSection {
 public:
  virtual ~PlanSection() = default;
  virtual bool Has(std::string_view key) const = 0;
  // A single value of at most `max` bytes (CampaignLimits::kMaxTextBytes without it), without
  // control characters.
  virtual Expected<std::string> Text(std::string_view key, size_t max) const = 0;
  Expected<std::string> Text(std::string_view key) const {
    return Text(key, CampaignLimits::kMaxTextBytes);
  }
  virtual Expected<uint64_t> Count(std::string_view key, uint64_t lo, uint64_t hi) const = 0;
  // A decimal number in [lo, hi] (ParseNumber; `example` is one, for the message).
  virtual Expected<double> Number(std::string_view key, double lo, double hi,
                                  const char* example) const = 0;
  // A list of 1 to `max_items` counts in [lo, hi]; `shape` is the message for anything else.
  virtual Expected<std::vector<uint64_t>> Counts(std::string_view key, size_t max_items,
                                                 uint64_t lo, uint64_t hi,
                                                 std::string_view shape) const = 0;
  // A duration ("30min", "10s"; a unit is required) in seconds, from lo_s to hi_s.
  virtual Expected<double> DurationS(std::string_view key, double lo_s, double hi_s,
                                     const char* example) const = 0;
  virtual Expected<bool> Bool(std::string_view key) const = 0;
  virtual Expected<std::vector<std::string>> Words(std::string_view key,
                                                   size_t max_items) const = 0;
  // A path on this host; a plan file's relative path is taken from the file's directory, a
  // flag's from the working directory (CheckPlan makes it absolute).
  virtual Expected<std::string> Path(std::string_view key) const = 0;
  // A UsageError at the section (a plan file: its line).
  virtual Error Bad(const std::string& what) const = 0;
  // How messages name `key`: "target mdc_pct", "engine cpus" in a plan file; its flag.
  virtual std::string Name(std::string_view key) const = 0;
};

// The shorthand's flag of an engine's key (an engine's settings' kShorthand): the engine's Read
// takes the flags as its section, so the key's range is written once.
struct ShorthandFlag {
  std::string_view key;    // the engine's plan-file key
  const char* flag;        // "--cpus"
  const char* value_name;  // the value's word in --help and completion; "{a,b}" lists choices
  const char* help;
};

// The mapping of a plan a field lives in.
enum class PlanPart {
  kPlan,    // the top level
  kTarget,  // `target:` (campaign.json: null without a target)
  kOrder,   // `order:`
};
// The part's key in the plan file and campaign.json ("target"); "" for the top level.
const char* PartKey(PlanPart part);

enum class FieldKind {
  kCount,     // an integer in [lo, hi]
  kNumber,    // a decimal number in [lo, hi]
  kDuration,  // seconds in [lo, hi], written with a unit: "6h", "90min", "30s"
  kBool,      // true or false; the shorthand's flag is a switch
  kText,      // one value of at most `hi` bytes
  kPath,      // a path on this host, of at most kMaxTextBytes
  kChoice,    // `choices[0]` (true) or `choices[1]` (false); `alias` is taken for choices[0]
  kWords,     // a list of at most `hi` values
};

// Where a field's value is in the plan (its part present).
using FieldRef = std::variant<uint64_t*, double*, bool*, std::string*, std::vector<std::string>*>;

struct PlanField {
  PlanPart part;
  const char* key;         // the plan file's key in its part ("mdc_pct")
  const char* json_key;    // campaign.json's key in its part ("budget_s")
  const char* flag;        // the shorthand's flag ("--target-mdc"); nullptr: plan files only
  const char* value_name;  // the flag's value in --help and completion (nullptr: CLI11's word)
  const char* help;        // the field in words: the flag's --help
  FieldKind kind;
  double lo = 0, hi = 0;               // kCount, kNumber, kDuration: the range; kText, kWords: max
  const char* example = nullptr;       // kDuration: a value of the form ("6h")
  bool zero_unset = false;             // 0 means "not given" (boots with a target, no budget)
  bool required = false;               // its part needs it; the shorthand's part exists by its flag
  const char* required_why = nullptr;  // required: what it is, for the message
  std::span<const std::string_view> choices{};  // kChoice: {true word, false word}
  const char* alias = nullptr;                  // kChoice: another spelling of choices[0]
  // campaign.json from an older version may lack the key: the plan's default is kept.
  bool json_may_lack = false;
  FieldRef (*at)(CampaignPlan& plan) = nullptr;
  // After the value is read from any source (seed: the plan's seed is given).
  void (*on_read)(CampaignPlan& plan) = nullptr;
};

// The rows, in --help's order.
std::span<const PlanField> PlanFields();

// The field's name in a plan file's messages: "target mdc_pct", "boots".
std::string FieldName(const PlanField& f);

// The value a plan that does not give the field has, as a plan file writes it ("mean", "40",
// "randomised"); "" for a required field and where that is no value (no budget, no kstacklab,
// boots with a target) or false.
std::string FieldDefault(const PlanField& f);

// Reads every field of `part` that `section` has into `plan` (whose target exists when `part` is
// kTarget); a required field missing -> section.Bad("target needs mdc_pct (...)").
Status ReadPlanPart(PlanPart part, const PlanSection& section, CampaignPlan& plan);

// The plan-file keys of `part`'s fields.
std::vector<std::string> PartKeys(PlanPart part);

// campaign.json: `part`'s fields into / from the object `obj` (its part's object). FromJson throws
// Json::exception on a missing (unless json_may_lack) or mistyped value or a word not a choice.
void PartToJson(PlanPart part, const CampaignPlan& plan, Json& obj);
void PartFromJson(PlanPart part, const Json& obj, CampaignPlan& plan);

// Every field's value within its range and length, named as a plan file names it (UsageError).
// The target's fields only with a target.
Status CheckFieldValues(const CampaignPlan& plan);

}  // namespace kstacklab::campaign
