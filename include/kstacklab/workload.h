// The workload table (DESIGN.md: "workloads/ is a table"). A workload is one row: its name,
// summary, params, optional variant (a configuration measured in the same run), a setup that
// checks once — outside any timed region — that the call behaves as expected, and the timed
// loops instantiated for its call. `kstacklab list` and selection are generated from the rows.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kstacklab/error.h"
#include "kstacklab/results.h"
#include "kstacklab/sampler.h"

namespace kstacklab {

struct WorkloadDef {
  std::string name;     // "suite/name"
  std::string variant;  // "" or the configuration's name (e.g. a kstack policy)
  Json params = Json::object();
  std::string summary;  // one line
  std::string unit = "ns";
  bool lower_is_better = true;
  bool baseline = false;  // compare's default baseline among the variants of one name+params
  // Creates the call's state and verifies the call once. The returned pointer owns the state
  // (its deleter tears it down: closes files, frees memory). Failure -> the row is not run.
  std::function<Expected<std::shared_ptr<void>>()> setup;
  PerCallFn percall = nullptr;
  LoopFn loop = nullptr;
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
  std::string id = w.name;
  if (!w.params.empty()) id.append("(").append(ParamsText(w.params)).append(")");
  if (!w.variant.empty()) id.append(":").append(w.variant);
  return id;
}

// Selects rows: all rows of the given suites, plus rows one of the globs (fnmatch) matches as
// WorkloadId, as "name:variant" (every params row of it) or as "name". No suites and no globs ->
// the default suite ("syscall"). Unknown suite or a glob matching nothing -> UsageError naming it
// and `kstacklab list`.
Expected<std::vector<WorkloadDef>> SelectWorkloads(const std::vector<std::string>& suites,
                                                   const std::vector<std::string>& globs);

inline constexpr const char* kDefaultSuite = "syscall";

}  // namespace kstacklab
