// Renderers of an attack report (include/kstacklab/report/attack_report.h).
#include "kstacklab/report/attack_report.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "kstacklab/report/grid_table.h"
#include "kstacklab/results/json.h"

namespace kstacklab {
namespace {

// Rounded to 6 significant digits so JSON output is stable across printf implementations.
double Round6(double v) {
  if (!std::isfinite(v) || v == 0) return v;
  return RoundSignificant(v, 6);
}

// "check bits" -> "check_bits": JSON keys are snake_case; the table shows the key as given.
std::string JsonKey(std::string key) {
  for (char& c : key) {
    if (c == ' ' || c == '-') c = '_';
  }
  return key;
}

std::string EvidenceText(const analysis::AttackRow& row, const std::string& key) {
  for (const analysis::Evidence& e : row.evidence) {
    if (e.key == key) return e.lower_bound.value_or(false) ? ">=" + e.text : e.text;
  }
  return "";
}

}  // namespace

std::string RenderAttackTable(const analysis::AttackReport& report) {
  GridTable t;
  std::vector<std::string> keys;
  if (!report.rows.empty()) {
    for (const analysis::Evidence& e : report.rows.front().evidence) keys.push_back(e.key);
  }
  std::vector<std::string> header = {"design",   "setting",  "observed",  "predicted", "correct",
                                     "accuracy", "x chance", "bits left", "verdict"};
  t.right_align = {false, false, true, true, true, true, true, true, false};
  for (const std::string& k : keys) {
    header.push_back(k);
    t.right_align.push_back(true);
  }
  t.header.push_back(header);
  std::vector<std::vector<std::string>> group;
  for (const analysis::AttackRow& r : report.rows) {
    std::vector<std::string> cells = {
        r.design,
        r.setting,
        fmt::format("{}", r.observations),
        fmt::format("{}", r.predicted),
        fmt::format("{}", r.correct),
        r.predicted == 0 ? "-" : fmt::format("{:.4f}", r.accuracy),
        r.predicted == 0 || r.chance <= 0 ? "-" : fmt::format("{:.1f}", r.accuracy / r.chance),
        fmt::format("{:.2f}", r.remaining_bits),
        r.verdict};
    for (const std::string& k : keys) cells.push_back(EvidenceText(r, k));
    group.push_back(std::move(cells));
  }
  t.groups.push_back(std::move(group));
  std::string out =
      fmt::format("attack {} ({}, seed {})\n", report.attack, report.mode, report.seed);
  out += RenderGrid(t);
  out += fmt::format("Claim: {}\n", report.claim);
  out += fmt::format("Chance: {:.5f} ({}); x chance = accuracy / chance.\n", report.chance,
                     report.chance_meaning);
  if (!report.remaining_bits_meaning.empty()) {
    out += fmt::format("bits left: {}\n", report.remaining_bits_meaning);
  }
  for (const std::string& n : report.notes) out += n + "\n";
  return out;
}

Json AttackReportToJson(const analysis::AttackReport& report) {
  Json j = Json::object();
  j["schema"] = "kstacklab-attack/1";
  j["attack"] = report.attack;
  j["mode"] = report.mode;
  j["seed"] = report.seed;
  j["claim"] = report.claim;
  j["chance"] = report.chance;
  j["chance_meaning"] = report.chance_meaning;
  j["remaining_bits_meaning"] = report.remaining_bits_meaning;
  Json rows = Json::array();
  for (const analysis::AttackRow& r : report.rows) {
    Json row = {{"design", r.design},
                {"setting", r.setting},
                {"observations", r.observations},
                {"predicted", r.predicted},
                {"correct", r.correct},
                {"accuracy", Round6(r.accuracy)},
                {"chance", r.chance},
                {"remaining_bits", Round6(r.remaining_bits)},
                {"verdict", r.verdict}};
    for (const analysis::Evidence& e : r.evidence) {
      if (e.number) {
        row[JsonKey(e.key)] = Round6(std::strtod(e.text.c_str(), nullptr));
      } else {
        row[JsonKey(e.key)] = e.text;
      }
      if (e.lower_bound) row[JsonKey(e.key) + "_lower_bound"] = *e.lower_bound;
    }
    rows.push_back(std::move(row));
  }
  j["rows"] = std::move(rows);
  j["notes"] = report.notes;
  return j;
}

std::string RenderAttackJson(const analysis::AttackReport& report) {
  return DumpJson(AttackReportToJson(report));
}

}  // namespace kstacklab
