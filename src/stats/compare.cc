// BuildCompareTable (include/kstacklab/compare.h): columns from files and variants, rows from
// benchmarks x metrics, and the per-cell statistics of stats.h. Definitions:
// docs/reading-tables.md.
#include "kstacklab/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "kstacklab/stats.h"
#include "stats/samples.h"

namespace kstacklab {
namespace {

constexpr int kMinSamples = 3;
// Drift is tested on every (file, benchmark, variant, metric, session) series; a fixed strict
// level keeps false alarms rare (0.1 % per series) whatever --alpha is.
constexpr double kDriftAlpha = 0.001;

std::string FileStem(const std::string& source) {
  if (source == "-") return "stdin";
  std::string s = source;
  size_t slash = s.find_last_of('/');
  if (slash != std::string::npos) s = s.substr(slash + 1);
  size_t dot = s.find_last_of('.');
  if (dot != std::string::npos && dot > 0) s = s.substr(0, dot);
  return s.empty() ? source : s;
}

std::string JoinStrings(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string ShortName(const std::string& benchmark) {
  size_t slash = benchmark.find_last_of('/');
  return slash == std::string::npos ? benchmark : benchmark.substr(slash + 1);
}

Verdict Direction(double change_pct, bool lower_is_better) {
  bool larger = change_pct > 0;
  return larger == lower_is_better ? Verdict::kRegression : Verdict::kImprovement;
}

std::string Pct(double v) { return fmt::format("{:.2f}%", v); }

}  // namespace

const char* VerdictCode(Verdict v) {
  switch (v) {
    case Verdict::kRegression:
      return "R";
    case Verdict::kImprovement:
      return "I";
    case Verdict::kNone:
      break;
  }
  return "-";
}

std::string MethodDescription(const CompareOptions& o) {
  double level = 100 * (1 - o.alpha);
  std::string test =
      o.test == SignificanceTest::kWelch ? "Welch's t-test" : "Mann-Whitney U (two-sided)";
  std::string p_rule = o.correction == Correction::kHolm
                           ? fmt::format("the Holm-adjusted p ({}) < {:g}", test, o.alpha)
                           : fmt::format("p ({}) < {:g}", test, o.alpha);
  std::string rule;
  if (o.method == VerdictMethod::kFastpath) {
    rule = fmt::format(
        "fastpath: (R)/(I) when the {:g}% Student-t intervals of the two means do not "
        "overlap{}",
        level, o.correction == Correction::kHolm ? " and " + p_rule : "");
  } else {
    rule = fmt::format(
        "ci: (R)/(I) when the {:g}% CI of the % change (Fieller's theorem, "
        "Welch-Satterthwaite df) excludes 0 and {}",
        level, p_rule);
  }
  if (o.min_effect_pct > 0) rule += fmt::format(" and |change| >= {:g}%", o.min_effect_pct);
  return rule + fmt::format("; alpha {:g}", o.alpha);
}

Expected<CompareTable> BuildCompareTable(const std::vector<CompareInput>& inputs,
                                         const CompareOptions& options) {
  if (inputs.empty()) return UsageError("compare needs at least one result file or store id");
  if (!(options.alpha > 0 && options.alpha < 0.5)) {
    return UsageError(fmt::format(
        "--alpha {:g} is out of range; give a value in (0, 0.5), e.g. 0.05", options.alpha));
  }
  if (!(options.power > 0 && options.power < 1)) {
    return UsageError(fmt::format("--power {:g} is out of range; give a value in (0, 1), e.g. 0.8",
                                  options.power));
  }
  if (!(options.min_effect_pct >= 0) || !std::isfinite(options.min_effect_pct)) {
    return UsageError("--min-effect must be a finite percentage >= 0, e.g. 1 for 1 %");
  }
  if (options.metrics.empty()) return UsageError("--metrics is empty; give e.g. mean,p99,p99.9");

  CompareTable table;
  table.options = options;

  // Metrics stored anywhere: the allowed values of --metrics.
  std::set<std::string> stored;
  for (const CompareInput& in : inputs)
    for (const BenchmarkResult& b : in.run.benchmarks)
      for (const Repetition& r : b.repetitions)
        for (const auto& [k, v] : r.metrics) stored.insert(k);
  for (const std::string& m : options.metrics) {
    if (!stored.count(m)) {
      std::vector<std::string> names;
      for (const std::string& k : MetricNames())
        if (stored.count(k)) names.push_back(k);
      for (const std::string& k : stored)
        if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
      return UsageError(fmt::format("--metrics: unknown metric '{}'; the inputs store: {}", m,
                                    names.empty() ? "(no metrics)" : JoinStrings(names, ", ")));
    }
  }

  // Columns: per file, its variants in order of first appearance.
  std::vector<std::string> base_labels;
  for (const CompareInput& in : inputs)
    base_labels.push_back(in.run.label.empty() ? FileStem(in.source) : in.run.label);
  {
    std::map<std::string, int> uses;
    for (const std::string& l : base_labels) ++uses[l];
    for (size_t i = 0; i < inputs.size(); ++i)
      if (uses[base_labels[i]] > 1) base_labels[i] = FileStem(inputs[i].source);
    std::map<std::string, int> again;
    for (const std::string& l : base_labels) ++again[l];
    std::map<std::string, int> seen;
    for (std::string& l : base_labels)
      if (again[l] > 1) l += fmt::format("#{}", ++seen[l]);
  }
  std::vector<size_t> column_input;
  std::vector<CompareColumn> columns;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<std::string> variants;
    for (const BenchmarkResult& b : inputs[i].run.benchmarks)
      if (std::find(variants.begin(), variants.end(), b.variant) == variants.end())
        variants.push_back(b.variant);
    if (variants.empty()) variants.push_back("");
    for (const std::string& v : variants) {
      CompareColumn c;
      c.source = inputs[i].source;
      c.label = inputs[i].run.label;
      c.variant = v;
      // One file: its label is common to every column, so a variant names its column alone.
      c.name = v.empty() ? base_labels[i] : inputs.size() == 1 ? v : base_labels[i] + ":" + v;
      columns.push_back(c);
      column_input.push_back(i);
    }
  }

  // Baseline.
  size_t base = 0;
  if (options.baseline.empty()) {
    for (size_t c = 0; c < columns.size() && column_input[c] == 0; ++c) {
      if (columns[c].variant == "off" || columns[c].variant == "generic") {
        base = c;
        break;
      }
    }
  } else {
    const std::string& want = options.baseline;
    std::vector<size_t> hits;
    for (size_t c = 0; c < columns.size(); ++c)
      if (columns[c].name == want) hits.push_back(c);
    if (hits.empty()) {
      for (size_t c = 0; c < columns.size(); ++c) {
        const CompareColumn& col = columns[c];
        std::string full = col.variant.empty() ? col.label : col.label + ":" + col.variant;
        if (full == want || (!col.variant.empty() && col.variant == want) ||
            (col.variant.empty() && col.label == want))
          hits.push_back(c);
      }
    }
    if (hits.size() != 1) {
      std::vector<std::string> names;
      for (const CompareColumn& c : columns) names.push_back(c.name);
      return UsageError(fmt::format("--baseline '{}' {} a column; the columns are: {}", want,
                                    hits.empty() ? "does not name" : "names more than one",
                                    JoinStrings(names, ", ")));
    }
    base = hits[0];
  }
  std::vector<size_t> order{base};
  for (size_t c = 0; c < columns.size(); ++c)
    if (c != base) order.push_back(c);
  for (size_t c : order) table.columns.push_back(columns[c]);

  // Row keys: (name, params) in order of first appearance, grouped by name.
  struct Key {
    std::string name;
    Json params;
  };
  std::vector<std::string> names;
  std::map<std::string, std::vector<Key>> keys_by_name;
  std::set<std::pair<std::string, std::string>> seen_keys;
  for (size_t c : order) {
    for (const BenchmarkResult& b : inputs[column_input[c]].run.benchmarks) {
      if (b.variant != columns[c].variant) continue;
      if (!seen_keys.insert({b.name, b.params.dump()}).second) continue;
      if (!keys_by_name.count(b.name)) names.push_back(b.name);
      keys_by_name[b.name].push_back({b.name, b.params});
    }
  }

  std::vector<std::pair<std::string, std::vector<std::string>>> missing;  // row key -> columns
  std::set<std::string> no_metric_notes;
  bool any_too_few = false;
  std::map<std::string, std::vector<std::string>> hierarchical_cols;  // column -> benchmarks
  // MDC per benchmark name and metric: the largest over its rows' variant cells.
  std::map<std::string, std::map<std::string, double>> mdc;

  for (const std::string& name : names) {
    bool first = true;
    for (const Key& key : keys_by_name[name]) {
      std::string params_dump = key.params.dump();
      // Entries per column (in table order) and the unit check.
      std::vector<std::vector<const BenchmarkResult*>> entries(order.size());
      std::string unit, unit_col;
      bool lower_is_better = true, have_direction = false;
      for (size_t k = 0; k < order.size(); ++k) {
        size_t c = order[k];
        for (const BenchmarkResult& b : inputs[column_input[c]].run.benchmarks) {
          if (b.name != key.name || b.variant != columns[c].variant ||
              b.params.dump() != params_dump)
            continue;
          if (unit_col.empty()) {
            unit = b.unit;
            unit_col = columns[c].name;
          } else if (b.unit != unit) {
            return UsageError(fmt::format(
                "benchmark '{}' has unit '{}' in '{}' but '{}' in '{}'; compare results "
                "measured in the same unit",
                key.name, unit, unit_col, b.unit, columns[c].name));
          }
          if (!have_direction) {
            lower_is_better = b.lower_is_better;
            have_direction = true;
          }
          entries[k].push_back(&b);
        }
      }
      std::string params_text = ParamsText(key.params);
      std::vector<std::string> absent;
      for (size_t k = 0; k < order.size(); ++k)
        if (entries[k].empty()) absent.push_back(table.columns[k].name);
      if (!absent.empty())
        missing.emplace_back(key.name + (params_text.empty() ? "" : " " + params_text), absent);
      for (const std::string& metric : options.metrics) {
        std::vector<CellSamples> samples;
        bool any = false;
        for (size_t k = 0; k < order.size(); ++k) {
          samples.push_back(SamplesOf(entries[k], metric));
          any = any || !samples.back().samples.empty();
        }
        if (!any) {
          no_metric_notes.insert(
              fmt::format("{}{}: no '{}' values (loop-mode results carry mean only)", key.name,
                          params_text.empty() ? "" : " " + params_text, metric));
          continue;
        }
        CompareRow row;
        row.benchmark = key.name;
        row.params = key.params;
        row.params_text = params_text;
        row.metric = metric;
        row.unit = unit;
        row.lower_is_better = lower_is_better;
        std::string cls;
        if (!params_text.empty()) cls = ShortName(key.name) + ": " + params_text;
        if (params_text.empty() || options.metrics.size() > 1)
          cls += (cls.empty() ? "" : " ") + metric;
        row.result_class = cls.append(" (").append(unit).append(")");
        row.first_in_group = first;
        first = false;

        std::vector<CompareCell> cells;
        for (size_t k = 0; k < order.size(); ++k) {
          const CellSamples& s = samples[k];
          CompareCell cell;
          cell.present = !s.samples.empty();
          if (cell.present) {
            cell.value = stats::Mean(s.samples);
            cell.sd = stats::StdDev(s.samples);
            cell.n = static_cast<int>(s.samples.size());
            cell.repetitions = s.repetitions;
            cell.sessions = s.sessions;
            cell.hierarchical = s.hierarchical;
            if (s.hierarchical) hierarchical_cols[table.columns[k].name].push_back(key.name);
          }
          cells.push_back(cell);
        }
        const CompareCell& b = cells[0];
        const std::vector<double>& bs = samples[0].samples;
        for (size_t k = 1; k < order.size(); ++k) {
          CompareCell& v = cells[k];
          if (!v.present || !b.present || !(b.value != 0) || !std::isfinite(b.value)) continue;
          const std::vector<double>& vs = samples[k].samples;
          v.change_pct = 100 * (v.value / b.value - 1);
          if (b.n < kMinSamples || v.n < kMinSamples) {
            v.too_few = true;
            any_too_few = true;
            continue;
          }
          stats::RatioInterval ci = stats::FiellerRatioCi(vs, bs, options.alpha);
          if (ci.bounded) {
            v.ci_low_pct = 100 * (ci.low - 1);
            v.ci_high_pct = 100 * (ci.high - 1);
          }
          v.p_value = options.test == SignificanceTest::kWelch ? stats::WelchTTest(vs, bs).p
                                                               : stats::MannWhitneyU(vs, bs).p;
          v.p_adjusted = v.p_value;
          double mdd = stats::MinimalDetectableDifference(stats::Variance(vs), vs.size(),
                                                          stats::Variance(bs), bs.size(),
                                                          options.alpha, options.power);
          v.mdc_pct = 100 * mdd / std::fabs(b.value);
          if (std::isfinite(v.mdc_pct)) {
            double& slot = mdc[key.name][metric];
            slot = std::max(slot, v.mdc_pct);
          }
        }
        row.baseline = cells[0];
        row.variants.assign(cells.begin() + 1, cells.end());
        table.rows.push_back(std::move(row));
      }
    }
  }

  // Holm across every decidable cell of the table.
  if (options.correction == Correction::kHolm) {
    std::vector<double> p;
    for (const CompareRow& r : table.rows)
      for (const CompareCell& c : r.variants) p.push_back(c.p_value);
    std::vector<double> adj = stats::HolmAdjust(p);
    size_t i = 0;
    for (CompareRow& r : table.rows)
      for (CompareCell& c : r.variants) c.p_adjusted = adj[i++];
  }

  // Verdicts.
  for (CompareRow& r : table.rows) {
    for (size_t k = 0; k < r.variants.size(); ++k) {
      CompareCell& v = r.variants[k];
      if (v.too_few || std::isnan(v.p_adjusted) || std::isnan(v.change_pct)) continue;
      bool significant = false;
      if (options.method == VerdictMethod::kFastpath) {
        // Recompute the per-side intervals from the same samples.
        double tb = stats::StudentTQuantile(1 - options.alpha / 2, r.baseline.n - 1);
        double tv = stats::StudentTQuantile(1 - options.alpha / 2, v.n - 1);
        double hb = tb * r.baseline.sd / std::sqrt(r.baseline.n);
        double hv = tv * v.sd / std::sqrt(v.n);
        significant = v.value - hv > r.baseline.value + hb || v.value + hv < r.baseline.value - hb;
        if (options.correction == Correction::kHolm)
          significant = significant && v.p_adjusted < options.alpha;
      } else {
        bool excludes = !std::isnan(v.ci_low_pct) && (v.ci_low_pct > 0 || v.ci_high_pct < 0);
        significant = excludes && v.p_adjusted < options.alpha;
      }
      if (significant && std::fabs(v.change_pct) >= options.min_effect_pct && v.change_pct != 0)
        v.verdict = Direction(v.change_pct, r.lower_is_better);
    }
  }

  // Notes.
  if (inputs.size() == 1 && columns.size() > 1) {
    table.notes.push_back(fmt::format(
        "columns are the variants of one run: '{}' ({}), measured round-robin by repetition",
        inputs[0].run.label, inputs[0].source));
  }
  if (any_too_few) {
    table.notes.push_back(
        "* fewer than 3 samples (repetitions, or sessions) on a side: the change is shown without "
        "CI or verdict; run more repetitions");
  }
  for (const auto& [col, benches] : hierarchical_cols) {
    std::set<std::string> uniq(benches.begin(), benches.end());
    table.notes.push_back(fmt::format(
        "column '{}' holds several sessions: samples are session means, n = sessions, so the "
        "between-session variance is included ({})",
        col, JoinStrings(std::vector<std::string>(uniq.begin(), uniq.end()), ", ")));
  }
  for (const auto& [row, cols] : missing)
    table.notes.push_back(
        fmt::format("{}: absent from {} (blank cells)", row, JoinStrings(cols, ", ")));
  for (const std::string& n : no_metric_notes) table.notes.push_back(n);
  bool mdc_explained = false;
  for (const std::string& name : names) {
    auto it = mdc.find(name);
    if (it == mdc.end()) continue;
    std::vector<std::string> parts;
    for (const std::string& m : options.metrics) {
      auto jt = it->second.find(m);
      if (jt != it->second.end()) parts.push_back(m + " " + Pct(jt->second));
    }
    if (!mdc_explained) {
      table.notes.push_back(fmt::format(
          "MDC = minimal detectable change at {:g}% power and alpha {:g} with the observed SDs and "
          "n (largest over the columns); smaller true changes are likely to go unmarked",
          100 * options.power, options.alpha));
      mdc_explained = true;
    }
    table.notes.push_back(fmt::format("{}: MDC {}", name, JoinStrings(parts, ", ")));
  }

  // Drift of each file's repetitions (per session), for the requested metrics: one line per
  // benchmark entry listing its drifting metrics. Columns of one file were measured round-robin
  // by repetition (`run` interleaves its rows), so there the drift is shared and only widens the
  // CIs; across files it biases the comparison, and a warning says so.
  std::vector<std::string> shared_drift;
  for (const CompareInput& in : inputs) {
    for (const BenchmarkResult& b : in.run.benchmarks) {
      std::map<int, std::vector<std::string>> drifting;  // session -> "metric +x%"
      for (const std::string& metric : options.metrics) {
        std::map<int, std::vector<double>> by_session;
        for (const Repetition& r : b.repetitions) {
          auto it = r.metrics.find(metric);
          if (it != r.metrics.end()) by_session[r.session].push_back(it->second);
        }
        for (const auto& [session, values] : by_session) {
          stats::DriftResult d = stats::DetectDrift(values, kDriftAlpha);
          if (!d.drifting) continue;
          double m = stats::Mean(values);
          drifting[session].push_back(
              fmt::format("{} {:+.1f}% (residual SD {:.1f}%, slope p={:.2g})", metric,
                          100 * d.fitted_change / m, 100 * d.residual_sd / m, d.p));
        }
      }
      std::string params_text = ParamsText(b.params);
      std::string what = fmt::format("{}{}{}", b.name, params_text.empty() ? "" : " " + params_text,
                                     b.variant.empty() ? "" : " [" + b.variant + "]");
      for (const auto& [session, parts] : drifting) {
        std::string where = drifting.size() > 1 || session != 0
                                ? fmt::format(" in session {}", session)
                                : std::string();
        if (inputs.size() == 1) {
          shared_drift.push_back(what + where);
          continue;
        }
        table.warnings.push_back(fmt::format(
            "{}: {} drifts over its {} repetitions{}: fitted change over the run {} — larger than "
            "the spread, so runs measured at different times are not comparable; measure the "
            "configurations in one run (variants, interleaved) or alternate runs A B A B and "
            "compare adjacent ones",
            in.source, what, b.repetitions.size(), where, JoinStrings(parts, ", ")));
      }
    }
  }
  if (!shared_drift.empty()) {
    table.notes.push_back(fmt::format(
        "the machine drifted during the run ({}): the columns were measured round-robin in one "
        "run, so the drift is shared and does not bias the changes, but it widens the CIs",
        JoinStrings(shared_drift, "; ")));
  }
  return table;
}

}  // namespace kstacklab
