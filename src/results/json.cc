// JSON form of the result schema. Field list: docs/result-schema.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/results/result_reader.h"
#include "kstacklab/results/results.h"

namespace kstacklab {
namespace {

Json HistogramToJson(const histogram::Histogram& h) {
  Json buckets = Json::array();
  for (const histogram::Histogram::Bucket& b : h.NonEmptyBuckets())
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

// One typed field of RunContext, set from `j` when its JSON type fits the field.
void ReadField(const Json& j, std::optional<uint64_t>* out) {
  if (j.is_number_unsigned()) *out = j.get<uint64_t>();
}
void ReadField(const Json& j, std::optional<int64_t>* out) {
  if (j.is_number_integer()) *out = j.get<int64_t>();
}
void ReadField(const Json& j, std::optional<double>* out) {
  if (j.is_number()) *out = j.get<double>();
}
void ReadField(const Json& j, std::optional<bool>* out) {
  if (j.is_boolean()) *out = j.get<bool>();
}
void ReadField(const Json& j, std::optional<std::string>* out) {
  if (j.is_string()) *out = j.get<std::string>();
}
bool IsStringList(const Json& j) {
  return j.is_array() &&
         std::all_of(j.begin(), j.end(), [](const Json& e) { return e.is_string(); });
}
void ReadField(const Json& j, std::optional<std::vector<std::string>>* out) {
  if (IsStringList(j)) *out = j.get<std::vector<std::string>>();
}
void ReadField(const Json& j, std::vector<std::string>* out) {
  if (IsStringList(j)) *out = j.get<std::vector<std::string>>();
}
void ReadField(const Json& j, Json* out) {
  if (j.is_object()) *out = j;
}

// Set when it is: an optional when it holds a value, a list when it is not empty, JSON when it
// is not null.
template <class T>
void PutField(Json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}
void PutField(Json& j, const char* key, const std::vector<std::string>& value) {
  if (!value.empty()) j[key] = value;
}
void PutField(Json& j, const char* key, const Json& value) {
  if (!value.is_null()) j[key] = value;
}

// Calls f(key, field) for every typed field of RunContext, in the order `run` writes them.
template <class Context, class F>
void ForEachRunField(Context& c, F&& f) {
  f("iterations", c.iterations);
  f("repetitions", c.repetitions);
  f("warmup", c.warmup);
  f("cpu", c.cpu);
  f("timing", c.timing);
  f("sched", c.sched);
  f("sessions", c.sessions);
  f("suites", c.suites);
  f("benches", c.benches);
  f("order", c.order);
  f("stall_threshold_ns", c.stall_threshold_ns);
  f("params", c.params);
  f("ab", c.ab);
  f("warnings", c.warnings);
  f("campaign", c.campaign);
}

// "a.b", or "b" at the top level.
std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
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
      if (required) return Bad(Join(path, key), "is missing");
      return static_cast<const Json*>(nullptr);
    }
    return &*it;
  }

  Expected<std::string> String(const Json& obj, const std::string& key, const std::string& path,
                               bool required = true) const {
    auto f = Field(obj, key, path, required);
    if (!f.ok()) return f.error();
    if (*f == nullptr) return std::string();
    if (!(*f)->is_string()) return Bad(Join(path, key), "must be a string");
    return (*f)->get<std::string>();
  }

  // A string shown in tables and on terminals: UTF-8 without control characters.
  Expected<std::string> Text(const Json& obj, const std::string& key, const std::string& path,
                             bool required = true) const {
    auto v = String(obj, key, path, required);
    if (!v.ok()) return v;
    if (auto problem = TextProblem(*v)) return Bad(Join(path, key), *problem);
    if (auto problem = InvisibleProblem(*v)) return Bad(Join(path, key), *problem);
    return v;
  }

  Expected<double> Number(const Json& obj, const std::string& key, const std::string& path,
                          bool required = true, double fallback = 0) const {
    auto f = Field(obj, key, path, required);
    if (!f.ok()) return f.error();
    if (*f == nullptr) return fallback;
    if (!(*f)->is_number()) return Bad(Join(path, key), "must be a finite number");
    double v = (*f)->get<double>();
    if (!std::isfinite(v)) return Bad(Join(path, key), "must be a finite number (NaN/inf given)");
    return v;
  }

  Expected<uint64_t> Unsigned(const Json& obj, const std::string& key, const std::string& path,
                              bool required = true) const {
    auto f = Field(obj, key, path, required);
    if (!f.ok()) return f.error();
    if (*f == nullptr) return uint64_t{0};
    if (!(*f)->is_number_unsigned() && !((*f)->is_number_integer() && (*f)->get<int64_t>() >= 0)) {
      return Bad(Join(path, key), "must be a non-negative integer");
    }
    return (*f)->get<uint64_t>();
  }

  Expected<double> NumberIn(const Json& obj, const std::string& key, const std::string& path,
                            double lo, double hi) const {
    auto v = Number(obj, key, path, false);
    if (!v.ok()) return v;
    if (*v < lo || *v > hi) return Bad(Join(path, key), fmt::format("must be in [{}, {}]", lo, hi));
    return v;
  }

  Expected<bool> Bool(const Json& obj, const std::string& key, const std::string& path,
                      bool fallback) const {
    auto f = Field(obj, key, path, false);
    if (!f.ok()) return f.error();
    if (*f == nullptr) return fallback;
    if (!(*f)->is_boolean()) return Bad(Join(path, key), "must be true or false");
    return (*f)->get<bool>();
  }

 private:
  std::string source_;
};

Expected<histogram::Histogram> HistogramFromJson(const Reader& r, const Json& j,
                                                 const std::string& path) {
  using L = ResultLimits;
  uint64_t sbb = 0, mvb = 0, overflow = 0, min = 0, max = 0;
  double sum = 0;
  KSTACKLAB_ASSIGN_OR_RETURN(sbb, r.Unsigned(j, "sub_bucket_bits", path));
  KSTACKLAB_ASSIGN_OR_RETURN(mvb, r.Unsigned(j, "max_value_bits", path));
  if (sbb < L::kMinSubBucketBits || sbb > L::kMaxSubBucketBits) {
    return r.Bad(path + ".sub_bucket_bits",
                 fmt::format("must be in [{}, {}] (kstacklab writes {})", L::kMinSubBucketBits,
                             L::kMaxSubBucketBits, histogram::Histogram::kDefaultSubBucketBits));
  }
  if (mvb <= sbb || mvb > L::kMaxValueBits) {
    return r.Bad(path + ".max_value_bits",
                 fmt::format("must be above sub_bucket_bits and at most {} (kstacklab writes {})",
                             L::kMaxValueBits, histogram::Histogram::kDefaultMaxValueBits));
  }
  KSTACKLAB_ASSIGN_OR_RETURN(overflow, r.Unsigned(j, "overflow", path, false));
  KSTACKLAB_ASSIGN_OR_RETURN(min, r.Unsigned(j, "min", path, false));
  KSTACKLAB_ASSIGN_OR_RETURN(max, r.Unsigned(j, "max", path, false));
  KSTACKLAB_ASSIGN_OR_RETURN(sum, r.Number(j, "sum", path, false));
  if (sum < 0) return r.Bad(path + ".sum", "must not be negative");
  std::string unit;
  KSTACKLAB_ASSIGN_OR_RETURN(unit, r.String(j, "unit", path, false));
  if (!unit.empty() && unit != "ps") return r.Bad(path + ".unit", "must be \"ps\"");
  const Json* buckets = nullptr;
  KSTACKLAB_ASSIGN_OR_RETURN(buckets, r.Field(j, "buckets", path));
  if (!buckets->is_array()) return r.Bad(path + ".buckets", "must be an array");
  std::vector<histogram::Histogram::Bucket> bs;
  uint64_t total = overflow;
  for (size_t i = 0; i < buckets->size(); ++i) {
    const Json& b = (*buckets)[i];
    if (!b.is_array() || b.size() != 3 || !b[0].is_number_unsigned() ||
        !(b[1].is_number_unsigned()) || !(b[2].is_number_unsigned())) {
      return r.Bad(fmt::format("{}.buckets[{}]", path, i), "must be [low, high, count] integers");
    }
    bs.push_back({b[0].get<uint64_t>(), b[1].get<uint64_t>(), b[2].get<uint64_t>()});
    if (__builtin_add_overflow(total, bs.back().count, &total)) {
      return r.Bad(fmt::format("{}.buckets[{}]", path, i), "counts sum past 2^64");
    }
  }
  const Json* count = nullptr;
  KSTACKLAB_ASSIGN_OR_RETURN(count, r.Field(j, "count", path, false));
  if (count != nullptr) {
    uint64_t c = 0;
    KSTACKLAB_ASSIGN_OR_RETURN(c, r.Unsigned(j, "count", path));
    if (c != total) {
      return r.Bad(path + ".count",
                   fmt::format("is {} but the buckets and overflow hold {}", c, total));
    }
  }
  if (total > 0 && min > max) {
    return r.Bad(path + ".min", fmt::format("({}) is above max ({})", min, max));
  }
  // min and max are exact values the histogram holds: min in the lowest non-empty bucket (or
  // overflowed when every value is), max in the highest (or >= 2^max_value_bits with overflow).
  if (total > 0) {
    const uint64_t top = uint64_t{1} << mvb;
    auto by_low = [](const histogram::Histogram::Bucket& a, const histogram::Histogram::Bucket& b) {
      return a.low < b.low;
    };
    const auto lowest = std::min_element(bs.begin(), bs.end(), by_low);
    const auto highest = std::max_element(bs.begin(), bs.end(), by_low);
    const bool min_ok =
        lowest == bs.end() ? min >= top : (min >= lowest->low && min < lowest->high);
    const bool max_ok = overflow > 0
                            ? max >= top
                            : (highest != bs.end() && max >= highest->low && max < highest->high);
    if (!min_ok) return r.Bad(path + ".min", fmt::format("({}) is not in the lowest bucket", min));
    if (!max_ok) {
      return r.Bad(path + ".max",
                   fmt::format("({}) is not in the highest bucket or the overflow", max));
    }
  }
  auto h = histogram::Histogram::FromBuckets(static_cast<int>(sbb), static_cast<int>(mvb), bs,
                                             overflow, sum, min, max);
  if (!h.ok()) return r.Bad(path, h.error().message);
  return h;
}

// params: a flat object of scalars (the lists' "h:1" notation), strings clean.
Status CheckParams(const Reader& r, const Json& params, const std::string& path) {
  if (!params.is_object()) return r.Bad(path, "must be an object");
  for (auto it = params.begin(); it != params.end(); ++it) {
    const std::string where = path + "." + it.key();
    if (auto problem = TextProblem(it.key())) return r.Bad(where, "key " + *problem);
    if (it.value().is_structured() || it.value().is_null()) {
      return r.Bad(where, "must be a number, string or bool");
    }
    if (it.value().is_string()) {
      if (auto problem = TextProblem(it.value().get_ref<const std::string&>())) {
        return r.Bad(where, *problem);
      }
    }
  }
  return OkStatus();
}

}  // namespace

Json RunContextToJson(const RunContext& c) {
  Json typed = Json::object();
  ForEachRunField(c, [&](const char* key, const auto& field) { PutField(typed, key, field); });
  // The object as read, each key where it was, a typed field's value where it differs from
  // what was read (a number read as 10000 and held as 10000.0 is the same: kept as read).
  Json j = Json::object();
  for (auto it = c.as_read.begin(); it != c.as_read.end(); ++it) {
    const auto t = typed.find(it.key());
    j[it.key()] = t == typed.end() || *t == it.value() ? it.value() : *t;
  }
  for (auto t = typed.begin(); t != typed.end(); ++t) {
    if (!j.contains(t.key())) j[t.key()] = t.value();
  }
  return j;
}

RunContext RunContextFromJson(const Json& object) {
  RunContext c;
  if (!object.is_object()) return c;
  c.as_read = object;
  ForEachRunField(c, [&](const char* key, auto& field) {
    if (const auto it = object.find(key); it != object.end()) ReadField(*it, &field);
  });
  return c;
}

namespace {

// Member `key` of `j` when `j` is an object holding it; else nullptr.
const Json* Member(const Json* j, const char* key) {
  if (j == nullptr || !j->is_object()) return nullptr;
  const auto it = j->find(key);
  return it == j->end() ? nullptr : &*it;
}

template <class T>
void ReadMember(const Json* j, const char* key, std::optional<T>* out) {
  if (const Json* v = Member(j, key)) ReadField(*v, out);
}

}  // namespace

EnvironmentFacts EnvironmentFactsOf(const Json& environment) {
  EnvironmentFacts f;
  const Json* kernel = Member(&environment, "kernel");
  ReadMember(kernel, "release", &f.kernel_release);
  ReadMember(kernel, "hostname", &f.hostname);
  ReadMember(kernel, "randomize_kstack_offset", &f.randomize_kstack_offset);
  ReadMember(kernel, "effective_kstack_randomization", &f.effective_kstack_randomization);
  ReadMember(Member(&environment, "sysctl"), "kernel.stack_erasing", &f.stack_erasing);
  return f;
}

Json ResultToJsonValue(const RunResult& result) {
  Json j;
  j["schema"] = result.schema;
  j["tool_version"] = result.tool_version;
  j["created"] = result.created;
  j["label"] = result.label;
  j["partial"] = result.partial;
  j["environment"] = result.environment;
  j["run"] = RunContextToJson(result.run);
  j["timer"] = Json{{"source", result.timer.source},
                    {"freq_hz", result.timer.freq_hz},
                    {"overhead_ns", result.timer.overhead_ns},
                    {"invariant", result.timer.invariant}};
  if (result.timer.resolution_ns) j["timer"]["resolution_ns"] = *result.timer.resolution_ns;
  Json benches = Json::array();
  for (const BenchmarkResult& b : result.benchmarks) {
    Json jb;
    jb["name"] = b.name;
    jb["params"] = b.params;
    if (const std::string variant = StoredVariant(b.variant, b.knob); !variant.empty()) {
      jb["variant"] = variant;
    }
    jb["unit"] = b.unit;
    jb["lower_is_better"] = b.lower_is_better;
    if (b.baseline) jb["baseline"] = true;
    jb["timing"] = b.timing;
    Json reps = Json::array();
    for (const Repetition& r : b.repetitions) {
      Json jr{{"iterations", r.iterations}, {"session", r.session}};
      if (r.stalls) jr["stalls"] = *r.stalls;
      if (r.stall_ns) jr["stall_ns"] = *r.stall_ns;
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
  // Invalid UTF-8 (possible only in the environment capture: labels are checked at input) is
  // written as U+FFFD instead of throwing.
  return DumpJson(ResultToJsonValue(result));
}

std::optional<std::string> LabelProblem(const std::string& label) {
  if (auto problem = TextProblem(label)) return problem;
  if (auto problem = InvisibleProblem(label)) return problem;
  if (const size_t colon = label.find(':'); colon != std::string::npos) {
    return fmt::format(
        "'{}' holds ':' at offset {}, the LABEL:VARIANT separator of compare --baseline",
        EscapeControl(label), colon);
  }
  return std::nullopt;
}

namespace {

// The document itself: within the size and nesting limits, valid JSON, an object.
Expected<Json> ParseDocument(const std::string& text, const std::string& source) {
  using L = ResultLimits;
  if (text.size() > L::kMaxFileBytes) {
    return UsageError(fmt::format("{}: {} bytes, more than the {} accepted", source, text.size(),
                                  L::kMaxFileBytes));
  }
  if (int depth = JsonNestingDepth(text, L::kMaxDepth); depth > L::kMaxDepth) {
    return UsageError(fmt::format("{}: nested more than {} levels deep", source, L::kMaxDepth));
  }
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
  if (!j.is_object()) {
    return UsageError(
        fmt::format("{}: not a kstacklab result (top level is not an object)", source));
  }
  return j;
}

Status ReadTimer(const Reader& r, const Json& timer, TimerInfo* out) {
  using L = ResultLimits;
  KSTACKLAB_ASSIGN_OR_RETURN(out->source, r.String(timer, "source", "timer", false));
  KSTACKLAB_ASSIGN_OR_RETURN(out->freq_hz, r.NumberIn(timer, "freq_hz", "timer", 0, L::kMaxFreqHz));
  KSTACKLAB_ASSIGN_OR_RETURN(out->overhead_ns,
                             r.NumberIn(timer, "overhead_ns", "timer", 0, L::kMaxOverheadNs));
  KSTACKLAB_ASSIGN_OR_RETURN(out->invariant, r.Bool(timer, "invariant", "timer", true));
  if (timer.contains("resolution_ns")) {
    double resolution = 0;
    // The counter's step: like the overhead, at most 1 ms (a coarser clock times nothing).
    KSTACKLAB_ASSIGN_OR_RETURN(resolution,
                               r.NumberIn(timer, "resolution_ns", "timer", 0, L::kMaxOverheadNs));
    out->resolution_ns = resolution;
  }
  return OkStatus();
}

Expected<Repetition> ReadRepetition(const Reader& r, const Json& jr, const std::string& rpath) {
  if (!jr.is_object()) return r.Bad(rpath, "must be an object");
  Repetition rep;
  KSTACKLAB_ASSIGN_OR_RETURN(rep.iterations, r.Unsigned(jr, "iterations", rpath));
  if (rep.iterations == 0) return r.Bad(rpath + ".iterations", "must be at least 1");
  if (rep.iterations > ResultLimits::kMaxIterations) {
    return r.Bad(rpath + ".iterations",
                 fmt::format("must be at most {} (2^40)", ResultLimits::kMaxIterations));
  }
  uint64_t session = 0;
  KSTACKLAB_ASSIGN_OR_RETURN(session, r.Unsigned(jr, "session", rpath, false));
  if (session > 1000000) return r.Bad(rpath + ".session", "must be at most 1000000");
  rep.session = static_cast<int>(session);
  if (jr.contains("stalls")) {
    uint64_t stalls = 0;
    KSTACKLAB_ASSIGN_OR_RETURN(stalls, r.Unsigned(jr, "stalls", rpath));
    if (stalls > rep.iterations) return r.Bad(rpath + ".stalls", "must be at most iterations");
    rep.stalls = stalls;
  }
  if (jr.contains("stall_ns")) {
    double stall_ns = 0;
    KSTACKLAB_ASSIGN_OR_RETURN(stall_ns, r.Number(jr, "stall_ns", rpath));
    if (stall_ns < 0) return r.Bad(rpath + ".stall_ns", "must be at least 0");
    rep.stall_ns = stall_ns;
  }
  for (auto it = jr.begin(); it != jr.end(); ++it) {
    if (it.key() == "iterations" || it.key() == "session" || it.key() == "stalls" ||
        it.key() == "stall_ns") {
      continue;
    }
    if (auto problem = TextProblem(it.key())) return r.Bad(rpath, "metric name " + *problem);
    double v = 0;
    KSTACKLAB_ASSIGN_OR_RETURN(v, r.Number(jr, it.key(), rpath));
    rep.metrics[it.key()] = v;
  }
  return rep;
}

// The one form of a params object, so that rows that print alike match: keys sorted (the JSON
// object is ordered), and a string holding a plain decimal integer ("0", "-3", not "00" or
// "+1") read as that integer ({"h":"0"} is {"h":0}).
Json NormalisedParams(const Json& params) {
  std::vector<std::string> keys;
  for (auto it = params.begin(); it != params.end(); ++it) keys.push_back(it.key());
  std::sort(keys.begin(), keys.end());
  Json out = Json::object();
  for (const std::string& k : keys) {
    const Json& v = params[k];
    if (v.is_string()) {
      const std::string& t = v.get_ref<const std::string&>();
      const size_t digits = t.rfind('-', 0) == 0 ? 1 : 0;
      const bool plain = t.size() > digits && t.size() - digits <= 18 &&
                         t.find_first_not_of("0123456789", digits) == std::string::npos &&
                         (t[digits] != '0' || t.size() == digits + 1) && t != "-0";
      if (plain) {
        out[k] = std::stoll(t);
        continue;
      }
    }
    out[k] = v;
  }
  return out;
}

// benchmarks[i]; `total_reps` counts the repetitions of the file so far (a per-file limit).
Expected<BenchmarkResult> ReadBenchmark(const Reader& r, const Json& jb, size_t i,
                                        size_t* total_reps) {
  using L = ResultLimits;
  std::string path = fmt::format("benchmarks[{}]", i);
  BenchmarkResult b;
  KSTACKLAB_ASSIGN_OR_RETURN(b.name, r.Text(jb, "name", path));
  if (b.name.empty()) return r.Bad(path + ".name", "must not be empty");
  path = fmt::format("benchmarks[{}] ({})", i, b.name);
  if (jb.contains("params")) {
    KSTACKLAB_RETURN_IF_ERROR(CheckParams(r, jb["params"], path + ".params"));
    b.params = NormalisedParams(jb["params"]);
  }
  KSTACKLAB_ASSIGN_OR_RETURN(b.variant, r.Text(jb, "variant", path, false));
  KSTACKLAB_ASSIGN_OR_RETURN(b.unit, r.Text(jb, "unit", path));
  KSTACKLAB_ASSIGN_OR_RETURN(b.lower_is_better, r.Bool(jb, "lower_is_better", path, true));
  KSTACKLAB_ASSIGN_OR_RETURN(b.baseline, r.Bool(jb, "baseline", path, false));
  KSTACKLAB_ASSIGN_OR_RETURN(b.timing, r.String(jb, "timing", path, false));
  if (b.timing.empty()) b.timing = "percall";
  if (b.timing != "percall" && b.timing != "loop") {
    return r.Bad(path + ".timing", "must be \"percall\" or \"loop\"");
  }
  const Json* reps = nullptr;
  KSTACKLAB_ASSIGN_OR_RETURN(reps, r.Field(jb, "repetitions", path));
  if (!reps->is_array()) return r.Bad(path + ".repetitions", "must be an array");
  if (reps->empty()) {
    return r.Bad(path + ".repetitions",
                 "is empty (a run interrupted before its first repetition); measure again");
  }
  *total_reps += reps->size();
  if (reps->size() > L::kMaxRepetitions || *total_reps > L::kMaxTotalRepetitions) {
    return r.Bad(path + ".repetitions",
                 fmt::format("too many (at most {} per benchmark and {} per file accepted)",
                             L::kMaxRepetitions, L::kMaxTotalRepetitions));
  }
  for (size_t k = 0; k < reps->size(); ++k) {
    Repetition rep;
    KSTACKLAB_ASSIGN_OR_RETURN(
        rep, ReadRepetition(r, (*reps)[k], fmt::format("{}.repetitions[{}]", path, k)));
    b.repetitions.push_back(std::move(rep));
  }
  const Json* hist = nullptr;
  KSTACKLAB_ASSIGN_OR_RETURN(hist, r.Field(jb, "histogram", path, false));
  if (hist)
    KSTACKLAB_ASSIGN_OR_RETURN(b.histogram, HistogramFromJson(r, *hist, path + ".histogram"));
  return b;
}

}  // namespace

Expected<RunResult> ResultFromJson(const std::string& text, const std::string& source) {
  Json j;
  KSTACKLAB_ASSIGN_OR_RETURN(j, ParseDocument(text, source));
  Reader r(source);
  RunResult out;
  KSTACKLAB_ASSIGN_OR_RETURN(out.schema, r.String(j, "schema", ""));
  if (out.schema != kResultSchema) {
    return UsageError(fmt::format("{}: unknown schema version '{}' (this kstacklab reads '{}')",
                                  source, out.schema, kResultSchema));
  }
  KSTACKLAB_ASSIGN_OR_RETURN(out.tool_version, r.String(j, "tool_version", "", false));
  KSTACKLAB_ASSIGN_OR_RETURN(out.created, r.String(j, "created", "", false));
  KSTACKLAB_ASSIGN_OR_RETURN(out.label, r.Text(j, "label", "", false));
  KSTACKLAB_ASSIGN_OR_RETURN(out.partial, r.Bool(j, "partial", "", false));
  for (const char* key : {"environment", "run"}) {
    if (j.contains(key) && !j[key].is_object()) return r.Bad(key, "must be an object");
  }
  if (j.contains("environment")) out.environment = j["environment"];
  if (j.contains("run")) out.run = RunContextFromJson(j["run"]);
  const Json* timer = nullptr;
  KSTACKLAB_ASSIGN_OR_RETURN(timer, r.Field(j, "timer", "", false));
  if (timer) KSTACKLAB_RETURN_IF_ERROR(ReadTimer(r, *timer, &out.timer));
  const Json* benches = nullptr;
  KSTACKLAB_ASSIGN_OR_RETURN(benches, r.Field(j, "benchmarks", ""));
  if (!benches->is_array()) return r.Bad("benchmarks", "must be an array");
  if (benches->size() > ResultLimits::kMaxBenchmarks) {
    return r.Bad("benchmarks", fmt::format("has {} entries, more than the {} accepted",
                                           benches->size(), ResultLimits::kMaxBenchmarks));
  }
  size_t total_reps = 0;
  // One entry per benchmark, params and variant: a repeated one would be pooled with the first
  // by every reader ("raw 6" where each had 3), so the file is refused, naming both.
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < benches->size(); ++i) {
    BenchmarkResult b;
    KSTACKLAB_ASSIGN_OR_RETURN(b, ReadBenchmark(r, (*benches)[i], i, &total_reps));
    const std::string id = BenchmarkId(b.name, b.params, b.variant);
    if (auto [at, fresh] = seen.emplace(id, i); !fresh) {
      return r.Bad(fmt::format("benchmarks[{}]", i),
                   fmt::format("repeats benchmarks[{}] ({}): a file holds each benchmark, params "
                               "and variant once; remove or rename one (several runs are "
                               "several files)",
                               at->second, id));
    }
    // An --ab file's rows carry the value in the variant: taken apart here, once (RowKey).
    if (!out.run.ab.empty()) std::tie(b.variant, b.knob) = SplitStoredVariant(b.variant);
    out.benchmarks.push_back(std::move(b));
  }
  return out;
}

Expected<RunResult> ReadResultFile(const std::string& path) {
  auto text = ReadWholeFile(path, ResultLimits::kMaxFileBytes);
  if (!text.ok()) return text.error();
  return ResultFromJson(*text, path);
}

Expected<RunResult> ReadResultStdin() {
  auto text = ReadStdin(ResultLimits::kMaxFileBytes);
  if (!text.ok()) return text.error();
  return ResultFromJson(*text, "<stdin>");
}

std::string UtcTimestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool IsUtcTimestamp(std::string_view t) {
  static constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:ddZ";
  if (t.size() != kShape.size()) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    const bool ok = kShape[i] == 'd' ? (t[i] >= '0' && t[i] <= '9') : t[i] == kShape[i];
    if (!ok) return false;
  }
  return true;
}

}  // namespace kstacklab
