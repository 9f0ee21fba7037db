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
  if (bench.variant.empty()) return run.label;
  return run.label + ":" + bench.variant;
}

std::string AbVariant(const std::string& own, const std::string& tag) {
  return own.empty() ? tag : own + "," + tag;
}

std::pair<std::string, std::string> SplitAbVariant(const std::string& variant) {
  const size_t comma = variant.rfind(',');
  const size_t start = comma == std::string::npos ? 0 : comma + 1;
  if (variant.find('=', start) == std::string::npos) return {variant, ""};
  return {comma == std::string::npos ? "" : variant.substr(0, comma), variant.substr(start)};
}

}  // namespace kstacklab
