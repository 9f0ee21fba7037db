#include "kstacklab/report/campaign_report.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <set>

#include "kstacklab/campaign/engines.h"
#include "kstacklab/common/text.h"

namespace kstacklab::report {
namespace {

using campaign::Boot;
using campaign::BootStatus;
using campaign::CampaignState;
using campaign::Profile;

std::string JsonShort(const Json& v) {
  if (v.is_null()) return "unknown";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// kernel.stack_erasing as a boot recorded it: 0, 1, "not built", "unknown".
std::string StackErasingText(const Json& v) {
  if (v.is_number_integer() && v.get<int64_t>() == campaign::kStackErasingNotBuilt) {
    return "not built";
  }
  return JsonShort(v);
}

// "false (2 of 2 boots)" or "true (1), unknown (1)": what the accepted boots recorded.
template <class T>
std::string Tally(const CampaignState& s, const std::string& profile, std::optional<T> Boot::*field,
                  std::string (*render)(const Json&) = JsonShort) {
  std::vector<std::pair<std::string, int>> counts;
  for (const Boot& b : s.boots) {
    if (b.profile != profile || b.status != BootStatus::kAccepted) continue;
    const std::string v = render(OptionalJson(b.*field));
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == v; });
    if (it == counts.end()) {
      counts.emplace_back(v, 1);
    } else {
      ++it->second;
    }
  }
  if (counts.empty()) return "no accepted boot";
  std::string out;
  for (const auto& [v, n] : counts)
    out += fmt::format("{}{} ({} boots)", out.empty() ? "" : ", ", v, n);
  return out;
}

// Per profile: the mean of each strength figure over its accepted boots.
std::string StrengthText(const CampaignState& s, const std::string& profile) {
  double distinct = 0, shannon = 0, min_entropy = 0;
  int n = 0;
  std::string design;
  std::string geometry;  // the last boot's: " of the 65 its geometry has (0 to 1024 bytes)"
  std::string error;
  for (const Boot& b : s.boots) {
    if (b.profile != profile || b.status != BootStatus::kAccepted || !b.strength.is_object()) {
      continue;
    }
    if (b.strength.contains("error")) {
      error = JsonShort(b.strength["error"]);
      continue;
    }
    if (!b.strength.value("distinct", Json()).is_number()) continue;
    distinct += b.strength["distinct"].get<double>();
    shannon += b.strength.value("shannon_bits", 0.0);
    min_entropy += b.strength.value("min_entropy_bits", 0.0);
    design = JsonShort(b.strength.value("design", Json()));
    if (const Json g = b.strength.value("geometry_offsets", Json()); g.is_number()) {
      geometry = fmt::format(" of the {} its geometry has (0 to {} bytes)", g.get<double>(),
                             b.strength.value("geometry_max_bytes", 0.0));
    }
    ++n;
  }
  if (n == 0) return error.empty() ? "" : "entropy --kernel failed: " + error;
  return fmt::format(
      "{:.0f} distinct offsets{}, {:.2f} bits Shannon, {:.2f} bits min-entropy "
      "(mean of {} boots); design: {}",
      distinct / n, geometry, shannon / n, min_entropy / n, n, design);
}

std::string SysctlText(const Profile& p) {
  std::string out;
  for (const auto& [k, v] : p.sysctls) out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, v);
  return out.empty() ? "-" : out;
}

// The fields that differ between profiles, one line each (mmtests' comparison header).
std::vector<std::string> Differences(const CampaignState& s) {
  struct Field {
    const char* name;
    std::string (*get)(const Profile&);
  };
  static const Field kFields[] = {
      {"kernel", [](const Profile& p) { return p.kernel; }},
      {"release",
       [](const Profile& p) { return p.release.empty() ? std::string("?") : p.release; }},
      {"cmdline", [](const Profile& p) { return "'" + p.cmdline + "'"; }},
      {"initrd", [](const Profile& p) { return p.initrd.empty() ? std::string("-") : p.initrd; }},
      {"sysctl", [](const Profile& p) { return SysctlText(p); }},
  };
  std::vector<std::string> lines;
  for (const Field& f : kFields) {
    std::set<std::string> values;
    for (const Profile& p : s.plan.profiles) values.insert(f.get(p));
    if (values.size() < 2) continue;
    std::string line = fmt::format("  {}:", f.name);
    for (const Profile& p : s.plan.profiles) line += fmt::format(" {} {};", p.name, f.get(p));
    line.pop_back();
    lines.push_back(EscapeControl(line));
  }
  if (lines.empty())
    lines.push_back(
        "  nothing: every profile has the same kernel, command line and sysctls (an A/A campaign)");
  return lines;
}

std::vector<std::string> HeaderLines(const CampaignState& s) {
  std::vector<std::string> out;
  size_t accepted = 0, failed = 0;
  for (const Boot& b : s.boots) {
    accepted += b.status == BootStatus::kAccepted;
    failed += b.status == BootStatus::kFailed;
  }
  out.push_back(fmt::format(
      "campaign: {}{}; {} boots accepted, {} failed; engine {}, accelerator {}",
      CampaignStatusName(s.status), s.stop_reason.empty() ? "" : " (" + s.stop_reason + ")",
      accepted, failed, s.plan.engine.name(), s.accel.empty() ? "none yet" : s.accel));
  if (!s.accel_reason.empty()) out.push_back("accelerator: " + s.accel_reason);
  if (!s.machine_model.empty()) out.push_back("machine: " + EscapeControl(s.machine_model));
  if (!s.machine.empty()) {
    out.push_back(EscapeControl(fmt::format(
        "machine {}: {}{}", s.plan.engine.row().machine(s.plan.engine.settings()).name, s.machine,
        s.machine.rfind("running profile", 0) == 0 || s.machine.rfind("switching", 0) == 0
            ? " (not its default kernel: reboot it to return there)"
            : "")));
  }
  if (s.plan.engine.row().emulated(s.accel)) {
    out.push_back(
        "NOTE: QEMU TCG (software emulation): the times below are the emulator's, not the "
        "kernel's. They serve correctness, offsets and entropy, never costs.");
  }
  out.push_back(fmt::format("run in every boot: kstacklab run {}", EscapeControl([&] {
                              std::string a;
                              for (const std::string& w : s.plan.run_args)
                                a += (a.empty() ? "" : " ") + w;
                              return a.empty() ? std::string("(defaults)") : a;
                            }())));
  if (!s.plan.profiles.empty() && !s.plan.profiles.front().arch.empty()) {
    out.push_back(EscapeControl(fmt::format(
        "architecture: {}{}", s.plan.profiles.front().arch,
        s.plan.kstacklab.empty() ? std::string() : "; kstacklab run there: " + s.plan.kstacklab)));
  }
  out.push_back("profiles (the first is the baseline):");
  for (const Profile& p : s.plan.profiles) {
    out.push_back(fmt::format(
        "  {}: {} accepted, {} failed; kernel {}; effective kstack "
        "randomisation {}; kernel.stack_erasing {}",
        p.name, s.Accepted(p.name), s.Failed(p.name), p.release.empty() ? "?" : p.release,
        Tally(s, p.name, &Boot::effective_kstack_randomization),
        Tally(s, p.name, &Boot::stack_erasing, StackErasingText)));
    if (std::string st = StrengthText(s, p.name); !st.empty()) {
      out.push_back("    strength: " + EscapeControl(st));
    }
    for (const Boot& b : s.boots) {
      if (b.profile == p.name && b.status == BootStatus::kFailed && !b.attempts.empty()) {
        out.push_back(
            EscapeControl(fmt::format("    boot {} failed: {} (console: {})", b.index,
                                      b.attempts.back().reason, b.attempts.back().console)));
      }
    }
  }
  out.push_back("what differs between the profiles:");
  for (std::string& l : Differences(s)) out.push_back(std::move(l));
  return out;
}

std::vector<std::string> PrecisionLines(const CampaignState& s,
                                        const std::optional<campaign::TargetStatus>& p) {
  std::vector<std::string> out;
  if (!p) {
    out.push_back("precision: fewer than 2 accepted boots per profile; no run-to-run MDC yet");
    return out;
  }
  const std::string metric = s.plan.target ? s.plan.target->metric : "mean";
  out.push_back(fmt::format(
      "precision: minimal detectable change (MDC, 80 % power, alpha 0.05) of the {} per row, "
      "samples = boots{}",
      metric,
      s.plan.target ? fmt::format("; target {:g} %: {}", s.plan.target->mdc_pct,
                                  p->reached ? "reached" : "not reached")
                    : std::string()));
  for (const campaign::TargetRow& r : p->rows) {
    out.push_back(EscapeControl(fmt::format(
        "  {}: {} over {} boots", r.row,
        std::isfinite(r.mdc_pct) ? fmt::format("{:.2f} %", r.mdc_pct) : std::string("n/a"),
        r.boots)));
  }
  if (p->needed > 0 && s.plan.target) {
    out.push_back(
        fmt::format("  boots per profile the worst row needs for {:g} % (kstacklab plan's "
                    "rule, from these boots' variance): {}",
                    s.plan.target->mdc_pct, p->needed));
  }
  return out;
}

std::string Lines(const std::vector<std::string>& lines, const char* prefix) {
  std::string out;
  for (const std::string& l : lines) out += prefix + l + "\n";
  return out;
}

}  // namespace

Json CampaignSummaryJson(const CampaignState& s) {
  Json profiles = Json::array();
  for (const Profile& p : s.plan.profiles) {
    Json boots = Json::array();
    for (const Boot& b : s.boots) {
      if (b.profile != p.name) continue;
      boots.push_back(campaign::BootToJson(b));
    }
    profiles.push_back({{"name", p.name},
                        {"kernel", p.kernel},
                        {"release", p.release},
                        {"arch", p.arch},
                        {"cmdline", p.cmdline},
                        {"accepted", s.Accepted(p.name)},
                        {"failed", s.Failed(p.name)},
                        {"boots", std::move(boots)}});
  }
  return {{"status", CampaignStatusName(s.status)},
          {"stop_reason", s.stop_reason},
          {"engine", s.plan.engine.name()},
          {"accelerator", s.accel},
          {"accelerator_reason", s.accel_reason},
          {"machine_model", s.machine_model},
          {"machine", s.machine},
          {"emulated", s.plan.engine.row().emulated(s.accel)},
          {"run", s.plan.run_args},
          {"profiles", std::move(profiles)},
          {"block_reports", s.block_reports}};
}

std::string RenderCampaignReport(const CampaignState& state,
                                 const std::vector<stats::CompareTable>& tables,
                                 const std::optional<campaign::TargetStatus>& precision,
                                 CompareFormat format) {
  if (format == CompareFormat::kJson) {
    Json j = {{"campaign", CampaignSummaryJson(state)}};
    j["comparison"] = tables.empty() ? Json(nullptr) : CompareTablesToJsonValue(tables);
    Json rows = Json::array();
    if (precision) {
      for (const campaign::TargetRow& r : precision->rows) {
        rows.push_back({{"row", r.row},
                        {"boots", r.boots},
                        {"mdc_pct", std::isfinite(r.mdc_pct) ? Json(RoundSignificant(r.mdc_pct, 6))
                                                             : Json(nullptr)}});
      }
    }
    j["precision"] = {{"rows", std::move(rows)},
                      {"reached", precision ? Json(precision->reached) : Json(nullptr)},
                      {"boots_needed", precision ? Json(precision->needed) : Json(nullptr)}};
    return DumpJson(j);
  }
  const char* prefix = format == CompareFormat::kCsv ? "# " : "";
  std::string out = Lines(HeaderLines(state), prefix);
  out += format == CompareFormat::kCsv ? "" : "\n";
  if (tables.empty()) {
    out += std::string(prefix) + "no table: no profile has an accepted boot yet\n";
  } else {
    out += RenderCompareTables(tables, format);
  }
  if (format != CompareFormat::kCsv) out += "\n";
  out += Lines(PrecisionLines(state, precision), prefix);
  return out;
}

}  // namespace kstacklab::report
