// The words of a comparison: its method, the notes under the table and the warnings on stderr,
// from the findings stats/ returns (include/kstacklab/report/compare_report.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kstacklab/report/compare_report.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/stats/compare.h"
#include "kstacklab/stats/timer_step.h"

namespace kstacklab::report {
namespace {

// An MDC as the notes give it: two decimals.
std::string MdcText(double pct) { return fmt::format("{:.2f}%", pct); }

// What each cell status and caveat means, once under the table.
void CellNotes(const stats::CompareTable& t, std::vector<std::string>& out) {
  const stats::CompareFindings& f = t.findings;
  if (f.any_too_few) {
    out.emplace_back(
        "* fewer than 3 samples on a side: the change is shown without CI or verdict; add samples "
        "of that side's unit (see Samples): repetitions of one run, sessions "
        "(--sessions), or runs with the same label when the column groups runs");
  }
  if (f.any_baseline_not_positive) {
    out.emplace_back(
        "# the baseline's value is <= 0 (an overhead-corrected per-call value at or below the "
        "timer's overhead), so a % change means nothing: the cell shows the column's own value; "
        "compare the absolute values, or the mean in --timing loop, which needs no correction");
  }
  if (f.any_baseline_below_timer_step) {
    out.emplace_back(
        "# the baseline's value is above 0 but below one timer step (timer.resolution_ns), so a "
        "% change means nothing: the cell shows the column's own value; compare the absolute "
        "values, or the mean, which averages the step out (or --timing loop)");
  }
  if (f.mwu_min_p > 0) {
    out.push_back(fmt::format(
        "Mann-Whitney with this few samples cannot reach p < {:g}: its smallest attainable p is "
        "{:.3g} (complete separation), so no cell can be marked; use more samples (runs or "
        "repetitions) or the default Welch test",
        t.options.alpha, f.mwu_min_p));
  }
  if (f.any_below_timer_step) out.emplace_back(stats::kTimerStepFootnote);
  if (f.any_no_run_variance) {
    out.emplace_back(
        "~ measured in a different run than the baseline, and a side's samples are the "
        "repetitions or sessions of one run: they leave out the run-to-run variance (process, "
        "boot, the machine's drift between runs), so the change and its within-run CI are shown "
        "without (R)/(I); measure >= 3 runs per configuration — reboot between them for kernel "
        "configurations — each with the same label (inputs with one label form one column), or "
        "measure the configurations as variants of one run (--ab); docs/reading-tables.md says "
        "how");
  }
}

// Where the samples come from, and what the columns and rows lack.
void SampleNotes(const stats::CompareTable& t, std::vector<std::string>& out) {
  const stats::CompareFindings& f = t.findings;
  for (const auto& [col, rows] : f.session_columns) {
    std::set<std::string> benches;  // each benchmark once, in text order
    for (const RowKey& r : rows) benches.insert(CompareRowName(r));
    out.push_back(fmt::format(
        "column '{}' holds several sessions: samples are session means, n = sessions, so the "
        "between-session variance is included ({})",
        col, fmt::join(benches, ", ")));
  }
  for (const stats::CompareColumn& c : t.columns) {
    auto it = f.run_columns.find(c.name);
    if (it == f.run_columns.end()) continue;
    out.push_back(
        fmt::format("column '{}' groups {} runs ({}): samples are per-run means, n = runs, so the "
                    "run-to-run variance is included",
                    it->first, it->second, fmt::join(c.sources, ", ")));
  }
  for (const stats::CompareFindings::Missing& m : f.missing) {
    out.push_back(fmt::format("{}: absent from {} (blank cells)", CompareRowLabel(m.row),
                              fmt::join(m.columns, ", ")));
  }
  if (!f.not_in_baseline.empty()) {
    std::vector<std::string> rows;
    for (const RowKey& r : f.not_in_baseline) rows.push_back(CompareRowLabel(r));
    out.push_back(fmt::format(
        "not compared: {} measured, but not in the baseline column '{}', so their cells show "
        "values without a change; compare them against a column they have (LABEL:VARIANT) in a "
        "table of their own",
        fmt::join(rows, ", "), t.columns[0].name));
  }
  std::set<std::string> no_metric;  // in text order, each once
  for (const stats::CompareFindings::NoMetric& n : f.no_metric) {
    no_metric.insert(fmt::format("{}: no '{}' values (loop-mode results carry mean only)",
                                 CompareRowLabel(n.row), n.metric));
  }
  out.insert(out.end(), no_metric.begin(), no_metric.end());
  for (const stats::CompareFindings::ThinTail& tail : f.thin_tails) {
    out.push_back(fmt::format(
        "{}: a cell is the mean of per-repetition {}s, and a repetition of {} calls has only "
        "{} calls above its {}: the value rests on a few extreme calls; measure tails with "
        "more iterations per repetition (>= {} for {})",
        tail.metric, tail.metric, tail.calls, tail.calls_above, tail.metric, tail.calls_needed,
        tail.metric));
  }
}

// The MDC of each benchmark, explained once.
void MdcNotes(const stats::CompareTable& t, std::vector<std::string>& out) {
  const stats::CompareOptions& o = t.options;
  for (size_t i = 0; i < t.findings.mdc.size(); ++i) {
    const stats::CompareFindings::Mdc& m = t.findings.mdc[i];
    if (i == 0) {
      const bool welch =
          o.test == stats::SignificanceTest::kWelch && o.method == stats::VerdictMethod::kCi;
      out.push_back(fmt::format(
          "MDC = minimal detectable change at {:g}% power and alpha {:g} with the observed SDs and "
          "n (largest over the columns){}; smaller true changes are likely to go unmarked",
          100 * o.power, o.alpha,
          welch ? "" : ", computed for Welch's t-test (the chosen rule is stricter)"));
    }
    std::vector<std::string> parts;
    for (const auto& [metric, pct] : m.metric_pct) parts.push_back(metric + " " + MdcText(pct));
    out.push_back(fmt::format("{}: MDC {}", CompareRowName(m.benchmark), fmt::join(parts, ", ")));
  }
}

// How the inputs were measured: per call against loop mode, runs in blocks, a shared drift.
void MeasurementNotes(const stats::CompareTable& t, std::vector<std::string>& out) {
  const stats::CompareFindings& f = t.findings;
  if (!f.mixed_timing.empty()) {
    std::vector<std::string> rows;
    for (const RowKey& r : f.mixed_timing) {
      rows.push_back(BenchmarkId(CompareRowName(r), r.params, ""));
    }
    out.push_back(fmt::format(
        "timing: {} compare per-call (--timing percall) with loop-mode (--timing loop) "
        "measurements: per-call values are corrected for the timer's overhead call by call, loop "
        "values are a batch's time per call, and the two methods differ by a steady few % that is "
        "not a change of the kernel; compare inputs measured the same way",
        fmt::join(rows, ", ")));
  }
  for (const stats::CompareFindings::Block& b : f.blocks) {
    out.push_back(fmt::format(
        "the runs of '{}' were all measured {} those of '{}' ({} runs {} to {}, then {} runs {} to "
        "{}): whatever changed on the machine between the two blocks is in the change; measure "
        "the configurations in cycles, one run of each per cycle, each cycle in a random order "
        "(docs/reading-tables.md, \"Order of runs\")",
        b.column, b.after ? "after" : "before", b.baseline, b.early_runs, b.early_first,
        b.early_last, b.late_runs, b.late_first, b.late_last));
  }
  if (f.drift_within_one_run && !f.drift.empty()) {
    std::vector<std::string> rows;
    for (const stats::DriftFinding& d : f.drift) {
      rows.push_back(DriftRowName(d) +
                     (d.several_sessions ? fmt::format(" in session {}", d.session) : ""));
    }
    out.push_back(fmt::format(
        "the machine drifted during the run ({}): the columns were measured interleaved in one "
        "run, so the drift is shared and does not bias the changes, but it widens the CIs",
        fmt::join(rows, "; ")));
  }
}

// "-55.3 %" or, where a value is <= 0 and no % is defined, the change in the unit.
std::string DriftChangeText(const stats::DriftMetric& m, const std::string& unit) {
  if (std::isfinite(m.change_pct)) return fmt::format("{:+.1f} %", m.change_pct);
  return fmt::format("{:+.4g} {}", m.change, unit);
}

// One line per drifting row and session: its metrics, each with the fit behind it.
std::string DriftDetail(const stats::DriftFinding& d) {
  std::vector<std::string> parts;
  for (const stats::DriftMetric& m : d.metrics) {
    parts.push_back(fmt::format("{} {} (residual SD {:.1f} %, slope p={:.2g})", m.metric,
                                DriftChangeText(m, d.unit), m.residual_sd_pct, m.p));
  }
  return fmt::format(
      "{}: {} drifts over its {} repetitions{}: {}", d.source, DriftRowName(d), d.repetitions,
      d.several_sessions ? fmt::format(" in session {}", d.session) : "", fmt::join(parts, ", "));
}

}  // namespace

std::string DriftRowName(const stats::DriftFinding& d) {
  return BenchmarkLabel(CompareRowName(d.row), ParamsText(d.row.params), d.column);
}

std::string MethodDescription(const stats::CompareOptions& o) {
  double level = 100 * (1 - o.alpha);
  std::string test =
      o.test == stats::SignificanceTest::kWelch ? "Welch's t-test" : "Mann-Whitney U (two-sided)";
  std::string p_rule = o.correction == stats::Correction::kHolm
                           ? fmt::format("the Holm-adjusted p ({}) < {:g}", test, o.alpha)
                           : fmt::format("p ({}) < {:g}", test, o.alpha);
  std::string rule;
  if (o.method == stats::VerdictMethod::kFastpath) {
    rule = fmt::format(
        "fastpath: (R)/(I) when the {:g}% Student-t intervals of the two means do not "
        "overlap{}",
        level, o.correction == stats::Correction::kHolm ? " and " + p_rule : "");
  } else {
    rule = fmt::format(
        "ci: (R)/(I) when the {:g}% CI of the % change (Fieller's theorem, "
        "Welch-Satterthwaite df) excludes 0 and {}",
        level, p_rule);
  }
  if (o.min_effect_pct > 0) rule += fmt::format(" and |change| >= {:g}%", o.min_effect_pct);
  return rule + fmt::format("; alpha {:g}", o.alpha);
}

std::vector<std::string> CompareNoteLines(const stats::CompareTable& t) {
  std::vector<std::string> out;
  if (const auto& one = t.findings.variants_of_one_run) {
    out.push_back(fmt::format(
        "columns are the variants of one run: '{}' ({}), measured interleaved by repetition",
        one->first, one->second));
  }
  CellNotes(t, out);
  SampleNotes(t, out);
  MdcNotes(t, out);
  MeasurementNotes(t, out);
  return out;
}

std::vector<std::string> CompareWarningLines(const std::vector<stats::CompareTable>& tables,
                                             const CompareWarningOptions& options) {
  // Drift across inputs, by input in the order met: the rows, and the range of their changes.
  struct PerInput {
    std::set<std::string> rows;
    double low = INFINITY, high = -INFINITY;
  };
  std::vector<std::string> order;
  std::map<std::string, PerInput> by_input;
  std::vector<std::string> details;
  for (const stats::CompareTable& t : tables) {
    if (t.findings.drift_within_one_run) continue;
    for (const stats::DriftFinding& d : t.findings.drift) {
      auto [it, fresh] = by_input.try_emplace(d.source);
      if (fresh) order.push_back(d.source);
      it->second.rows.insert(DriftRowName(d));
      for (const stats::DriftMetric& m : d.metrics) {
        if (!std::isfinite(m.change_pct)) continue;
        it->second.low = std::min(it->second.low, m.change_pct);
        it->second.high = std::max(it->second.high, m.change_pct);
      }
      if (options.verbose) details.push_back(DriftDetail(d));
    }
  }
  std::vector<std::string> out;
  for (const std::string& source : order) {
    const PerInput& p = by_input[source];
    const std::string range =
        !std::isfinite(p.low) ? std::string()
        : p.low == p.high     ? fmt::format(" ({:+.1f} % over the run)", p.low)
                              : fmt::format(" ({:+.1f} to {:+.1f} % over the run)", p.low, p.high);
    out.push_back(fmt::format("drift in {} row{} of {}{}", p.rows.size(),
                              p.rows.size() == 1 ? "" : "s", source, range));
  }
  if (out.empty()) return out;
  out.push_back(fmt::format(
      "drift: in those rows a metric's repetitions change steadily over the run (a fitted trend "
      "larger than their spread, slope p < 0.001), so runs measured at different times are not "
      "comparable; measure the configurations in one run (variants, interleaved) or alternate "
      "runs in pairs, each pair in a random order (A B, B A, ...), and compare adjacent ones{}",
      options.verbose ? "; each row and metric:"
                      : fmt::format("; {} names each row and metric, as does the JSON output "
                                    "(\"drift\")",
                                    options.details_option)));
  out.insert(out.end(), details.begin(), details.end());
  return out;
}

}  // namespace kstacklab::report
