#include "columns.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "kstacklab/results/naming.h"
#include "kstacklab/results/results.h"

namespace kstacklab::stats {
namespace {

std::string FileStem(const std::string& source) {
  if (source == "-") return "stdin";
  std::string s = source;
  size_t slash = s.find_last_of('/');
  if (slash != std::string::npos) s = s.substr(slash + 1);
  size_t dot = s.find_last_of('.');
  if (dot != std::string::npos && dot > 0) s = s.substr(0, dot);
  return s.empty() ? source : s;
}

}  // namespace

RowKey RowOf(const CompareInput& in, const BenchmarkResult& b) {
  switch (in.layout) {
    case RowLayout::kRows:
      return b.Key();
    case RowLayout::kKnobColumns:
      if (!b.knob.empty() && !b.variant.empty()) return {b.name, b.params, b.variant, ""};
      break;
    case RowLayout::kVariantColumns:
      break;
  }
  return {b.name, b.params, "", ""};
}

std::string ColumnOf(const CompareInput& in, const BenchmarkResult& b) {
  switch (in.layout) {
    case RowLayout::kRows:
      return "";
    case RowLayout::kKnobColumns:
      return b.knob.empty() ? b.variant : b.knob;
    case RowLayout::kVariantColumns:
      break;
  }
  return StoredVariant(b.variant, b.knob);
}

std::string EffectiveLabel(const CompareInput& input) {
  return input.run.label.empty() ? FileStem(input.source) : input.run.label;
}

ColumnSet GroupColumns(const std::vector<CompareInput>& inputs) {
  std::vector<std::string> labels;
  std::map<std::string, std::vector<size_t>> members;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string label = EffectiveLabel(inputs[i]);
    if (!members.count(label)) labels.push_back(label);
    members[label].push_back(i);
  }
  ColumnSet set;
  for (size_t g = 0; g < labels.size(); ++g) {
    const std::vector<size_t>& runs = members[labels[g]];
    std::vector<std::string> variants;
    for (size_t i : runs) {
      for (const BenchmarkResult& b : inputs[i].run.benchmarks) {
        std::string v = ColumnOf(inputs[i], b);
        if (std::find(variants.begin(), variants.end(), v) == variants.end())
          variants.push_back(std::move(v));
      }
    }
    if (variants.empty()) variants.push_back("");
    for (const std::string& v : variants) {
      CompareColumn c;
      c.source = inputs[runs[0]].source;
      c.label = inputs[runs[0]].run.label;
      c.variant = v;
      // One label: it is common to every column, so a variant names its column alone.
      c.name = v.empty() ? labels[g] : labels.size() == 1 ? v : labels[g] + ":" + v;
      std::vector<size_t> holding;
      for (size_t i : runs) {
        bool has =
            std::any_of(inputs[i].run.benchmarks.begin(), inputs[i].run.benchmarks.end(),
                        [&](const BenchmarkResult& b) { return ColumnOf(inputs[i], b) == v; });
        if (has || inputs[i].run.benchmarks.empty()) holding.push_back(i);
      }
      std::optional<double> step;
      for (size_t i : holding) {
        c.sources.push_back(inputs[i].source);
        const std::optional<double>& r = inputs[i].run.timer.resolution_ns;
        if (r && (!step || *r > *step)) step = r;
      }
      set.step_ns.push_back(step);
      set.columns.push_back(std::move(c));
      set.runs.push_back(std::move(holding));
      set.group.push_back(g);
    }
  }
  return set;
}

Status CheckInputsCompare(const std::vector<CompareInput>& inputs) {
  // A run's whole result as written, kept as a hash (inputs may be tens of MB each); a hash
  // match is confirmed on the text.
  std::multimap<size_t, size_t> seen;  // hash -> input
  auto text = [&](size_t i) { return ResultToJsonValue(inputs[i].run).dump(); };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string mine = text(i);
    const size_t hash = std::hash<std::string>{}(mine);
    auto [first, last] = seen.equal_range(hash);
    for (auto it = first; it != last; ++it) {
      if (text(it->second) != mine) continue;
      return UsageError(fmt::format(
          "'{}' and '{}' are the same run (identical results): one run counted twice would look "
          "like two runs that agree; give each run once",
          inputs[it->second].source, inputs[i].source));
    }
    seen.emplace(hash, i);
  }
  const bool any = std::any_of(inputs.begin(), inputs.end(),
                               [](const CompareInput& in) { return !in.run.benchmarks.empty(); });
  if (!any) {
    return UsageError(fmt::format("{} no benchmark; give result files of `kstacklab run`",
                                  inputs.size() == 1 ? "the input holds" : "the inputs hold"));
  }
  return {};
}

Status CheckMetricsStored(const std::vector<CompareInput>& inputs,
                          const std::vector<std::string>& metrics) {
  std::set<std::string> stored;
  for (const CompareInput& in : inputs)
    for (const BenchmarkResult& b : in.run.benchmarks)
      for (const Repetition& r : b.repetitions)
        for (const auto& [k, v] : r.metrics) stored.insert(k);
  for (const std::string& m : metrics) {
    if (stored.count(m)) continue;
    std::string names;
    for (const std::string& k : MetricNames())
      if (stored.count(k)) names += (names.empty() ? "" : ", ") + k;
    for (const std::string& k : stored)
      if (std::find(MetricNames().begin(), MetricNames().end(), k) == MetricNames().end())
        names += (names.empty() ? "" : ", ") + k;
    return UsageError(fmt::format("unknown metric '{}'; the inputs store: {}", m,
                                  names.empty() ? "(no metrics)" : names));
  }
  return {};
}

Keys RowKeys(const ColumnSet& set, const std::vector<size_t>& order,
             const std::vector<CompareInput>& inputs) {
  Keys keys;
  std::set<std::pair<std::string, std::string>> seen;  // (row name, params as JSON)
  for (size_t c : order) {
    for (size_t i : set.runs[c]) {
      for (const BenchmarkResult& b : inputs[i].run.benchmarks) {
        if (ColumnOf(inputs[i], b) != set.columns[c].variant) continue;
        RowKey row = RowOf(inputs[i], b);
        std::string name = CompareRowName(row);
        if (!seen.insert({name, row.params.dump()}).second) continue;
        if (!keys.by_name.count(name)) keys.names.push_back(name);
        keys.by_name[name].push_back(std::move(row));
      }
    }
  }
  return keys;
}

Expected<KeyEntries> EntriesOf(const RowKey& key, const ColumnSet& set,
                               const std::vector<size_t>& order,
                               const std::vector<CompareInput>& inputs) {
  KeyEntries e;
  const std::string name = CompareRowName(key);
  // Params as the text RowKeys told the keys apart by (1 and 1.0 are two rows there, as here).
  const std::string params_dump = key.params.dump();
  std::string unit_col;
  for (size_t c : order) {
    e.by_column.emplace_back();
    for (size_t i : set.runs[c]) {
      e.by_column.back().emplace_back();
      for (const BenchmarkResult& b : inputs[i].run.benchmarks) {
        if (b.name != key.name || ColumnOf(inputs[i], b) != set.columns[c].variant) continue;
        const RowKey row = RowOf(inputs[i], b);
        if (row.variant != key.variant || row.knob != key.knob || row.params.dump() != params_dump)
          continue;
        if (unit_col.empty()) {
          e.unit = b.unit;
          e.lower_is_better = b.lower_is_better;
          unit_col = set.columns[c].name;
        } else if (b.unit != e.unit) {
          return UsageError(fmt::format(
              "benchmark '{}' has unit '{}' in '{}' but '{}' in '{}'; compare results measured "
              "in the same unit",
              name, e.unit, unit_col, b.unit, set.columns[c].name));
        } else if (b.lower_is_better != e.lower_is_better) {
          return UsageError(fmt::format(
              "benchmark '{}' is lower-is-better in '{}' but higher-is-better in '{}', so (R) and "
              "(I) would contradict each other; fix lower_is_better in the edited file",
              name, e.lower_is_better ? unit_col : set.columns[c].name,
              e.lower_is_better ? set.columns[c].name : unit_col));
        }
        e.by_column.back().back().push_back(&b);
      }
    }
  }
  return e;
}

}  // namespace kstacklab::stats
