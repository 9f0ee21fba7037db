#include <fmt/format.h>
#include <fnmatch.h>

#include <set>

#include "workloads/suites.h"

namespace kstacklab {

const std::vector<SuiteDef>& Suites() {
  static const std::vector<SuiteDef> k = {
      {"syscall", "single syscalls, each timed on its own (the kernel entry/exit path)",
       &workloads::SyscallSuiteRows},
      {"model", "user-space models of the kstack offset designs and their random sources",
       &workloads::ModelRows},
      {"erase", "stack erasing (kstack_erase.c): poison strategies and the erase model",
       &workloads::EraseRows},
  };
  return k;
}

Expected<std::vector<WorkloadDef>> SelectWorkloads(const std::vector<std::string>& suites,
                                                   const std::vector<std::string>& globs) {
  std::vector<std::string> want_suites = suites;
  if (suites.empty() && globs.empty()) want_suites.push_back(kDefaultSuite);
  std::vector<WorkloadDef> out;
  std::set<std::string> taken;
  auto add = [&](const WorkloadDef& w) {
    if (taken.insert(WorkloadId(w)).second) out.push_back(w);
  };
  for (const std::string& s : want_suites) {
    const SuiteDef* found = nullptr;
    for (const SuiteDef& def : Suites()) {
      if (def.name == s) found = &def;
    }
    if (!found) {
      std::string names;
      for (const SuiteDef& def : Suites()) names += (names.empty() ? "" : ", ") + def.name;
      return UsageError(
          fmt::format("--suite {}: no such suite (suites: {}; see `kstacklab list`)", s, names));
    }
    for (const WorkloadDef& w : found->rows()) add(w);
  }
  for (const std::string& g : globs) {
    bool matched = false;
    for (const SuiteDef& def : Suites()) {
      for (const WorkloadDef& w : def.rows()) {
        const std::string short_id = w.variant.empty() ? w.name : w.name + ":" + w.variant;
        if (fnmatch(g.c_str(), WorkloadId(w).c_str(), 0) == 0 ||
            fnmatch(g.c_str(), short_id.c_str(), 0) == 0 ||
            fnmatch(g.c_str(), w.name.c_str(), 0) == 0) {
          matched = true;
          add(w);
        }
      }
    }
    if (!matched) {
      return UsageError(fmt::format("--bench {}: matches no benchmark (see `kstacklab list`)", g));
    }
  }
  return out;
}

}  // namespace kstacklab
