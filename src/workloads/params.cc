// `run --param KEY=VALUE`: the rows that take a key rebuild themselves for its value
// (include/kstacklab/workloads/workload.h, WorkloadDef::run_params).
#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "kstacklab/workloads/workload.h"

namespace kstacklab::workloads {
namespace {

// The suites whose rows take `key`, in `list` order; every key of every suite into `keys`.
std::vector<std::string> SuitesTaking(const std::string& key, std::set<std::string>* keys) {
  std::vector<std::string> suites;
  for (const SuiteDef& suite : Suites()) {
    for (const WorkloadDef& w : suite.rows()) {
      for (const auto& [k, fn] : w.run_params) keys->insert(k);
      if (w.run_params.count(key) != 0 && (suites.empty() || suites.back() != suite.name)) {
        suites.push_back(suite.name);
      }
    }
  }
  return suites;
}

}  // namespace

Expected<std::vector<WorkloadDef>> ApplyRunParams(std::vector<WorkloadDef> rows,
                                                  const std::vector<std::string>& params) {
  std::set<std::string> given;
  for (const std::string& p : params) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == p.size()) {
      return UsageError("expected KEY=VALUE, e.g. size=256M");
    }
    const std::string key = p.substr(0, eq);
    const std::string value = p.substr(eq + 1);
    if (!given.insert(key).second) {
      return UsageError(fmt::format("'{}' is given twice; give it once", key));
    }
    std::set<std::string> keys;
    const std::vector<std::string> suites = SuitesTaking(key, &keys);
    if (suites.empty()) {
      return UsageError(fmt::format("unknown key '{}' (keys: {})", key, fmt::join(keys, ", ")));
    }
    bool taken = false;
    for (WorkloadDef& w : rows) {
      auto it = w.run_params.find(key);
      if (it == w.run_params.end()) continue;
      auto rebuilt = it->second(value);
      if (!rebuilt.ok()) return rebuilt.error();
      w = std::move(*rebuilt);
      taken = true;
    }
    if (!taken) {
      return UsageError(
          fmt::format("no selected benchmark takes '{}'; select the suite that does: {}", key,
                      fmt::join(suites, ", ")));
    }
  }
  return rows;
}

}  // namespace kstacklab::workloads
