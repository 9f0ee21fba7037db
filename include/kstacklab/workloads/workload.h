// The workload table (DESIGN.md: "workloads/ is a table"). A workload is one row: its name,
// summary, params, optional variant (a configuration measured in the same run), a setup that
// checks once — outside any timed region — that the call behaves as expected, and the timed
// loops instantiated for its call. `kstacklab list` and selection are generated from the rows.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/results/results.h"
#include "kstacklab/sampler/sampler.h"

namespace kstacklab::workloads {

struct WorkloadDef {
  std::string name;       // "suite/name"
  std::string variant;    // "" or the configuration's name (e.g. a kstack policy)
  std::string knob;       // "" or the --ab value the row is measured under (RowKey::knob)
  bool baseline = false;  // compare's default baseline among the variants of one name+params
  Json params = Json::object();
  std::string summary;  // one line
  std::string unit = "ns";
  bool lower_is_better = true;
  // Creates the call's state and verifies the call once. The returned pointer owns the state
  // (its deleter tears it down: closes files, frees memory). Failure -> the row is not run.
  std::function<Expected<std::shared_ptr<void>>()> setup;
  sampler::PerCallFn percall = nullptr;
  sampler::LoopFn loop = nullptr;
  // Slow calls (a fork of 1 GiB, a whole build) cap what the run asks for: the most timed calls
  // per repetition, repetitions and untimed warm-up calls this row makes (0 / nullopt: no cap).
  uint64_t max_iterations = 0;
  int max_repetitions = 0;
  std::optional<uint64_t> max_warmup;
  // Non-empty reason -> the row cannot run on this machine (no THP, no PKU): it is skipped with
  // that reason as a note, not an error. Called once, before any setup.
  std::function<std::string()> unavailable;
  // A note to print once when the row runs (e.g. "scaled down to 256 MiB: memory is short").
  std::string note;
  // Metrics the state gathered over the repetition just measured (e.g. a build's user and
  // system seconds, in `unit`), merged into that repetition's metrics. Called after each
  // repetition, outside the timed region; it resets what it reports.
  std::function<std::map<std::string, double>(void* state)> extra_metrics;
  // The `run --param KEY=VALUE` keys this row takes: each returns the row rebuilt for VALUE (its
  // `params` record the value, e.g. size_mib), or a UsageError giving the accepted form.
  std::map<std::string, std::function<Expected<WorkloadDef>(const std::string& value)>> run_params;

  RowKey Key() const { return {name, params, variant, knob}; }
};

struct SuiteDef {
  std::string name;
  std::string summary;
  std::vector<WorkloadDef> (*rows)();
};

// Every suite, in `list` order.
const std::vector<SuiteDef>& Suites();

// "name", "name(k:v, ...)" with params, then ":variant" when there is one, e.g.
// "model/kstack(handler:getpid):percpu-prng". Unique per row.
inline std::string WorkloadId(const WorkloadDef& w) {
  return BenchmarkId(w.name, w.params, StoredVariant(w.variant, w.knob));
}

// Selects rows: all rows of the given suites, plus rows one of the globs (fnmatch) matches as
// WorkloadId, as "name:variant" (every params row of it) or as "name". No suites and no globs ->
// the default suite ("syscall"). Unknown suite or a glob matching nothing -> UsageError naming it
// and `kstacklab list`.
Expected<std::vector<WorkloadDef>> SelectWorkloads(const std::vector<std::string>& suites,
                                                   const std::vector<std::string>& globs);

// Applies `run --param KEY=VALUE` settings (each given once) to the rows that take KEY. Not
// KEY=VALUE, a key given twice, a key no row of any suite takes (the message lists the keys), a
// key no row of `rows` takes (the message names the suite whose rows take it) and a value the row
// refuses -> UsageError about the value (library messages name no flag: the caller words
// them as `--param KEY=VALUE`).
Expected<std::vector<WorkloadDef>> ApplyRunParams(std::vector<WorkloadDef> rows,
                                                  const std::vector<std::string>& params);

// Removes the rows whose `unavailable` gives a reason and returns one note per removed row
// ("micromm/fork(h:1): skipped: ...") and per kept row with a `note`, for the run's warnings.
std::vector<std::string> DropUnavailable(std::vector<WorkloadDef>* rows);

inline constexpr const char* kDefaultSuite = "syscall";

}  // namespace kstacklab::workloads
