// Renderers of the comparison table (include/kstacklab/report/compare_report.h).
#include "kstacklab/report/compare_report.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <string>

#include "kstacklab/common/text.h"
#include "kstacklab/report/grid_table.h"
#include "kstacklab/results/json.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/stats/stats.h"

namespace kstacklab::report {
namespace {

std::string ValueText(double v) {
  if (!std::isfinite(v)) return "";
  if (std::fabs(v) >= 1e7) return fmt::format("{:.4g}", v);
  return fmt::format("{:.2f}", v);
}

// A percentage as the grid and Markdown show it: 2 decimals, 4 significant digits from 10^7 on
// (1.7e308 would print 300 digits), and "n/a" where it is not finite (JSON has null there,
// CSV an empty field: the three agree).
std::string PctText(double pct) {
  if (!std::isfinite(pct)) return "n/a";
  if (std::fabs(pct) >= 1e7) return fmt::format("{:.4g}%", pct);
  return fmt::format("{:.2f}%", pct);
}

// The row's Result Class in its table (the metric is in it when the table compares several).
std::string ResultClassOf(const stats::CompareTable& t, const stats::CompareRow& r) {
  return RowResultClass(r.key, r.metric, r.unit, t.options.metrics.size() > 1);
}

std::string BaselineCellText(const stats::CompareRow& r) {
  if (!r.baseline.present()) return "";
  return ValueText(r.baseline.value) + " " + r.unit;
}

std::string VariantCellText(const stats::CompareCell& c, const std::string& unit) {
  if (!c.present()) return "";
  // No change to show (no baseline for this row, or a baseline <= 0 or below one timer step):
  // the column's own value.
  if (std::isnan(c.change_pct)) {
    return ValueText(c.value) + " " + unit + (c.BaselineUnresolved() ? " #" : "");
  }
  std::string s = PctText(c.change_pct);
  if (c.verdict != stats::Verdict::kNone)
    s = fmt::format("({}) {}", stats::VerdictCode(c.verdict), s);
  if (c.status == stats::CellStatus::kTooFew) s += " *";
  if (c.status == stats::CellStatus::kNoRunVariance) s += " ~";
  if (c.below_timer_step) s += " (s)";
  return s;
}

GridTable ToGrid(const stats::CompareTable& t) {
  GridTable g;
  std::vector<std::string> h1 = {"Benchmark", "Result Class"}, h2 = {"", ""};
  g.right_align = {false, false};
  for (size_t i = 0; i < t.columns.size(); ++i) {
    h1.push_back(t.columns[i].name);
    h2.push_back(i == 0 ? "(baseline)" : "");
    g.right_align.push_back(true);
  }
  g.header = {h1, h2};
  for (const stats::CompareRow& r : t.rows) {
    if (r.first_in_group || g.groups.empty()) g.groups.emplace_back();
    std::vector<std::string> row = {r.first_in_group ? CompareRowName(r.key) : "",
                                    ResultClassOf(t, r), BaselineCellText(r)};
    for (const stats::CompareCell& c : r.variants) row.push_back(VariantCellText(c, r.unit));
    g.groups.back().push_back(std::move(row));
  }
  return g;
}

// "10" or "8-10" over the rows.
std::string Range(int lo, int hi) {
  return lo == hi ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi);
}

double Rounded(double v) { return RoundSignificant(v, 10); }

Json JsonNumber(double v) {
  if (!std::isfinite(v)) return Json(nullptr);
  return Json(Rounded(v));
}

std::string CsvNum(double v) { return std::isfinite(v) ? fmt::format("{:.10g}", v) : ""; }

// "run 1.20%, session 0.40%, repetition 0.80%": each component's SD as % of the cell's value.
std::string ComponentsText(const stats::CompareCell& c) {
  const stats::VarianceComponents& vc = c.components;
  std::string out;
  auto part = [&](const char* level, double var) {
    const double pct = stats::ComponentSdPercent(var, c.value);
    if (std::isnan(pct)) return;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", level, PctText(pct));
  };
  part("run", vc.run);
  part("session", vc.session);
  part("repetition", vc.repetition);
  return out;
}

// Verbose footer: one line per cell whose data vary at the run or session level.
std::vector<std::string> ComponentLines(const stats::CompareTable& t) {
  std::vector<std::string> out;
  for (const stats::CompareRow& r : t.rows) {
    for (size_t i = 0; i < t.columns.size(); ++i) {
      const stats::CompareCell& c = i == 0 ? r.baseline : r.variants[i - 1];
      if (!c.present() || (c.runs < 2 && c.sessions < 2) || !(c.value != 0)) continue;
      out.push_back(fmt::format(
          "Variance components (SD as % of the value) {} {} [{}]: {} ({} runs, {} sessions, {} "
          "repetitions)",
          CompareRowLabel(r.key), r.metric, t.columns[i].name, ComponentsText(c), c.runs,
          c.sessions, c.repetitions));
    }
  }
  return out;
}

Json ComponentsJson(const stats::VarianceComponents& vc) {
  return Json{{"run", JsonNumber(vc.run)},
              {"session", JsonNumber(vc.session)},
              {"repetition", JsonNumber(vc.repetition)},
              {"runs", vc.runs},
              {"sessions_per_run", JsonNumber(vc.sessions_per_run)},
              {"repetitions_per_session", JsonNumber(vc.repetitions_per_session)}};
}

// Each drifting row and session of the inputs, with its fits (compare.h DriftFinding).
Json DriftToJson(const std::vector<stats::DriftFinding>& drift) {
  Json out = Json::array();
  for (const stats::DriftFinding& d : drift) {
    Json metrics = Json::array();
    for (const stats::DriftMetric& m : d.metrics) {
      metrics.push_back({{"metric", m.metric},
                         {"change_pct", JsonNumber(m.change_pct)},
                         {"change", JsonNumber(m.change)},
                         {"residual_sd_pct", JsonNumber(m.residual_sd_pct)},
                         {"p", JsonNumber(m.p)}});
    }
    out.push_back({{"source", d.source},
                   {"row", DriftRowName(d)},
                   {"unit", d.unit},
                   {"session", d.session},
                   {"repetitions", d.repetitions},
                   {"metrics", std::move(metrics)}});
  }
  return out;
}

}  // namespace

std::string CsvField(const std::string& raw) {
  std::string s = EscapeControl(raw);  // no NUL, newline or ESC reaches the file
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

Expected<CompareFormat> ParseCompareFormat(const std::string& text) {
  if (text == "grid") return CompareFormat::kGrid;
  if (text == "markdown" || text == "md") return CompareFormat::kMarkdown;
  if (text == "csv") return CompareFormat::kCsv;
  if (text == "json") return CompareFormat::kJson;
  return UsageError(
      fmt::format("output format '{}' is unknown; use one of: grid, markdown, csv, json", text));
}

std::vector<std::string> CompareFooter(const stats::CompareTable& t) {
  std::vector<std::string> out;
  bool any_lower = false, any_higher = false;
  for (const stats::CompareRow& r : t.rows) (r.lower_is_better ? any_lower : any_higher) = true;
  std::string sign = "Sign: + % = the column's value is larger than the baseline's.";
  if (any_lower) {
    sign += any_higher ? " Rows where lower is better (times):"
                       : " Lower is better in every row (times):";
    sign += " + % = slower = worse -> (R), - % = faster -> (I).";
  }
  if (any_higher) {
    sign += any_lower ? " Rows where higher is better:" : " Higher is better in every row:";
    sign += " + % = better -> (I), - % = worse -> (R).";
  }
  out.push_back(sign);
  out.push_back("Method: " + MethodDescription(t.options) + ".");
  bool any_runs = false;
  for (const stats::CompareRow& r : t.rows) {
    any_runs = any_runs || r.baseline.unit == stats::SampleUnit::kRun;
    for (const stats::CompareCell& c : r.variants)
      any_runs = any_runs || c.unit == stats::SampleUnit::kRun;
  }
  std::string samples = any_runs ? "Samples per side (n = repetitions; sessions when a column "
                                   "holds several; runs when it groups several):"
                                 : "Samples per side (n = repetitions; sessions when a column "
                                   "holds several):";
  for (size_t i = 0; i < t.columns.size(); ++i) {
    int lo = 1 << 30, hi = 0, slo = 1 << 30, shi = 0;
    bool hier = false, runs = false;
    for (const stats::CompareRow& r : t.rows) {
      const stats::CompareCell& c = i == 0 ? r.baseline : r.variants[i - 1];
      if (!c.present()) continue;
      lo = std::min(lo, c.n);
      hi = std::max(hi, c.n);
      slo = std::min(slo, c.repetitions);
      shi = std::max(shi, c.repetitions);
      hier = hier || c.unit == stats::SampleUnit::kSession;
      runs = runs || c.unit == stats::SampleUnit::kRun;
    }
    if (hi == 0) {
      samples += fmt::format(" {} none;", t.columns[i].name);
    } else if (runs) {
      samples += fmt::format(" {} {} runs ({} repetitions);", t.columns[i].name, Range(lo, hi),
                             Range(slo, shi));
    } else if (hier) {
      samples += fmt::format(" {} {} sessions ({} repetitions);", t.columns[i].name, Range(lo, hi),
                             Range(slo, shi));
    } else {
      samples += fmt::format(" {} {};", t.columns[i].name, Range(lo, hi));
    }
  }
  samples.back() = '.';
  out.push_back(samples);
  for (const std::string& n : CompareNoteLines(t)) out.push_back("Note: " + n);
  if (t.options.verbose) {
    for (std::string& l : ComponentLines(t)) out.push_back(std::move(l));
  }
  return out;
}

std::string RenderCompareGrid(const stats::CompareTable& t) {
  std::string out = RenderGrid(ToGrid(t));
  for (const std::string& l : CompareFooter(t)) out += l + "\n";
  return out;
}

std::string RenderCompareMarkdown(const stats::CompareTable& t) {
  std::string out = RenderMarkdownTable(ToGrid(t)) + "\n";
  for (const std::string& l : CompareFooter(t)) out += "- " + l + "\n";
  return out;
}

std::string RenderCompareCsv(const stats::CompareTable& t) {
  std::string out =
      "benchmark,params,metric,unit,lower_is_better,column,role,value,n,repetitions,sessions,"
      "runs,change_pct,ci_low_pct,ci_high_pct,p_value,p_adjusted,mdc_pct,verdict,"
      "no_run_variance\n";
  for (const stats::CompareRow& r : t.rows) {
    for (size_t i = 0; i < t.columns.size(); ++i) {
      const stats::CompareCell& c = i == 0 ? r.baseline : r.variants[i - 1];
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                         CsvField(CompareRowName(r.key)), CsvField(ParamsText(r.key.params)),
                         CsvField(r.metric), CsvField(r.unit), r.lower_is_better ? "true" : "false",
                         CsvField(t.columns[i].name), i == 0 ? "baseline" : "variant",
                         CsvNum(c.value), c.present() ? fmt::format("{}", c.n) : "",
                         c.present() ? fmt::format("{}", c.repetitions) : "",
                         c.present() ? fmt::format("{}", c.sessions) : "",
                         c.present() ? fmt::format("{}", c.runs) : "", CsvNum(c.change_pct),
                         CsvNum(c.ci_low_pct), CsvNum(c.ci_high_pct), CsvNum(c.p_value),
                         CsvNum(c.p_adjusted), CsvNum(c.mdc_pct),
                         i == 0 || !c.present() ? "" : stats::VerdictCode(c.verdict),
                         c.status == stats::CellStatus::kNoRunVariance ? "true" : "");
    }
  }
  for (const std::string& l : CompareFooter(t)) out += "# " + l + "\n";
  return out;
}

Json CompareToJsonValue(const stats::CompareTable& t) {
  Json rows = Json::array();
  for (const stats::CompareRow& r : t.rows) {
    Json jr;
    jr["benchmark"] = CompareRowName(r.key);
    jr["params"] = r.key.params;
    jr["result_class"] = ResultClassOf(t, r);
    jr["metric"] = r.metric;
    jr["unit"] = r.unit;
    jr["lower_is_better"] = r.lower_is_better;
    auto cell = [&](const stats::CompareCell& c, const std::string& label, bool variant) {
      Json j;
      j["label"] = label;
      j["value"] = c.present() ? JsonNumber(c.value) : Json(nullptr);
      j["n"] = c.present() ? Json(c.n) : Json(nullptr);
      j["repetitions"] = c.present() ? Json(c.repetitions) : Json(nullptr);
      j["sessions"] = c.present() ? Json(c.sessions) : Json(nullptr);
      j["runs"] = c.present() ? Json(c.runs) : Json(nullptr);
      j["sample_unit"] = c.present() ? Json(stats::SampleUnitName(c.unit)) : Json(nullptr);
      j["sd"] = c.present() ? JsonNumber(c.sd) : Json(nullptr);
      j["variance_components"] = c.present() ? ComponentsJson(c.components) : Json(nullptr);
      if (variant) {
        j["change_pct"] = JsonNumber(c.change_pct);
        j["ci_low_pct"] = JsonNumber(c.ci_low_pct);
        j["ci_high_pct"] = JsonNumber(c.ci_high_pct);
        j["p_value"] = JsonNumber(c.p_value);
        j["p_adjusted"] = JsonNumber(c.p_adjusted);
        j["mdc_pct"] = JsonNumber(c.mdc_pct);
        j["too_few"] = c.status == stats::CellStatus::kTooFew;
        j["no_run_variance"] = c.status == stats::CellStatus::kNoRunVariance;
        j["below_timer_step"] = c.below_timer_step;
        j["baseline_not_positive"] = c.status == stats::CellStatus::kBaselineNotPositive;
        j["baseline_below_timer_step"] = c.status == stats::CellStatus::kBaselineBelowTimerStep;
        j["verdict"] = stats::VerdictCode(c.verdict);
      }
      return j;
    };
    jr["baseline"] = cell(r.baseline, t.columns[0].name, false);
    Json vs = Json::array();
    for (size_t i = 0; i < r.variants.size(); ++i)
      vs.push_back(cell(r.variants[i], t.columns[i + 1].name, true));
    jr["variants"] = std::move(vs);
    rows.push_back(std::move(jr));
  }
  Json columns = Json::array();
  for (const stats::CompareColumn& c : t.columns)
    columns.push_back({{"name", c.name},
                       {"source", c.source},
                       {"sources", c.sources},
                       {"label", c.label},
                       {"variant", c.variant}});
  const stats::CompareOptions& o = t.options;
  Json j;
  j["rows"] = std::move(rows);
  j["columns"] = std::move(columns);
  j["method"] = o.method == stats::VerdictMethod::kFastpath ? "fastpath" : "ci";
  j["method_description"] = MethodDescription(o);
  j["test"] = o.test == stats::SignificanceTest::kWelch ? "welch" : "mwu";
  j["ci"] = "fieller";
  j["correction"] = o.correction == stats::Correction::kHolm ? "holm" : "none";
  j["alpha"] = o.alpha;
  j["min_effect_pct"] = o.min_effect_pct;
  j["power"] = o.power;
  j["sign"] =
      "positive change_pct = the variant's value is larger than the baseline's; "
      "with lower_is_better that is worse (R)";
  j["notes"] = CompareNoteLines(t);
  if (!t.findings.drift.empty()) j["drift"] = DriftToJson(t.findings.drift);
  return j;
}

std::string RenderCompareJson(const stats::CompareTable& t) {
  return DumpJson(CompareToJsonValue(t));
}

std::string RenderCompare(const stats::CompareTable& t, CompareFormat format) {
  switch (format) {
    case CompareFormat::kGrid:
      return RenderCompareGrid(t);
    case CompareFormat::kMarkdown:
      return RenderCompareMarkdown(t);
    case CompareFormat::kCsv:
      return RenderCompareCsv(t);
    case CompareFormat::kJson:
      return RenderCompareJson(t);
  }
  return RenderCompareGrid(t);
}

Json CompareTablesToJsonValue(const std::vector<stats::CompareTable>& tables) {
  if (tables.size() == 1) return CompareToJsonValue(tables.front());
  Json all = Json::array();
  for (const stats::CompareTable& t : tables) all.push_back(CompareToJsonValue(t));
  return Json{{"tables", std::move(all)}};
}

std::string RenderCompareTables(const std::vector<stats::CompareTable>& tables,
                                CompareFormat format) {
  if (format == CompareFormat::kJson) return DumpJson(CompareTablesToJsonValue(tables));
  if (tables.size() == 1) return RenderCompare(tables.front(), format);
  std::string out;
  for (size_t i = 0; i < tables.size(); ++i) {
    std::string text = RenderCompare(tables[i], format);
    if (format == CompareFormat::kCsv && i > 0) {
      text.erase(0, text.find('\n') + 1);  // the header line, already written
    } else if (i > 0) {
      out += "\n";
    }
    out += text;
  }
  return out;
}

}  // namespace kstacklab::report
