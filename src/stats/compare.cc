// BuildCompareTable (include/kstacklab/stats/compare.h): columns from files and variants, rows from
// benchmarks x metrics, the per-cell statistics of stats.h, and the findings the notes rest on
// (worded by report/compare_report.cc). Definitions: docs/reading-tables.md.
#include "kstacklab/stats/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "columns.h"
#include "kstacklab/common/text.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/stats/stats.h"
#include "kstacklab/stats/timer_step.h"
#include "samples.h"

namespace kstacklab::stats {
namespace {

constexpr int kMinSamples = 3;
// A repetition's p-quantile with fewer calls than this above it is an extreme-value estimate (a
// p99.9 of 2000 calls is its 3rd-largest call): noted under the table.
constexpr double kMinTailCalls = 10;

// The percentile a metric names ("p99.9" -> 99.9), NaN for metrics that are not percentiles.
double PercentileOf(const std::string& metric) {
  if (metric.size() < 2 || metric[0] != 'p') return kCompareNaN;
  return std::strtod(metric.c_str() + 1, nullptr);
}

// How many of a repetition's `calls` lie above its `pct`-th percentile (2 for p99.9 of 2000).
uint64_t CallsAbove(double pct, uint64_t calls) {
  return calls - histogram::PercentileRank(pct, calls);
}
// Drift is tested on every (file, benchmark, variant, metric, session) series; a fixed strict
// level keeps false alarms rare (0.1 % per series) whatever --alpha is.
constexpr double kDriftAlpha = 0.001;

Verdict Direction(double change_pct, bool lower_is_better) {
  bool larger = change_pct > 0;
  return larger == lower_is_better ? Verdict::kRegression : Verdict::kImprovement;
}

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

namespace {

Status ValidateOptions(const CompareOptions& options) {
  KSTACKLAB_RETURN_IF_ERROR(CheckAlpha(options.alpha));
  KSTACKLAB_RETURN_IF_ERROR(CheckPower(options.power));
  KSTACKLAB_RETURN_IF_ERROR(CheckMinEffect(options.min_effect_pct));
  if (options.metrics.empty()) return UsageError("no metric to compare; name one, e.g. mean");
  return {};
}

// Baseline: CompareOptions::baseline by column name or label[:variant] form; by default the first
// column of the first label holding a variant flagged `baseline`, else column 0 (files written
// before the flag existed: their first variant).
Expected<size_t> PickBaseline(const ColumnSet& set, const std::vector<CompareInput>& inputs,
                              const std::string& want) {
  const std::vector<CompareColumn>& columns = set.columns;
  if (want.empty()) {
    for (size_t c = 0; c < columns.size() && set.group[c] == 0; ++c) {
      for (size_t i : set.runs[c])
        for (const BenchmarkResult& b : inputs[i].run.benchmarks)
          if (b.baseline && ColumnOf(inputs[i], b) == columns[c].variant) return c;
    }
    return size_t{0};
  }
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
    if (hits.empty()) {
      return UsageError(fmt::format("baseline '{}' does not name a column; the columns are: {}",
                                    want, fmt::join(names, ", ")));
    }
    std::vector<std::string> matched;
    for (size_t c : hits) {
      const CompareColumn& col = columns[c];
      matched.push_back(col.variant.empty() ? col.label : col.label + ":" + col.variant);
    }
    return UsageError(fmt::format("baseline '{}' matches {} columns; name one as LABEL:VARIANT: {}",
                                  want, hits.size(), fmt::join(matched, ", ")));
  }
  return hits[0];
}

// MDC per benchmark name and metric, gathered while the rows are built: the largest over its
// rows' decidable variant cells.
using MdcByName = std::map<std::string, std::map<std::string, double>>;

CompareCell DescribeCell(const CellSamples& s) {
  CompareCell cell;
  if (s.samples.empty()) return cell;
  cell.status = CellStatus::kValueOnly;
  cell.value = stats::Mean(s.samples);
  cell.sd = stats::StdDev(s.samples);
  cell.n = static_cast<int>(s.samples.size());
  cell.repetitions = s.repetitions;
  cell.sessions = s.sessions;
  cell.runs = s.runs;
  cell.unit = s.unit;
  cell.components = s.components;
  return cell;
}

// Change, CI, p-value and MDC of cell v (samples vs) against the baseline b (samples bs).
// `same_runs`: both columns hold the same runs (variants measured together).
void CompareWithBaseline(const CompareCell& b, const std::vector<double>& bs, CompareCell& v,
                         const std::vector<double>& vs, bool same_runs,
                         const CompareOptions& options) {
  if (!v.present() || !b.present() || !std::isfinite(b.value)) return;
  if (!(b.value > 0)) {
    v.status = CellStatus::kBaselineNotPositive;
    return;
  }
  v.change_pct = 100 * (v.value / b.value - 1);
  if (b.n < kMinSamples || v.n < kMinSamples) {
    v.status = CellStatus::kTooFew;
    return;
  }
  // Across runs, only per-run means carry the run-to-run variance (process start, boot, the
  // machine's drift over minutes); the sessions of one run do not (DESIGN.md "Statistics").
  const bool no_run_variance =
      !same_runs && (b.unit != SampleUnit::kRun || v.unit != SampleUnit::kRun);
  v.status = no_run_variance ? CellStatus::kNoRunVariance : CellStatus::kCompared;
  stats::RatioInterval ci = stats::FiellerRatioCi(vs, bs, options.alpha);
  if (ci.bounded) {
    v.ci_low_pct = 100 * (ci.low - 1);
    v.ci_high_pct = 100 * (ci.high - 1);
  }
  v.p_value = options.test == SignificanceTest::kWelch ? stats::WelchTTest(vs, bs).p
                                                       : stats::MannWhitneyU(vs, bs).p;
  v.p_adjusted = no_run_variance ? kCompareNaN : v.p_value;
  // At scale 1 (stats.h), so that the variances neither overflow nor underflow.
  const int e = stats::MagnitudeExponent(vs, bs);
  const std::vector<double> vs1 = stats::ScaledByPowerOfTwo(vs, e);
  const std::vector<double> bs1 = stats::ScaledByPowerOfTwo(bs, e);
  double mdd =
      stats::MinimalDetectableDifference(stats::Variance(vs1), vs1.size(), stats::Variance(bs1),
                                         bs1.size(), options.alpha, options.power);
  v.mdc_pct = 100 * mdd / std::ldexp(b.value, -e);
}

// The columns lacking the key's benchmark, and whether the baseline is one of them.
void NoteAbsentColumns(const RowKey& row_key, const KeyEntries& e, const CompareTable& table,
                       CompareFindings& f) {
  std::vector<std::string> absent;
  for (size_t k = 0; k < e.by_column.size(); ++k) {
    bool any = false;
    for (const auto& run : e.by_column[k]) any = any || !run.empty();
    if (!any) absent.push_back(table.columns[k].name);
  }
  if (absent.empty()) return;
  f.missing.push_back({row_key, absent});
  if (absent.front() == table.columns[0].name && absent.size() < e.by_column.size()) {
    f.not_in_baseline.push_back(row_key);
  }
}

// A tail metric whose repetitions have too few calls above its percentile: the fewest calls of a
// repetition that stores it, by metric.
void NoteThinTail(const KeyEntries& e, const std::string& metric,
                  std::map<std::string, uint64_t>& thin_tails) {
  const double pct = PercentileOf(metric);
  if (std::isnan(pct)) return;
  uint64_t fewest = UINT64_MAX;
  for (const auto& column : e.by_column)
    for (const auto& run : column)
      for (const BenchmarkResult* b : run)
        for (const Repetition& r : b->repetitions)
          if (r.metrics.count(metric) != 0) fewest = std::min(fewest, r.iterations);
  if (fewest == UINT64_MAX || CallsAbove(pct, fewest) >= kMinTailCalls) return;
  auto [it, added] = thin_tails.emplace(metric, fewest);
  if (!added) it->second = std::min(it->second, fewest);
}

// Each variant cell of a row against the baseline cell: its status, change and statistics.
void CompareCells(const std::string& metric, const std::string& unit,
                  const std::vector<CellSamples>& samples, const ColumnSet& set,
                  const std::vector<size_t>& order, const CompareOptions& options,
                  std::vector<CompareCell>& cells, CompareFindings& f) {
  const double ns = NsPerUnit(unit);
  const CompareCell& base = cells[0];
  for (size_t k = 1; k < order.size(); ++k) {
    CompareCell& v = cells[k];
    const bool unresolved =
        v.present() && base.present() &&
        stats::BaselineBelowTimerStep(metric, base.value * ns, set.step_ns[order[0]],
                                      set.step_ns[order[k]]);
    if (unresolved) {
      v.status = CellStatus::kBaselineBelowTimerStep;
    } else {
      CompareWithBaseline(base, samples[0].samples, v, samples[k].samples,
                          set.runs[order[0]] == set.runs[order[k]], options);
    }
    f.any_baseline_below_timer_step = f.any_baseline_below_timer_step || unresolved;
    f.any_too_few = f.any_too_few || v.status == CellStatus::kTooFew;
    f.any_no_run_variance = f.any_no_run_variance || v.status == CellStatus::kNoRunVariance;
    f.any_baseline_not_positive =
        f.any_baseline_not_positive || v.status == CellStatus::kBaselineNotPositive;
    if (options.test == SignificanceTest::kMannWhitney && !std::isnan(v.p_value) &&
        v.status != CellStatus::kNoRunVariance) {
      const double min_p =
          stats::MannWhitneyMinP(static_cast<size_t>(base.n), static_cast<size_t>(v.n));
      if (min_p >= options.alpha) f.mwu_min_p = std::max(f.mwu_min_p, min_p);
    }
    v.below_timer_step = v.present() && base.present() && !unresolved &&
                         stats::ChangeBelowTimerStep(metric, base.value * ns, v.value * ns,
                                                     set.step_ns[order[0]], set.step_ns[order[k]]);
    f.any_below_timer_step = f.any_below_timer_step || v.below_timer_step;
  }
}

// The rows of one key, one per metric with data; appended to table.rows.
void AddKeyRows(const RowKey& key, const KeyEntries& e, const ColumnSet& set,
                const std::vector<size_t>& order, bool& first, CompareTable& table,
                std::map<std::string, uint64_t>& thin_tails, MdcByName& mdc) {
  const CompareOptions& options = table.options;
  CompareFindings& f = table.findings;
  const std::string name = CompareRowName(key);
  NoteAbsentColumns(key, e, table, f);
  for (const std::string& metric : options.metrics) {
    std::vector<CellSamples> samples;
    bool any = false;
    for (size_t k = 0; k < order.size(); ++k) {
      samples.push_back(SamplesOf(e.by_column[k], metric));
      any = any || !samples.back().samples.empty();
    }
    NoteThinTail(e, metric, thin_tails);
    if (!any) {
      f.no_metric.push_back({key, metric});
      continue;
    }
    CompareRow row;
    row.key = key;
    row.metric = metric;
    row.unit = e.unit;
    row.lower_is_better = e.lower_is_better;
    row.first_in_group = first;
    first = false;
    std::vector<CompareCell> cells;
    for (size_t k = 0; k < order.size(); ++k) {
      cells.push_back(DescribeCell(samples[k]));
      const std::string& col = table.columns[k].name;
      if (samples[k].unit == SampleUnit::kSession) f.session_columns[col].push_back(key);
      if (samples[k].unit == SampleUnit::kRun)
        f.run_columns[col] = std::max(f.run_columns[col], samples[k].runs);
    }
    CompareCells(metric, row.unit, samples, set, order, options, cells, f);
    for (size_t k = 1; k < cells.size(); ++k) {
      if (std::isfinite(cells[k].mdc_pct) && cells[k].status != CellStatus::kNoRunVariance) {
        double& slot = mdc[name][metric];
        slot = std::max(slot, cells[k].mdc_pct);
      }
    }
    row.baseline = cells[0];
    row.variants.assign(cells.begin() + 1, cells.end());
    table.rows.push_back(std::move(row));
  }
}

// Holm across every decidable cell of the table (cells without run-to-run variance are not
// decided, so they do not count).
void ApplyHolm(CompareTable& table) {
  std::vector<double> p;
  for (const CompareRow& r : table.rows)
    for (const CompareCell& c : r.variants)
      p.push_back(c.status == CellStatus::kNoRunVariance ? kCompareNaN : c.p_value);
  std::vector<double> adj = stats::HolmAdjust(p);
  size_t i = 0;
  for (CompareRow& r : table.rows) {
    for (CompareCell& c : r.variants) {
      if (c.status != CellStatus::kNoRunVariance) c.p_adjusted = adj[i];
      ++i;
    }
  }
}

void ApplyVerdicts(CompareTable& table) {
  const CompareOptions& options = table.options;
  for (CompareRow& r : table.rows) {
    for (CompareCell& v : r.variants) {
      if (v.status != CellStatus::kCompared || std::isnan(v.p_adjusted) || std::isnan(v.change_pct))
        continue;
      bool significant = false;
      if (options.method == VerdictMethod::kFastpath) {
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
}

// The findings gathered by name or metric, in the order the notes give them: MDC by benchmark
// name in table order, thin tails by metric.
void FinishFindings(const std::vector<CompareInput>& inputs, const ColumnSet& set, const Keys& keys,
                    const MdcByName& mdc, const std::map<std::string, uint64_t>& thin_tails,
                    CompareTable& table) {
  CompareFindings& f = table.findings;
  if (inputs.size() == 1 && set.columns.size() > 1) {
    f.variants_of_one_run = std::make_pair(inputs[0].run.label, inputs[0].source);
  }
  for (const std::string& name : keys.names) {
    auto it = mdc.find(name);
    if (it == mdc.end()) continue;
    RowKey benchmark = keys.by_name.at(name).front();
    benchmark.params = Json();
    CompareFindings::Mdc m{std::move(benchmark), {}};
    for (const std::string& metric : table.options.metrics) {
      auto jt = it->second.find(metric);
      if (jt != it->second.end()) m.metric_pct.emplace_back(metric, jt->second);
    }
    f.mdc.push_back(std::move(m));
  }
  for (const auto& [metric, calls] : thin_tails) {
    const double pct = PercentileOf(metric);
    f.thin_tails.push_back(
        {metric, calls, CallsAbove(pct, calls), std::llround(kMinTailCalls * 100 / (100 - pct))});
  }
}

// Runs of two labels measured in blocks — every run of one before every run of the other — leave
// whatever changed on the machine between the blocks in the change. One finding per label whose
// runs (>= 2, each side) and the baseline's do not overlap in time; nothing when a run's time is
// missing or not in the written form, or two runs share a second (the order is then unknown).
void FindBlocks(const std::vector<CompareInput>& inputs, const ColumnSet& set,
                const std::vector<size_t>& order, CompareTable& table) {
  struct Span {
    std::string first, last;
    size_t runs = 0;
  };
  const auto span_of = [&](size_t col) -> std::optional<Span> {
    Span s;
    for (size_t i : set.runs[col]) {
      const std::string& t = inputs[i].run.created;
      if (!IsUtcTimestamp(t)) return std::nullopt;
      if (s.runs == 0 || t < s.first) s.first = t;
      if (s.runs == 0 || t > s.last) s.last = t;
      ++s.runs;
    }
    if (s.runs < 2) return std::nullopt;
    return s;
  };
  const auto name_of = [&](size_t col) {
    const CompareColumn& c = set.columns[col];
    return c.label.empty() ? c.name : c.label;
  };
  const size_t base = order[0];
  const std::optional<Span> b = span_of(base);
  if (!b) return;
  std::set<size_t> noted_groups;
  for (size_t k = 1; k < order.size(); ++k) {
    const size_t col = order[k];
    if (set.group[col] == set.group[base] || noted_groups.count(set.group[col]) != 0) continue;
    const std::optional<Span> v = span_of(col);
    if (!v) continue;
    const bool after = b->last < v->first;
    if (!after && !(v->last < b->first)) continue;
    noted_groups.insert(set.group[col]);
    const Span& early = after ? *b : *v;
    const Span& late = after ? *v : *b;
    table.findings.blocks.push_back({name_of(col), name_of(base), after, early.first, early.last,
                                     late.first, late.last, early.runs, late.runs});
  }
}

// The metrics of one benchmark entry that drift over one session's repetitions.
std::vector<DriftMetric> DriftingMetrics(const std::vector<std::string>& metrics,
                                         const std::vector<const Repetition*>& reps) {
  std::vector<DriftMetric> out;
  for (const std::string& metric : metrics) {
    std::vector<double> values;
    for (const Repetition* r : reps) {
      auto it = r->metrics.find(metric);
      if (it != r->metrics.end()) values.push_back(it->second);
    }
    stats::DriftResult d = stats::DetectDrift(values, kDriftAlpha);
    if (!d.drifting) continue;
    const double m = stats::Mean(values);
    out.push_back({metric, 100 * (d.ratio - 1), d.fitted_change, 100 * d.residual_sd / m, d.p});
  }
  return out;
}

// Drift of each file's repetitions (per session), for the requested metrics: one finding per
// benchmark entry and session with its drifting metrics. Columns of one file were measured
// interleaved by repetition (`run` interleaves its rows), so there the drift is shared and only
// widens the CIs; across files it biases the comparison.
void FindDrift(const std::vector<CompareInput>& inputs, CompareTable& table) {
  CompareFindings& f = table.findings;
  f.drift_within_one_run = inputs.size() == 1;
  for (const CompareInput& in : inputs) {
    for (const BenchmarkResult& b : in.run.benchmarks) {
      std::map<int, std::vector<const Repetition*>> by_session;
      for (const Repetition& r : b.repetitions) by_session[r.session].push_back(&r);
      std::map<int, std::vector<DriftMetric>> drifting;  // session -> its drifting metrics
      for (const auto& [session, reps] : by_session) {
        std::vector<DriftMetric> metrics = DriftingMetrics(table.options.metrics, reps);
        if (!metrics.empty()) drifting.emplace(session, std::move(metrics));
      }
      for (auto& [session, metrics] : drifting) {
        f.drift.push_back({in.source, RowOf(in, b), ColumnOf(in, b), b.unit, session,
                           drifting.size() > 1 || session != 0, b.repetitions.size(),
                           std::move(metrics)});
      }
    }
  }
}

}  // namespace

const char* SampleUnitName(SampleUnit u) {
  switch (u) {
    case SampleUnit::kSession:
      return "sessions";
    case SampleUnit::kRun:
      return "runs";
    case SampleUnit::kRepetition:
      break;
  }
  return "repetitions";
}

const std::vector<std::string>& DefaultCompareMetrics() {
  static const std::vector<std::string> k = *ParseMetricList(kDefaultCompareMetrics);
  return k;
}

Expected<std::vector<std::string>> ParseMetricList(const std::string& text) {
  std::vector<std::string> out = Split(text, ',');
  if (out.empty()) {
    return UsageError(
        fmt::format("the metric list is empty; give e.g. {}", kDefaultCompareMetrics));
  }
  return out;
}

Status CheckAlpha(double alpha) {
  if (alpha > 0 && alpha < 0.5) return {};
  return UsageError(
      fmt::format("alpha {:g} is out of range; give a value in (0, 0.5), e.g. 0.05", alpha));
}

Status CheckPower(double power) {
  // Below 0.5 the MDC's t(power) term turns negative, and at alpha/2 the MDC is 0 %: a "plan"
  // that is more likely to miss the effect than to find it is not one.
  if (power >= 0.5 && power < 1) return {};
  return UsageError(fmt::format(
      "power {:g} is out of range; give a value in [0.5, 1), e.g. 0.8 (the chance that the "
      "planned runs detect the target effect)",
      power));
}

Status CheckMinEffect(double pct) {
  if (pct >= 0 && std::isfinite(pct)) return {};
  return UsageError(
      fmt::format("minimum effect {:g} is not a finite percentage >= 0; give e.g. 1 for 1 %", pct));
}

Status CheckTargetEffect(double pct) {
  if (pct > 0 && std::isfinite(pct)) return {};
  return UsageError(fmt::format(
      "target effect {:g} is not a finite percentage > 0; give e.g. 2 for a 2 % change", pct));
}

Status CheckBaseline(const std::vector<CompareInput>& given, const std::string& baseline) {
  // "A:raw" could be a label (files written before `run` refused ':' in labels) and label A's
  // variant raw at once: refused rather than silently taken as the label.
  if (baseline.find(':') != std::string::npos) {
    bool is_label = false, is_variant = false;
    for (const CompareInput& in : given) {
      const std::string label = EffectiveLabel(in);
      if (label == baseline) is_label = true;
      // baseline == label + ":" + v, without building the string per row
      const bool label_prefix = baseline.size() > label.size() &&
                                baseline.compare(0, label.size(), label) == 0 &&
                                baseline[label.size()] == ':';
      if (!label_prefix) continue;
      const std::string_view want = std::string_view(baseline).substr(label.size() + 1);
      for (const BenchmarkResult& b : in.run.benchmarks) {
        const std::string v = ColumnOf(in, b);
        if (!v.empty() && v == want) is_variant = true;
      }
    }
    if (is_label && is_variant) {
      return UsageError(fmt::format(
          "baseline '{}' is ambiguous: it is a label, and also a label's variant (LABEL:VARIANT); "
          "relabel the file whose label holds ':' (a run refuses ':' in its label)",
          baseline));
    }
  }
  // With the variants as rows the columns are the labels, and the baseline is empty or a label.
  if (VariantsAreRows(given, baseline)) return {};
  // Only an --ab file changes its columns: the others are checked without a copy.
  std::vector<CompareInput> relaid;
  if (std::any_of(given.begin(), given.end(),
                  [](const CompareInput& in) { return !in.run.run.ab.empty(); })) {
    relaid = AbValuesAsColumns(given);
  }
  const std::vector<CompareInput>& inputs = relaid.empty() ? given : relaid;
  auto base = PickBaseline(GroupColumns(inputs), inputs, baseline);
  if (!base.ok()) return base.error();
  return {};
}

bool VariantsAreRows(const std::vector<CompareInput>& inputs, const std::string& baseline) {
  std::set<std::string> labels;
  for (const CompareInput& in : inputs) labels.insert(EffectiveLabel(in));
  return labels.size() >= 2 && (baseline.empty() || labels.count(baseline) != 0);
}

std::vector<CompareInput> VariantsAsRows(std::vector<CompareInput> inputs) {
  for (CompareInput& in : inputs) {
    // An --ab value that was a column becomes part of the row as the variant does.
    for (BenchmarkResult& b : in.run.benchmarks) {
      if (!ColumnOf(in, b).empty()) b.baseline = false;
    }
    in.layout = RowLayout::kRows;
  }
  return inputs;
}

std::vector<CompareInput> AbValuesAsColumns(std::vector<CompareInput> inputs) {
  for (CompareInput& in : inputs) {
    if (in.run.run.ab.empty()) continue;
    std::set<std::string> baseline_knobs;
    for (const BenchmarkResult& b : in.run.benchmarks) {
      if (b.baseline) baseline_knobs.insert(b.knob);
    }
    for (BenchmarkResult& b : in.run.benchmarks) {
      if (b.knob.empty() || b.variant.empty()) continue;
      b.baseline = baseline_knobs.count(b.knob) != 0;
    }
    in.layout = RowLayout::kKnobColumns;
  }
  return inputs;
}

std::vector<std::vector<CompareInput>> CompareParts(const std::vector<CompareInput>& given,
                                                    const std::string& baseline) {
  const std::vector<CompareInput> inputs = AbValuesAsColumns(given);
  if (VariantsAreRows(inputs, baseline)) return {VariantsAsRows(inputs)};
  if (baseline.empty()) return SplitByVariantSet(inputs);
  return {inputs};
}

namespace {

// A benchmark's variants over all inputs: in order of first appearance, and the one its workload
// flags as the baseline ("" when none is flagged).
struct VariantSet {
  std::vector<std::string> variants;
  std::string flagged;
  bool Has(const std::string& v) const {
    return std::find(variants.begin(), variants.end(), v) != variants.end();
  }
  bool Within(const VariantSet& o) const {
    return std::all_of(variants.begin(), variants.end(),
                       [&](const std::string& v) { return o.Has(v); });
  }
  std::string Baseline() const { return flagged.empty() ? variants.front() : flagged; }
};

}  // namespace

std::vector<std::vector<CompareInput>> SplitByVariantSet(const std::vector<CompareInput>& inputs) {
  std::vector<std::string> order;  // benchmark keys in order of first appearance
  std::map<std::string, VariantSet> sets;
  auto key = [](const CompareInput& in, const BenchmarkResult& b) {
    const RowKey row = RowOf(in, b);
    return CompareRowName(row) + "(" + ParamsText(row.params) + ")";
  };
  for (const CompareInput& in : inputs) {
    for (const BenchmarkResult& b : in.run.benchmarks) {
      auto [it, fresh] = sets.try_emplace(key(in, b));
      if (fresh) order.push_back(it->first);
      const std::string v = ColumnOf(in, b);
      if (!it->second.Has(v)) it->second.variants.push_back(v);
      if (b.baseline && it->second.flagged.empty()) it->second.flagged = v;
    }
  }
  // A benchmark joins a part when one variant set holds the other, it has the part's baseline
  // and flags no other: e.g. the syscall suite's raw-only rows join its raw/libc rows, while the
  // erase rows (baseline generic, or off) get tables of their own.
  std::vector<VariantSet> parts;
  std::map<std::string, size_t> part_of;
  for (const std::string& k : order) {
    const VariantSet& s = sets[k];
    size_t p = 0;
    for (; p < parts.size(); ++p) {
      const VariantSet& part = parts[p];
      const std::string base = part.Baseline();
      if ((s.Within(part) || part.Within(s)) && s.Has(base) &&
          (s.flagged.empty() || s.flagged == base)) {
        break;
      }
    }
    if (p == parts.size()) {
      parts.push_back(s);
    } else {
      for (const std::string& v : s.variants) {
        if (!parts[p].Has(v)) parts[p].variants.push_back(v);
      }
      if (parts[p].flagged.empty()) parts[p].flagged = s.flagged;
    }
    part_of[k] = p;
  }
  if (parts.size() <= 1) return {inputs};
  // Each input copied once: its benchmarks moved into their parts, the rest of the run (small
  // without them) copied into each part.
  std::vector<std::vector<CompareInput>> out(parts.size());
  for (const CompareInput& in : inputs) {
    RunResult shell = in.run;
    std::vector<BenchmarkResult> benches = std::move(shell.benchmarks);
    shell.benchmarks.clear();
    std::vector<CompareInput> mine(parts.size(), CompareInput{in.source, shell, in.layout});
    for (BenchmarkResult& b : benches) {
      const size_t p = part_of[key(in, b)];
      mine[p].run.benchmarks.push_back(std::move(b));
    }
    for (size_t p = 0; p < parts.size(); ++p) {
      if (!mine[p].run.benchmarks.empty()) out[p].push_back(std::move(mine[p]));
    }
  }
  return out;
}

namespace {

// A row measured per call in one input and in loop mode in another compares two methods: the
// per-call values are corrected for the timer's overhead call by call, the loop values are a
// batch's time over its calls, and the two differ by a steady few % that is not the change.
// The rows are named in the findings (a footnote, as for the timer step; the cells are shown).
void FindMixedTiming(const std::vector<CompareInput>& inputs, CompareTable& table) {
  // Row id (BenchmarkId of its name and params) -> the row and the timing modes seen.
  std::map<std::string, std::pair<RowKey, std::set<std::string>>> modes;
  for (const CompareInput& in : inputs) {
    for (const BenchmarkResult& b : in.run.benchmarks) {
      const RowKey row = RowOf(in, b);
      auto& [key, seen] = modes[BenchmarkId(CompareRowName(row), row.params, "")];
      key = row;
      seen.insert(b.timing.empty() ? "percall" : b.timing);
    }
  }
  for (const auto& [id, row] : modes) {
    if (row.second.size() > 1) table.findings.mixed_timing.push_back(row.first);
  }
}

}  // namespace

Expected<CompareTable> BuildCompareTable(const std::vector<CompareInput>& inputs,
                                         const CompareOptions& options) {
  if (inputs.empty()) return UsageError("compare needs at least one result file or store id");
  if (Status st = ValidateOptions(options); !st.ok()) return st.error();
  if (Status st = CheckMetricsStored(inputs, options.metrics); !st.ok()) return st.error();
  CompareTable table;
  table.options = options;
  ColumnSet set = GroupColumns(inputs);
  auto base = PickBaseline(set, inputs, options.baseline);
  if (!base.ok()) return base.error();
  std::vector<size_t> order{*base};
  for (size_t c = 0; c < set.columns.size(); ++c)
    if (c != *base) order.push_back(c);
  for (size_t c : order) table.columns.push_back(set.columns[c]);

  Keys keys = RowKeys(set, order, inputs);
  std::map<std::string, uint64_t> thin_tails;
  MdcByName mdc;
  for (const std::string& name : keys.names) {
    bool first = true;
    for (const RowKey& key : keys.by_name[name]) {
      auto entries = EntriesOf(key, set, order, inputs);
      if (!entries.ok()) return entries.error();
      AddKeyRows(key, *entries, set, order, first, table, thin_tails, mdc);
    }
  }
  if (options.correction == Correction::kHolm) ApplyHolm(table);
  ApplyVerdicts(table);
  FinishFindings(inputs, set, keys, mdc, thin_tails, table);
  FindMixedTiming(inputs, table);
  FindBlocks(inputs, set, order, table);
  FindDrift(inputs, table);
  return table;
}

}  // namespace kstacklab::stats
