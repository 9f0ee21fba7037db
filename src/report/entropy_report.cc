// The entropy statistics' table and JSON (include/kstacklab/report/entropy_report.h).
#include "kstacklab/report/entropy_report.h"

#include <fmt/format.h>

namespace kstacklab::report {

GridTable EntropyStatsTable(
    const std::string& name_column,
    const std::vector<std::pair<std::string, analysis::EntropyStats>>& rows) {
  GridTable t;
  t.header = {
      {name_column, "samples", "distinct", "shannon", "min-ent", "chi2-p", "repeat", "script"}};
  t.right_align = {false, true, true, true, true, true, true, true};
  std::vector<std::vector<std::string>> body;
  for (const auto& [name, s] : rows) {
    body.push_back({name, fmt::format("{}", s.samples), fmt::format("{}", s.distinct),
                    fmt::format("{:.4f}", s.shannon_bits),
                    fmt::format("{:.4f}", s.min_entropy_bits),
                    fmt::format("{:.3g}", s.chi_square_p), fmt::format("{:.5f}", s.repeat_rate),
                    fmt::format("{}", s.script_bits)});
  }
  t.groups = {std::move(body)};
  return t;
}

Json EntropyStatsJson(const analysis::EntropyStats& s) {
  Json j = Json::object();
  j["samples"] = s.samples;
  j["distinct"] = s.distinct;
  j["shannon_bits"] = s.shannon_bits;
  j["min_entropy_bits"] = s.min_entropy_bits;
  j["chi_square"] = s.chi_square;
  j["chi_square_p"] = s.chi_square_p;
  j["repeat_rate"] = s.repeat_rate;
  j["stack_entropy_sh_bits"] = s.script_bits;
  return j;
}

}  // namespace kstacklab::report
