// JSON form of the result schema. Field list: docs/result-schema.md.
#include <fmt/format.h>

#include <cmath>
#include <ctime>

#include "kstacklab/fileio.h"
#include "kstacklab/results.h"

namespace kstacklab {
namespace {

Json HistogramToJson(const Histogram& h) {
  Json buckets = Json::array();
  for (const Histogram::Bucket& b : h.NonEmptyBuckets())
    buckets.push_back({b.low, b.high, b.count});
  return Json{{"unit", "ps"},
              {"sub_bucket_bits", h.sub_bucket_bits()},
              {"max_value_bits", h.max_value_bits()},
              {"count", h.count()},
              {"sum", h.sum()},
              {"min", h.min()},
              {"max", h.max()},
              {"overflow", h.overflow()},
              {"buckets", std::move(buckets)}};
}

// Validation helpers: every failure names the source and the JSON path of the field.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  Error Bad(const std::string& path, const std::string& what) const {
    return UsageError(fmt::format("{}: field '{}' {}", source_, path, what));
  }

  Expected<const Json*> Field(const Json& obj, const std::string& key, const std::string& path,
                              bool required = true) const {
    if (!obj.is_object()) return Bad(path, "must be an object");
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) return Bad(path + "." + key, "is missing");
      return static_cast<const Json*>(nullptr);
    }
    return &*it;
  }

  Expected<std::string> String(const Json& obj, const std::string& key, const std::string& path,
                               bool required = true) const {
    auto f = Field(obj, key, path, required);
    if (!f.ok()) return f.error();
    if (*f == nullptr) return std::string();
    if (!(*f)->is_string()) return Bad(path + "." + key, "must be a string");
    return (*f)->get<std::string>();
  }

  Expected<double> Number(const Json& obj, const std::string& key, const std::string& path,
                          bool required = true, double fallback = 0) const {
    auto f = Field(obj, key, path, required);
    if (!f.ok()) return f.error();
    if (*f == nullptr) return fallback;
    if (!(*f)->is_number()) return Bad(path + "." + key, "must be a finite number");
    double v = (*f)->get<double>();
    if (!std::isfinite(v)) return Bad(path + "." + key, "must be a finite number (NaN/inf given)");
    return v;
  }

  Expected<uint64_t> Unsigned(const Json& obj, const std::string& key, const std::string& path,
                              bool required = true) const {
    auto f = Field(obj, key, path, required);
    if (!f.ok()) return f.error();
    if (*f == nullptr) return uint64_t{0};
    if (!(*f)->is_number_unsigned() && !((*f)->is_number_integer() && (*f)->get<int64_t>() >= 0)) {
      return Bad(path + "." + key, "must be a non-negative integer");
    }
    return (*f)->get<uint64_t>();
  }

  Expected<bool> Bool(const Json& obj, const std::string& key, const std::string& path,
                      bool fallback) const {
    auto f = Field(obj, key, path, false);
    if (!f.ok()) return f.error();
    if (*f == nullptr) return fallback;
    if (!(*f)->is_boolean()) return Bad(path + "." + key, "must be true or false");
    return (*f)->get<bool>();
  }

 private:
  std::string source_;
};

#define KSTACKLAB_ASSIGN(lhs, expr)                      \
  do {                                                   \
    auto kstacklab_v_ = (expr);                          \
    if (!kstacklab_v_.ok()) return kstacklab_v_.error(); \
    (lhs) = std::move(*kstacklab_v_);                    \
  } while (0)

Expected<Histogram> HistogramFromJson(const Reader& r, const Json& j, const std::string& path) {
  uint64_t sbb = 0, mvb = 0, overflow = 0, min = 0, max = 0;
  double sum = 0;
  KSTACKLAB_ASSIGN(sbb, r.Unsigned(j, "sub_bucket_bits", path));
  KSTACKLAB_ASSIGN(mvb, r.Unsigned(j, "max_value_bits", path));
  KSTACKLAB_ASSIGN(overflow, r.Unsigned(j, "overflow", path, false));
  KSTACKLAB_ASSIGN(min, r.Unsigned(j, "min", path, false));
  KSTACKLAB_ASSIGN(max, r.Unsigned(j, "max", path, false));
  KSTACKLAB_ASSIGN(sum, r.Number(j, "sum", path, false));
  std::string unit;
  KSTACKLAB_ASSIGN(unit, r.String(j, "unit", path, false));
  if (!unit.empty() && unit != "ps") return r.Bad(path + ".unit", "must be \"ps\"");
  const Json* buckets = nullptr;
  KSTACKLAB_ASSIGN(buckets, r.Field(j, "buckets", path));
  if (!buckets->is_array()) return r.Bad(path + ".buckets", "must be an array");
  std::vector<Histogram::Bucket> bs;
  for (size_t i = 0; i < buckets->size(); ++i) {
    const Json& b = (*buckets)[i];
    if (!b.is_array() || b.size() != 3 || !b[0].is_number_unsigned() ||
        !(b[1].is_number_unsigned()) || !(b[2].is_number_unsigned())) {
      return r.Bad(fmt::format("{}.buckets[{}]", path, i), "must be [low, high, count] integers");
    }
    bs.push_back({b[0].get<uint64_t>(), b[1].get<uint64_t>(), b[2].get<uint64_t>()});
  }
  auto h = Histogram::FromBuckets(static_cast<int>(sbb), static_cast<int>(mvb), bs, overflow, sum,
                                  min, max);
  if (!h.ok()) return r.Bad(path, h.error().message);
  return h;
}

}  // namespace

Json ResultToJsonValue(const RunResult& result) {
  Json j;
  j["schema"] = result.schema;
  j["tool_version"] = result.tool_version;
  j["created"] = result.created;
  j["label"] = result.label;
  j["partial"] = result.partial;
  j["environment"] = result.environment;
  j["run"] = result.run;
  j["timer"] = Json{{"source", result.timer.source},
                    {"freq_hz", result.timer.freq_hz},
                    {"overhead_ns", result.timer.overhead_ns},
                    {"invariant", result.timer.invariant}};
  Json benches = Json::array();
  for (const BenchmarkResult& b : result.benchmarks) {
    Json jb;
    jb["name"] = b.name;
    jb["params"] = b.params;
    if (!b.variant.empty()) jb["variant"] = b.variant;
    jb["unit"] = b.unit;
    jb["lower_is_better"] = b.lower_is_better;
    if (b.baseline) jb["baseline"] = true;
    jb["timing"] = b.timing;
    Json reps = Json::array();
    for (const Repetition& r : b.repetitions) {
      Json jr{{"iterations", r.iterations}, {"session", r.session}};
      for (const std::string& m : MetricNames()) {
        auto it = r.metrics.find(m);
        if (it != r.metrics.end() && std::isfinite(it->second)) jr[m] = it->second;
      }
      for (const auto& [k, v] : r.metrics) {  // extra metrics a workload may add
        if (!jr.contains(k) && std::isfinite(v)) jr[k] = v;
      }
      reps.push_back(std::move(jr));
    }
    jb["repetitions"] = std::move(reps);
    jb["histogram"] = HistogramToJson(b.histogram);
    benches.push_back(std::move(jb));
  }
  j["benchmarks"] = std::move(benches);
  return j;
}

std::string ResultToJson(const RunResult& result) {
  return ResultToJsonValue(result).dump(2) + "\n";
}

Expected<RunResult> ResultFromJson(const std::string& text, const std::string& source) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Re-parse with exceptions to learn the byte position of the first error.
    try {
      Json again = Json::parse(text);
      (void)again;
    } catch (const Json::parse_error& e) {
      return UsageError(
          fmt::format("{}: not valid JSON (at byte {}): {}", source, e.byte, e.what()));
    } catch (const Json::exception& e) {  // e.g. out_of_range.406: a number like 1e999
      return UsageError(fmt::format("{}: not valid JSON: {}", source, e.what()));
    }
    return UsageError(fmt::format("{}: not valid JSON", source));
  }
  Reader r(source);
  if (!j.is_object())
    return UsageError(
        fmt::format("{}: not a kstacklab result (top level is not an object)", source));
  RunResult out;
  KSTACKLAB_ASSIGN(out.schema, r.String(j, "schema", ""));
  if (out.schema != kResultSchema) {
    return UsageError(fmt::format("{}: unknown schema version '{}' (this kstacklab reads '{}')",
                                  source, out.schema, kResultSchema));
  }
  KSTACKLAB_ASSIGN(out.tool_version, r.String(j, "tool_version", "", false));
  KSTACKLAB_ASSIGN(out.created, r.String(j, "created", "", false));
  KSTACKLAB_ASSIGN(out.label, r.String(j, "label", "", false));
  KSTACKLAB_ASSIGN(out.partial, r.Bool(j, "partial", "", false));
  if (j.contains("environment")) out.environment = j["environment"];
  if (j.contains("run")) out.run = j["run"];
  const Json* timer = nullptr;
  KSTACKLAB_ASSIGN(timer, r.Field(j, "timer", "", false));
  if (timer) {
    KSTACKLAB_ASSIGN(out.timer.source, r.String(*timer, "source", "timer", false));
    KSTACKLAB_ASSIGN(out.timer.freq_hz, r.Number(*timer, "freq_hz", "timer", false));
    KSTACKLAB_ASSIGN(out.timer.overhead_ns, r.Number(*timer, "overhead_ns", "timer", false));
    KSTACKLAB_ASSIGN(out.timer.invariant, r.Bool(*timer, "invariant", "timer", true));
  }
  const Json* benches = nullptr;
  KSTACKLAB_ASSIGN(benches, r.Field(j, "benchmarks", ""));
  if (!benches->is_array()) return r.Bad("benchmarks", "must be an array");
  for (size_t i = 0; i < benches->size(); ++i) {
    const Json& jb = (*benches)[i];
    std::string path = fmt::format("benchmarks[{}]", i);
    BenchmarkResult b;
    KSTACKLAB_ASSIGN(b.name, r.String(jb, "name", path));
    if (b.name.empty()) return r.Bad(path + ".name", "must not be empty");
    path = fmt::format("benchmarks[{}] ({})", i, b.name);
    if (jb.contains("params")) {
      if (!jb["params"].is_object()) return r.Bad(path + ".params", "must be an object");
      b.params = jb["params"];
    }
    KSTACKLAB_ASSIGN(b.variant, r.String(jb, "variant", path, false));
    KSTACKLAB_ASSIGN(b.unit, r.String(jb, "unit", path));
    KSTACKLAB_ASSIGN(b.lower_is_better, r.Bool(jb, "lower_is_better", path, true));
    KSTACKLAB_ASSIGN(b.baseline, r.Bool(jb, "baseline", path, false));
    KSTACKLAB_ASSIGN(b.timing, r.String(jb, "timing", path, false));
    const Json* reps = nullptr;
    KSTACKLAB_ASSIGN(reps, r.Field(jb, "repetitions", path));
    if (!reps->is_array()) return r.Bad(path + ".repetitions", "must be an array");
    for (size_t k = 0; k < reps->size(); ++k) {
      const Json& jr = (*reps)[k];
      std::string rpath = fmt::format("{}.repetitions[{}]", path, k);
      if (!jr.is_object()) return r.Bad(rpath, "must be an object");
      Repetition rep;
      KSTACKLAB_ASSIGN(rep.iterations, r.Unsigned(jr, "iterations", rpath));
      uint64_t session = 0;
      KSTACKLAB_ASSIGN(session, r.Unsigned(jr, "session", rpath, false));
      rep.session = static_cast<int>(session);
      for (auto it = jr.begin(); it != jr.end(); ++it) {
        if (it.key() == "iterations" || it.key() == "session") continue;
        double v = 0;
        KSTACKLAB_ASSIGN(v, r.Number(jr, it.key(), rpath));
        rep.metrics[it.key()] = v;
      }
      b.repetitions.push_back(std::move(rep));
    }
    const Json* hist = nullptr;
    KSTACKLAB_ASSIGN(hist, r.Field(jb, "histogram", path, false));
    if (hist) KSTACKLAB_ASSIGN(b.histogram, HistogramFromJson(r, *hist, path + ".histogram"));
    out.benchmarks.push_back(std::move(b));
  }
  return out;
}

Expected<RunResult> ReadResultFile(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.error();
  return ResultFromJson(*text, path);
}

std::string ConfigurationName(const RunResult& run, const BenchmarkResult& bench) {
  if (bench.variant.empty()) return run.label;
  return run.label + ":" + bench.variant;
}

std::string UtcTimestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string ParamsText(const Json& params) {
  std::string out;
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (!out.empty()) out += ", ";
    out += it.key() + ":" +
           (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  }
  return out;
}

}  // namespace kstacklab
