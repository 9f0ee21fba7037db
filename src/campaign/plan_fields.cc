// The campaign plan's options, one row each (plan_fields.h).
#include "kstacklab/campaign/plan_fields.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "kstacklab/campaign/engines.h"
#include "kstacklab/common/text.h"

namespace kstacklab::campaign {
namespace {

using L = CampaignLimits;

constexpr std::string_view kBlocks[] = {"randomised", "fixed"};

// The target's fields are read only where the plan has a target.
Target& TargetOf(CampaignPlan& p) {
  KSTACKLAB_CHECK(p.target.has_value());
  return *p.target;
}

// A count row's range as integers: `hi` is a double, and UINT64_MAX is not one exactly.
uint64_t CountLo(const PlanField& f) { return static_cast<uint64_t>(f.lo); }
uint64_t CountHi(const PlanField& f) {
  return f.hi >= static_cast<double>(UINT64_MAX) ? UINT64_MAX : static_cast<uint64_t>(f.hi);
}

}  // namespace

// NOLINTNEXTLINE(readability-function-size): a table of rows
std::span<const PlanField> PlanFields() {
  static const PlanField k[] = {
      {.part = PlanPart::kPlan,
       .key = "run",
       .json_key = "run",
       .flag = nullptr,  // the shorthand's run arguments follow `--`
       .value_name = nullptr,
       .help = "the `kstacklab run` arguments of every boot",
       .kind = FieldKind::kWords,
       .hi = L::kMaxRunArgs,
       .at = [](CampaignPlan& p) -> FieldRef { return &p.run_args; }},
      {.part = PlanPart::kPlan,
       .key = "boots",
       .json_key = "boots",
       .flag = "--boots",
       .value_name = nullptr,
       .help = "Shorthand: boots per profile",
       .kind = FieldKind::kCount,
       .lo = 1,
       .hi = L::kMaxBoots,
       .zero_unset = true,  // a plan with a target: the rule decides
       .at = [](CampaignPlan& p) -> FieldRef { return &p.boots; }},
      {.part = PlanPart::kTarget,
       .key = "mdc_pct",
       .json_key = "mdc_pct",
       .flag = "--target-mdc",
       .value_name = nullptr,
       .help = "Shorthand: boot until every row's MDC is at most PCT %",
       .kind = FieldKind::kNumber,
       .lo = Target::kMinMdcPct,
       .hi = Target::kMaxMdcPct,
       .example = "2",
       .required = true,
       .required_why = "the detectable change to reach, %",
       .at = [](CampaignPlan& p) -> FieldRef { return &TargetOf(p).mdc_pct; }},
      {.part = PlanPart::kTarget,
       .key = "metric",
       .json_key = "metric",
       .flag = "--target-metric",
       .value_name = nullptr,
       .help = "Shorthand: the target's metric",
       .kind = FieldKind::kText,
       .hi = 32,
       .at = [](CampaignPlan& p) -> FieldRef { return &TargetOf(p).metric; }},
      {.part = PlanPart::kTarget,
       .key = "min_boots",
       .json_key = "min_boots",
       .flag = nullptr,
       .value_name = nullptr,
       .help = "the target's fewest boots per profile before the rule is looked at",
       .kind = FieldKind::kCount,
       .lo = 2,
       .hi = L::kMaxBoots,
       .at = [](CampaignPlan& p) -> FieldRef { return &TargetOf(p).min_boots; }},
      {.part = PlanPart::kTarget,
       .key = "max_boots",
       .json_key = "max_boots",
       .flag = "--max-boots",
       .value_name = nullptr,
       .help = "Shorthand: the target's most boots per profile",
       .kind = FieldKind::kCount,
       .lo = 2,
       .hi = L::kMaxBoots,
       .at = [](CampaignPlan& p) -> FieldRef { return &TargetOf(p).max_boots; }},
      {.part = PlanPart::kTarget,
       .key = "budget",
       .json_key = "budget_s",
       .flag = "--budget",
       .value_name = nullptr,
       .help = "Shorthand: the target's time budget (e.g. 6h)",
       .kind = FieldKind::kDuration,
       .lo = 1,
       .hi = L::kMaxBudgetNs / 1e9,
       .example = "6h",
       .zero_unset = true,  // no budget
       .at = [](CampaignPlan& p) -> FieldRef { return &TargetOf(p).budget_s; }},
      {.part = PlanPart::kOrder,
       .key = "blocks",
       .json_key = "blocks",
       .flag = "--order",
       .value_name = "{randomised,fixed}",
       .help = "Shorthand: randomised or fixed blocks",
       .kind = FieldKind::kChoice,
       .choices = kBlocks,
       .alias = "randomized",
       .at = [](CampaignPlan& p) -> FieldRef { return &p.randomised; }},
      {.part = PlanPart::kOrder,
       .key = "seed",
       .json_key = "seed",
       .flag = "--seed",
       .value_name = nullptr,
       .help = "Shorthand: seed of the randomised block order (default: a random one, kept in "
               "campaign.json)",
       .kind = FieldKind::kCount,
       .lo = 0,
       .hi = static_cast<double>(UINT64_MAX),
       .at = [](CampaignPlan& p) -> FieldRef { return &p.seed; },
       .on_read = [](CampaignPlan& p) { p.seed_given = true; }},
      {.part = PlanPart::kPlan,
       .key = "strength",
       .json_key = "strength",
       .flag = "--strength",
       .value_name = nullptr,
       .help = "Also run `entropy --kernel` in every boot (offsets, bits, design)",
       .kind = FieldKind::kBool,
       .at = [](CampaignPlan& p) -> FieldRef { return &p.strength; }},
      {.part = PlanPart::kPlan,
       .key = "strength_samples",
       .json_key = "strength_samples",
       .flag = nullptr,
       .value_name = nullptr,
       .help = "the syscalls `entropy --kernel` samples in every boot",
       .kind = FieldKind::kCount,
       .lo = 1000,
       .hi = 10000000,
       .at = [](CampaignPlan& p) -> FieldRef { return &p.strength_samples; }},
      {.part = PlanPart::kPlan,
       .key = "kstacklab",
       .json_key = "kstacklab",
       .flag = "--kstacklab",
       .value_name = nullptr,
       .help = "Shorthand: the kstacklab binary run in the guest (default: this one, where the "
               "image's architecture is its own)",
       .kind = FieldKind::kPath,
       .hi = L::kMaxTextBytes,
       // Campaigns begun before the key ran this program in the guest, as one without it does.
       .json_may_lack = true,
       .at = [](CampaignPlan& p) -> FieldRef { return &p.kstacklab; }},
  };
  return k;
}

const char* PartKey(PlanPart part) {
  switch (part) {
    case PlanPart::kPlan:
      return "";
    case PlanPart::kTarget:
      return "target";
    case PlanPart::kOrder:
      return "order";
  }
  return "";
}

std::string FieldName(const PlanField& f) {
  return f.part == PlanPart::kPlan ? std::string(f.key)
                                   : fmt::format("{} {}", PartKey(f.part), f.key);
}

std::vector<std::string> PartKeys(PlanPart part) {
  std::vector<std::string> keys;
  for (const PlanField& f : PlanFields()) {
    if (f.part == part) keys.emplace_back(f.key);
  }
  return keys;
}

std::string FieldDefault(const PlanField& f) {
  if (f.required) return "";
  CampaignPlan plan;
  plan.target = Target{};
  const FieldRef ref = f.at(plan);
  if (f.kind == FieldKind::kChoice)
    return std::string(*std::get<bool*>(ref) ? f.choices[0] : f.choices[1]);
  return std::visit(
      [&](const auto* v) -> std::string {
        using T = std::remove_cvref_t<decltype(*v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return *v ? "true" : "";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return *v;
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return fmt::format("{}", fmt::join(*v, " "));
        } else {
          if (f.zero_unset && *v == 0) return "";
          if (f.kind == FieldKind::kDuration) return fmt::format("{:g}s", static_cast<double>(*v));
          return fmt::format("{}", *v);
        }
      },
      ref);
}

namespace {

Status ReadField(const PlanField& f, const PlanSection& s, CampaignPlan& plan) {
  const FieldRef ref = f.at(plan);
  switch (f.kind) {
    case FieldKind::kCount:
      KSTACKLAB_ASSIGN_OR_RETURN(*std::get<uint64_t*>(ref), s.Count(f.key, CountLo(f), CountHi(f)));
      break;
    case FieldKind::kNumber:
      KSTACKLAB_ASSIGN_OR_RETURN(*std::get<double*>(ref), s.Number(f.key, f.lo, f.hi, f.example));
      break;
    case FieldKind::kDuration:
      KSTACKLAB_ASSIGN_OR_RETURN(*std::get<double*>(ref),
                                 s.DurationS(f.key, f.lo, f.hi, f.example));
      break;
    case FieldKind::kBool:
      KSTACKLAB_ASSIGN_OR_RETURN(*std::get<bool*>(ref), s.Bool(f.key));
      break;
    case FieldKind::kText:
      KSTACKLAB_ASSIGN_OR_RETURN(*std::get<std::string*>(ref),
                                 s.Text(f.key, static_cast<size_t>(f.hi)));
      break;
    case FieldKind::kPath:
      KSTACKLAB_ASSIGN_OR_RETURN(*std::get<std::string*>(ref), s.Path(f.key));
      break;
    case FieldKind::kChoice: {
      std::string word;
      KSTACKLAB_ASSIGN_OR_RETURN(word, s.Text(f.key, 16));
      if (word != f.choices[0] && word != f.choices[1] && (f.alias == nullptr || word != f.alias)) {
        return s.Bad(fmt::format("{} must be {} or {}", s.Name(f.key), f.choices[0], f.choices[1]));
      }
      *std::get<bool*>(ref) = word != f.choices[1];
      break;
    }
    case FieldKind::kWords:
      KSTACKLAB_ASSIGN_OR_RETURN(*std::get<std::vector<std::string>*>(ref),
                                 s.Words(f.key, static_cast<size_t>(f.hi)));
      break;
  }
  if (f.on_read != nullptr) f.on_read(plan);
  return OkStatus();
}

}  // namespace

Status ReadPlanPart(PlanPart part, const PlanSection& section, CampaignPlan& plan) {
  for (const PlanField& f : PlanFields()) {
    if (f.part != part) continue;
    if (!section.Has(f.key)) {
      if (f.required) {
        return section.Bad(fmt::format("{} needs {} ({})", PartKey(part), f.key, f.required_why));
      }
      continue;
    }
    KSTACKLAB_RETURN_IF_ERROR(ReadField(f, section, plan));
  }
  return OkStatus();
}

void PartToJson(PlanPart part, const CampaignPlan& plan, Json& obj) {
  // `at` gives a writable place; the value is only read here.
  auto& p = const_cast<CampaignPlan&>(plan);  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  for (const PlanField& f : PlanFields()) {
    if (f.part != part) continue;
    const FieldRef ref = f.at(p);
    if (f.kind == FieldKind::kChoice) {
      obj[f.json_key] = *std::get<bool*>(ref) ? f.choices[0] : f.choices[1];
    } else {
      std::visit([&](const auto* v) { obj[f.json_key] = *v; }, ref);
    }
  }
}

void PartFromJson(PlanPart part, const Json& obj, CampaignPlan& plan) {
  for (const PlanField& f : PlanFields()) {
    if (f.part != part) continue;
    if (f.json_may_lack && !obj.contains(f.json_key)) continue;
    const Json& v = obj.at(f.json_key);
    const FieldRef ref = f.at(plan);
    if (f.kind == FieldKind::kChoice) {
      const std::string word = v.get<std::string>();
      if (word != f.choices[0] && word != f.choices[1]) {
        throw Json::other_error::create(
            501,
            fmt::format("{} '{}' is not {} or {}", FieldName(f), EscapeControl(word), f.choices[0],
                        f.choices[1]),
            &obj);
      }
      *std::get<bool*>(ref) = word == f.choices[0];
    } else {
      std::visit([&](auto* out) { *out = v.get<std::remove_pointer_t<decltype(out)>>(); }, ref);
    }
    if (f.on_read != nullptr) f.on_read(plan);
  }
}

Status CheckFieldValues(const CampaignPlan& plan) {
  auto& p = const_cast<CampaignPlan&>(plan);  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  for (const PlanField& f : PlanFields()) {
    if (f.part == PlanPart::kTarget && !plan.target) continue;
    const FieldRef ref = f.at(p);
    const std::string name = FieldName(f);
    switch (f.kind) {
      case FieldKind::kCount: {
        const uint64_t v = *std::get<uint64_t*>(ref);
        if (f.zero_unset && v == 0) break;
        KSTACKLAB_RETURN_IF_ERROR(CountValue(name, v, CountLo(f), CountHi(f)));
        break;
      }
      case FieldKind::kNumber: {
        const double v = *std::get<double*>(ref);
        if (!(v >= f.lo && v <= f.hi)) {
          return UsageError(
              fmt::format("{} {:g} is out of range; give {:g} to {:g}", name, v, f.lo, f.hi));
        }
        break;
      }
      case FieldKind::kDuration: {
        const double v = *std::get<double*>(ref);
        if (f.zero_unset && v == 0) break;
        KSTACKLAB_RETURN_IF_ERROR(SecondsValue(name, v, f.lo, f.hi));
        break;
      }
      case FieldKind::kText:
      case FieldKind::kPath:
        KSTACKLAB_RETURN_IF_ERROR(
            TextValue(name, *std::get<std::string*>(ref), static_cast<size_t>(f.hi)));
        break;
      case FieldKind::kWords:
        KSTACKLAB_RETURN_IF_ERROR(
            ListValue(name, *std::get<std::vector<std::string>*>(ref), static_cast<size_t>(f.hi)));
        break;
      case FieldKind::kBool:
      case FieldKind::kChoice:
        break;  // any value of the type
    }
  }
  return OkStatus();
}

}  // namespace kstacklab::campaign
