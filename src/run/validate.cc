// Validation of a run plan and where its result goes (include/kstacklab/run/run.h).
#include <fmt/format.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <cctype>
#include <ctime>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "kstacklab/common/fileio.h"
#include "kstacklab/results/result_reader.h"
#include "kstacklab/run/run.h"
#include "kstacklab/store/store.h"

namespace kstacklab::run {
namespace {

// `error` about the value the caller calls `name`: "NAME: message", exit code kept.
Error About(const std::string& name, Error error) {
  error.message = fmt::format("{}: {}", name, error.message);
  return error;
}

Status CheckCount(const std::string& name, uint64_t value, uint64_t lo, uint64_t hi) {
  if (value >= lo && value <= hi) return OkStatus();
  return UsageError(fmt::format("{} {} is out of range; give {} to {}", name, value, lo, hi));
}

// The counts and times of the plan, and repetitions x sessions within one file. (The CLI parses
// them within the same bounds first, with its own messages.)
Status CheckCounts(const RunPlan& p, const PlanNames& n) {
  KSTACKLAB_RETURN_IF_ERROR(CheckCount(n.iterations, p.iterations, 1, RunLimits::kMaxIterations));
  KSTACKLAB_RETURN_IF_ERROR(
      CheckCount(n.repetitions, p.repetitions, 1, RunLimits::kMaxRepetitions));
  KSTACKLAB_RETURN_IF_ERROR(CheckCount(n.warmup, p.warmup, 0, RunLimits::kMaxIterations));
  if (p.sessions < 1 || static_cast<uint64_t>(p.sessions) > RunLimits::kMaxSessions) {
    return UsageError(fmt::format("{} {} is out of range; give 1 to {}", n.sessions, p.sessions,
                                  RunLimits::kMaxSessions));
  }
  if (p.cpu < -1 || p.cpu >= CPU_SETSIZE) {
    return UsageError(
        fmt::format("{} {} is out of range; give 0 to {}", n.cpu, p.cpu, CPU_SETSIZE - 1));
  }
  if (!(p.stall_threshold_ns >= RunLimits::kMinStallThresholdNs &&
        p.stall_threshold_ns <= RunLimits::kMaxStallThresholdNs)) {
    return UsageError(fmt::format("{} {:g} ns is out of range; give 1 ns to 10 s",
                                  n.stall_threshold, p.stall_threshold_ns));
  }
  const uint64_t sessions = static_cast<uint64_t>(p.sessions);
  if (p.repetitions * sessions > RunLimits::kMaxRepetitions) {
    return UsageError(fmt::format(
        "{} {} x {} {} is more than the {} repetitions a result file holds; give fewer "
        "repetitions per session, or split the measurement over several runs",
        n.repetitions, p.repetitions, n.sessions, sessions, RunLimits::kMaxRepetitions));
  }
  return OkStatus();
}

// The default name of collision number `n`: STEM.json, then STEM-2.json, STEM-3.json, ...
std::string DefaultOutputName(const std::string& stem, int n) {
  return n <= 1 ? stem + ".json" : fmt::format("{}-{}.json", stem, n);
}

// The number of the first default name that is free now (runs in the same second share a stem;
// the write itself is exclusive, so a name taken later is skipped there too).
constexpr int kMaxDefaultNumber = 10000;
int FirstFreeDefault(const std::string& stem) {
  for (int n = 1; n < kMaxDefaultNumber; ++n) {
    struct stat st {};
    if (::lstat(DefaultOutputName(stem, n).c_str(), &st) != 0) return n;
  }
  return kMaxDefaultNumber;
}

// kstacklab-LABEL-YYYYmmdd-HHMMSS (local time), the label's characters outside [A-Za-z0-9.-]
// replaced by '_'.
std::string DefaultOutputStem(const std::string& label) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  std::string safe;
  for (char c : label)
    safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  return fmt::format("kstacklab-{}-{}", safe.empty() ? "run" : safe, buf);
}

// The label, the output path and the store: what a reader would refuse, what cannot be written.
Status CheckDestination(ValidPlan& v, const PlanNames& n) {
  RunPlan& p = v.plan;
  if (p.label.empty()) p.label = DefaultLabel();
  if (auto problem = LabelProblem(p.label)) {
    return UsageError(fmt::format("{} {}; use printable UTF-8 text", n.label, *problem));
  }
  if (p.output && p.output->empty()) {
    return UsageError(fmt::format(
        "{0} needs a file name ('-' for stdout); omit {0} for the default name", n.output));
  }
  const bool given = p.output.has_value();
  if (!given) {
    v.default_stem = DefaultOutputStem(p.label);
    v.default_number = FirstFreeDefault(v.default_stem);
    p.output = DefaultOutputName(v.default_stem, v.default_number);
  }
  if (p.record_in_store && p.session < 0) {
    if (Status st = store::CheckStoreLocation(v.StorePath()); !st.ok()) {
      Error e = st.error();
      e.message += fmt::format(" ({} FILE, or {})", n.store, n.no_store);
      return e;
    }
  }
  if (Status st = CheckWritable(*p.output); !st.ok()) {
    return About(
        given ? n.output
              : fmt::format("the default output name (from {}; or give {})", n.label, n.output),
        st.error());
  }
  if (p.record_in_store && *p.output != "-") {
    std::error_code ec1, ec2;
    const auto out = std::filesystem::weakly_canonical(*p.output, ec1);
    const auto db = std::filesystem::weakly_canonical(v.StorePath(), ec2);
    if (!ec1 && !ec2 && out == db) {
      return UsageError(
          fmt::format("{}: '{}' is also the results store ({}); give the result file another name",
                      n.output, *p.output, n.store));
    }
  }
  return OkStatus();
}

// The rows of the suites and globs with the params applied; an error names what caused it.
Expected<std::vector<workloads::WorkloadDef>> SelectRows(const RunPlan& p, const PlanNames& n) {
  // One selection per suite and glob first, so that an error names its own.
  for (const std::string& s : p.suites) {
    if (auto one = workloads::SelectWorkloads({s}, {}); !one.ok())
      return About(n.suite, one.error());
  }
  for (const std::string& g : p.benches) {
    if (auto one = workloads::SelectWorkloads({}, {g}); !one.ok())
      return About(n.bench, one.error());
  }
  auto selected = workloads::SelectWorkloads(p.suites, p.benches);
  if (!selected.ok()) return selected.error();
  // Each setting alone first, likewise; then all of them (a key given twice).
  for (const std::string& kv : p.params) {
    if (auto one = workloads::ApplyRunParams(*selected, {kv}); !one.ok()) {
      return About(n.param + " " + kv, one.error());
    }
  }
  auto rows = workloads::ApplyRunParams(std::move(*selected), p.params);
  if (!rows.ok()) return About(n.param, rows.error());
  return rows;
}

// The whole run's repetitions (rows x knob values x repetitions x sessions) must fit a result
// file the readers accept: the alternative is a run that ends in an out-of-memory kill, or a file
// that show and compare refuse.
Status CheckRunSize(const RunPlan& p, const PlanNames& n, size_t rows) {
  uint64_t values = 1;
  for (const std::string& spec : p.ab) {
    if (auto ab = knobs::ParseAbSpec(spec); ab.ok()) values *= ab->values.size();
  }
  const uint64_t sessions = static_cast<uint64_t>(p.sessions);
  const uint64_t total = static_cast<uint64_t>(rows) * values * p.repetitions * sessions;
  if (total <= RunLimits::kMaxRunRepetitions) return OkStatus();
  return UsageError(fmt::format(
      "{} rows{} x {} repetitions x {} sessions = {} repetitions, more than the {} one result "
      "file holds; lower {} (a repetition can hold more {}), or split the run by {}/{}",
      rows, values > 1 ? fmt::format(" x {} {} values", values, n.ab) : std::string(),
      p.repetitions, sessions, total, RunLimits::kMaxRunRepetitions, n.repetitions, n.iterations,
      n.suite, n.bench));
}

// One knob spec at most, well formed, and not split over sessions (an A/B interleaves its values
// in one process).
Expected<std::optional<knobs::AbSpec>> CheckAb(const RunPlan& p, const PlanNames& n) {
  if (p.ab.empty()) return std::optional<knobs::AbSpec>();
  if (p.ab.size() > 1) {
    return UsageError(
        fmt::format("{}: one A/B knob per run, got {}: {}; give {} once (measure the other "
                    "knob in a run of its own)",
                    n.ab, p.ab.size(), fmt::join(p.ab, " "), n.ab));
  }
  if (p.sessions > 1) {
    return UsageError(
        fmt::format("{} and {} {} exclude each other: an A/B interleaves its values in one process",
                    n.ab, n.sessions, p.sessions));
  }
  auto spec = knobs::ParseAbSpec(p.ab.front());
  if (!spec.ok()) return spec.error();
  return std::optional<knobs::AbSpec>(std::move(*spec));
}

}  // namespace

std::string DefaultLabel() {
  utsname u{};
  if (uname(&u) != 0) return "run";
  return u.release;
}

std::string ValidPlan::StorePath() const {
  return plan.store.empty() ? store::DefaultStorePath() : plan.store;
}

Expected<ValidPlan> ValidatePlan(const RunPlan& plan, const PlanNames& names) {
  ValidPlan v;
  v.plan = plan;
  v.names = names;
  KSTACKLAB_RETURN_IF_ERROR(CheckCounts(v.plan, names));
  KSTACKLAB_RETURN_IF_ERROR(CheckDestination(v, names));
  KSTACKLAB_ASSIGN_OR_RETURN(v.rows, SelectRows(v.plan, names));
  KSTACKLAB_RETURN_IF_ERROR(CheckRunSize(v.plan, names, v.rows.size()));
  KSTACKLAB_ASSIGN_OR_RETURN(v.ab, CheckAb(v.plan, names));
  return v;
}

Expected<std::string> WriteResult(const ValidPlan& plan, const RunResult& result) {
  const std::string json = ResultToJson(result);
  std::string path = *plan.plan.output;
  if (plan.default_stem.empty()) {
    KSTACKLAB_RETURN_IF_ERROR(WriteFileAtomic(path, json));
    return path;
  }
  // The default name is never replaced: another run of the same label in the same second took
  // STEM.json, so this one takes STEM-2.json (created exclusively: no race between the two).
  for (int number = plan.default_number;; ++number) {
    path = DefaultOutputName(plan.default_stem, number);
    bool taken = false;
    Status st = WriteNewFile(path, json, &taken);
    if (st.ok()) return path;
    if (!taken || number >= kMaxDefaultNumber) return st.error();
  }
}

}  // namespace kstacklab::run
