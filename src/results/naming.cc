// The labels of result rows (kstacklab/results/naming.h).
#include "kstacklab/results/naming.h"

#include <string>
#include <utility>

#include "kstacklab/results/json.h"
#include "kstacklab/results/results.h"

namespace kstacklab {

std::string ParamsText(const Json& params) {
  std::string out;
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (!out.empty()) out += ", ";
    out += it.key() + ":" +
           (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  }
  return out;
}

std::string BenchmarkId(const std::string& name, const Json& params, const std::string& variant) {
  std::string id = name;
  if (!params.empty()) id.append("(").append(ParamsText(params)).append(")");
  if (!variant.empty()) id.append(":").append(variant);
  return id;
}

std::string BenchmarkLabel(const std::string& name, const std::string& params_text,
                           const std::string& variant) {
  std::string label = name;
  if (!params_text.empty()) label.append(" ").append(params_text);
  if (!variant.empty()) label.append(" [").append(variant).append("]");
  return label;
}

std::string ResultClass(const std::string& name, const std::string& params_text,
                        const std::string& metric, const std::string& unit, bool several_metrics) {
  std::string cls;
  if (!params_text.empty()) {
    const size_t slash = name.find_last_of('/');
    cls = (slash == std::string::npos ? name : name.substr(slash + 1)) + ": " + params_text;
  }
  if (params_text.empty() || several_metrics) cls += (cls.empty() ? "" : " ") + metric;
  return cls.append(" (").append(unit).append(")");
}

std::string ConfigurationName(const RunResult& run, const BenchmarkResult& bench) {
  const std::string variant = StoredVariant(bench.variant, bench.knob);
  if (variant.empty()) return run.label;
  return run.label + ":" + variant;
}

std::string StoredVariant(const std::string& variant, const std::string& knob) {
  if (knob.empty()) return variant;
  return variant.empty() ? knob : variant + "," + knob;
}

std::pair<std::string, std::string> SplitStoredVariant(const std::string& stored) {
  const size_t comma = stored.rfind(',');
  const size_t start = comma == std::string::npos ? 0 : comma + 1;
  if (stored.find('=', start) == std::string::npos) return {stored, ""};
  return {comma == std::string::npos ? "" : stored.substr(0, comma), stored.substr(start)};
}

std::string BenchmarkLabel(const RowKey& key) {
  return BenchmarkLabel(key.name, ParamsText(key.params), StoredVariant(key.variant, key.knob));
}

std::string CompareRowName(const RowKey& row) {
  std::string name = row.name;
  for (const std::string* part : {&row.variant, &row.knob}) {
    if (!part->empty()) name.append(" [").append(*part).append("]");
  }
  return name;
}

std::string CompareRowLabel(const RowKey& row) {
  return BenchmarkLabel(CompareRowName(row), ParamsText(row.params));
}

std::string RowResultClass(const RowKey& row, const std::string& metric, const std::string& unit,
                           bool several_metrics) {
  return ResultClass(CompareRowName(row), ParamsText(row.params), metric, unit, several_metrics);
}

std::string TestCaseName(const RowKey& key) {
  std::string name = key.name;
  for (const auto& [k, v] : key.params.items()) name.append("_").append(k).append(v.dump());
  if (const std::string v = StoredVariant(key.variant, key.knob); !v.empty()) name += "_" + v;
  for (char& c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return name;
}

std::string ComparisonName(const std::string& row_name, const std::string& result_class,
                           const std::string& column, const std::string& baseline) {
  return row_name + " " + result_class + ": " + column + " vs " + baseline;
}

std::string FastpathRowName(const RowKey& key) {
  std::string name = key.name;
  for (const auto& [k, v] : key.params.items())
    name.append(" ").append(k).append(":").append(v.dump());
  const std::string variant = StoredVariant(key.variant, key.knob);
  if (!variant.empty()) name.append(" [").append(variant).append("]");
  return name;
}

}  // namespace kstacklab
