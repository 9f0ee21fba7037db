#include <fmt/format.h>

#include <set>

#include "kstacklab/results/bench_glob.h"
#include "suites.h"

namespace kstacklab::workloads {

const std::vector<SuiteDef>& Suites() {
  static const std::vector<SuiteDef> k = {
      {"syscall", "single syscalls, each timed on its own (the kernel entry/exit path)",
       &SyscallSuiteRows},
      {"model", "user-space models of the kstack offset designs and their random sources",
       &ModelRows},
      {"erase", "stack erasing (kstack_erase.c): poison strategies and the erase model",
       &EraseRows},
      {"micromm",
       "fork and munmap of a populated 1 GiB mapping, page-sized or PTE-mapped THP folios",
       &MicrommRows},
      {"pkeys",
       "protection-key write windows (x86-64 PKU): one PKRU switch, n updates batched or not",
       &PkeysRows},
      {"macro", "opt-in: a kernbench-style parallel build of kstacklab's own sources", &MacroRows},
  };
  return k;
}

std::vector<std::string> DropUnavailable(std::vector<WorkloadDef>* rows) {
  std::vector<std::string> notes;
  std::vector<WorkloadDef> kept;
  for (WorkloadDef& w : *rows) {
    std::string reason = w.unavailable ? w.unavailable() : std::string();
    if (!reason.empty()) {
      notes.push_back(fmt::format("{}: skipped: {}", WorkloadId(w), reason));
      continue;
    }
    if (!w.note.empty()) notes.push_back(fmt::format("{}: {}", WorkloadId(w), w.note));
    kept.push_back(std::move(w));
  }
  *rows = std::move(kept);
  return notes;
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
      return UsageError(fmt::format("no suite '{}' (suites: {}; see `kstacklab list`)", s, names));
    }
    for (const WorkloadDef& w : found->rows()) add(w);
  }
  for (const std::string& g : globs) {
    bool matched = false;
    for (const SuiteDef& def : Suites()) {
      for (const WorkloadDef& w : def.rows()) {
        if (MatchesBenchGlob(g, w.Key())) {
          matched = true;
          add(w);
        }
      }
    }
    if (!matched) {
      return UsageError(fmt::format("pattern '{}' matches no benchmark (see `kstacklab list`)", g));
    }
  }
  return out;
}

}  // namespace kstacklab::workloads
