// The result schema ("kstacklab-result/1", DESIGN.md "Result file"): plain data produced by the
// sampler, read by stats/ and report/, its limits and its JSON form (src/results/json.cc); the
// documented field list is docs/result-schema.md. Reading a file:
// kstacklab/results/result_reader.h; the labels of its rows: kstacklab/results/naming.h; `--bench
// GLOB`: kstacklab/results/bench_glob.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/histogram/histogram.h"
#include "kstacklab/results/json.h"
#include "kstacklab/results/repetition.h"

namespace kstacklab {

inline constexpr const char* kResultSchema = "kstacklab-result/1";

// What a reader accepts (docs/result-schema.md "Limits"): far above anything `run` writes, low
// enough that a hostile file cannot exhaust memory or the stack. A violation is a UsageError
// naming the field.
struct ResultLimits {
  static constexpr size_t kMaxFileBytes = size_t{64} << 20;  // 64 MiB of JSON
  static constexpr int kMaxDepth = 32;                       // nested arrays/objects
  static constexpr size_t kMaxBenchmarks = 512;
  static constexpr size_t kMaxRepetitions = 100000;  // per benchmark
  static constexpr size_t kMaxTotalRepetitions = 1000000;
  // Calls per repetition (`run --iterations`): ~10^12, so the sums over a file's repetitions
  // (1e6 x 2^40 < 2^64) cannot wrap.
  static constexpr uint64_t kMaxIterations = uint64_t{1} << 40;
  static constexpr int kMinSubBucketBits = 2;    // histogram layout: what Histogram can produce,
  static constexpr int kMaxSubBucketBits = 11;   // at most the default 11/50 (about 330 KB of
  static constexpr int kMaxValueBits = 50;       // counts per benchmark)
  static constexpr double kMaxOverheadNs = 1e6;  // timer.overhead_ns in [0, 1 ms]
  static constexpr double kMaxFreqHz = 1e12;     // timer.freq_hz in [0, 1 THz]
};

struct TimerInfo {
  std::string source;      // "tsc", "cntvct_el0", "clock_gettime(CLOCK_MONOTONIC_RAW)", "fake"
  double freq_hz = 0;      // ticks per second (calibrated against CLOCK_MONOTONIC_RAW)
  double overhead_ns = 0;  // median cost of an empty timed region; subtracted from the metrics
  bool invariant = true;   // counter rate independent of P-states/C-states
  // Effective step of the counter in ns (timing::EstimateCounterStep): every per-call duration
  // is a multiple of it. nullopt = unknown (files written before it was measured).
  std::optional<double> resolution_ns;
};

// A row's identity, typed: what it measured (name, params), the configuration measured beside it
// in the same run (variant) and the --ab value it was measured under (knob). A file holds the
// last two joined in "variant" ("raw,kernel.stack_erasing=0", naming.h StoredVariant): the reader
// takes them apart once, for a file whose run.ab is set, and the writer joins them again, so a
// file read and written is unchanged. Nothing else splits a variant.
struct RowKey {
  std::string name;              // "suite/name"
  Json params = Json::object();  // as BenchmarkResult::params
  std::string variant;           // "" or the row's own configuration ("raw", "percpu-prng")
  std::string knob;              // "" or the --ab value, "NAME=VALUE" ("kernel.stack_erasing=0")
  bool operator==(const RowKey& o) const = default;
};

struct BenchmarkResult {
  std::string name;  // "suite/name", e.g. "syscall/getpid"
  // e.g. {"h":0}, {"depth":4096}; {} when none. A flat object of numbers, strings and bools,
  // keys sorted (checked and normalised on reading). JSON, not a struct: each workload has its
  // own keys and no code reads one by name; params are labels (naming.h) and match keys.
  Json params = Json::object();
  std::string variant;  // "" or a configuration name measured in this run ("percpu-prng")
  std::string knob;     // "" or the --ab value the row was measured under (RowKey::knob)
  std::string unit = "ns";
  bool lower_is_better = true;
  bool baseline = false;  // compare's default baseline among the variants of one name+params
  std::string timing = "percall";  // "percall" or "loop"
  std::vector<Repetition> repetitions;
  // Merged over all repetitions. Unit: picoseconds of the raw timed region, i.e. NOT overhead
  // corrected (subtract timer.overhead_ns * 1000). Empty (count 0) in loop mode.
  histogram::Histogram histogram;

  RowKey Key() const { return {name, params, variant, knob}; }
};

// How the run was made: the file's "run" object (docs/result-schema.md), filled by the run
// library (include/kstacklab/run/run.h). A field is absent (nullopt, empty, null) where a file
// lacks it, or holds it with another JSON type than this version writes (such a value stays in
// `as_read` only). Readers use the typed members. `as_read` is the object as a file had it
// (empty for a run made here): the writer writes it back key by key, in its order, with a typed
// member's value where it differs from what was read, then the typed members the file lacked;
// so a file read and written again is byte for byte the same, and a field set on it (a
// campaign's stamp) is written where a reader expects it.
struct RunContext {
  std::optional<uint64_t> iterations;               // timed calls per repetition
  std::optional<uint64_t> repetitions;              // per session
  std::optional<uint64_t> warmup;                   // untimed calls before each repetition
  std::optional<int64_t> cpu;                       // the CPU measured on
  std::optional<std::string> timing;                // "percall" or "loop"
  std::optional<std::string> sched;                 // "normal" or "fifo"
  std::optional<int64_t> sessions;                  // processes the repetitions were measured in
  std::optional<std::vector<std::string>> suites;   // as selected (may be empty)
  std::optional<std::vector<std::string>> benches;  // globs, as selected (may be empty)
  std::optional<std::string> order;                 // the interleaving, in words
  std::optional<double> stall_threshold_ns;         // a call above it counts as a host stall
  std::vector<std::string> params;    // KEY=VALUE row settings; written when not empty
  std::vector<std::string> ab;        // the A/B knob spec; written when not empty
  std::vector<std::string> warnings;  // what the run warned about; written when not empty
  Json campaign;  // how a campaign booted this run (an object; campaign/runner.cc); null: none
  Json as_read = Json::object();
};

// The fields of a result's environment (RunResult::environment, the capture of
// kstacklab/sysinfo/sysinfo.h, `kstacklab env --json`) that kstacklab reads back, typed: the
// store's columns, a campaign's check of a boot, the live reports. Each is nullopt where the
// capture lacks it, has it null (not known) or holds another JSON type. The capture itself stays
// JSON in RunResult and is written back as read: it is open-ended (a newer capture's fields must
// survive a copy), and it is printed, not computed on, everywhere else.
struct EnvironmentFacts {
  std::optional<std::string> kernel_release;           // kernel.release
  std::optional<std::string> hostname;                 // kernel.hostname
  std::optional<std::string> randomize_kstack_offset;  // kernel.randomize_kstack_offset: "on",
                                                       // "off", "invalid:TEXT" (the boot option)
  std::optional<bool> effective_kstack_randomization;  // kernel.effective_kstack_randomization
  std::optional<int64_t> stack_erasing;                // sysctl["kernel.stack_erasing"]: 0 or 1
};
EnvironmentFacts EnvironmentFactsOf(const Json& environment);

struct RunResult {
  std::string schema = kResultSchema;
  std::string tool_version;
  std::string created;                // ISO 8601 UTC
  std::string label;                  // the configuration this run measured (e.g. kernel + sysctl)
  bool partial = false;               // interrupted: holds only the completed repetitions
  Json environment = Json::object();  // sysinfo capture, see `kstacklab env --json`
  RunContext run;                     // how it was run
  TimerInfo timer;
  std::vector<BenchmarkResult> benchmarks;
};

// The "run" object of a result file, and back (the rules of RunContext). Any JSON object is
// accepted: nothing in it is an error.
Json RunContextToJson(const RunContext& context);
RunContext RunContextFromJson(const Json& object);

// Serialises to the documented JSON (2-space indent, trailing newline, locale-independent).
std::string ResultToJson(const RunResult& result);
Json ResultToJsonValue(const RunResult& result);

// The current time as ISO 8601 UTC ("2026-11-29T20:10:00Z"), the form of RunResult::created.
std::string UtcTimestamp();
// True when `t` has exactly that form ("dddd-dd-ddTdd:dd:ddZ"), in which text order is time
// order (`compare` orders runs by it).
bool IsUtcTimestamp(std::string_view t);

// Nanoseconds in one `BenchmarkResult::unit` of time ("ns" 1, "us" 1e3, "ms" 1e6, "s" 1e9); 1 for
// any other unit. Repetition metrics are stored in the row's unit; histograms always in ps.
inline double NsPerUnit(const std::string& unit) {
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  return 1;
}

}  // namespace kstacklab
