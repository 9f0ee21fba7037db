#include "kstacklab/report/fastpath_export.h"

#include <fmt/format.h>

#include <set>

#include "kstacklab/campaign/engines.h"
#include "kstacklab/report/compare_report.h"
#include "kstacklab/results/json.h"
#include "kstacklab/results/naming.h"

namespace kstacklab::report {
namespace {

// A YAML scalar that is always read back as the same string: a JSON string is a YAML
// double-quoted scalar (YAML 1.2, section 7.3.1).
std::string Str(const std::string& s) { return Json(s).dump(); }

// What the campaign's engine calls its machine (its row's Machine()).
campaign::EngineMachine MachineOf(const campaign::CampaignState& s) {
  return s.plan.engine.row().machine(s.plan.engine.settings());
}

}  // namespace

std::string FastpathPlanYaml(const campaign::CampaignState& s,
                             const std::vector<stats::CompareInput>& inputs) {
  std::string out =
      "# Written by kstacklab campaign --fastpath from a campaign's state (docs/campaign.md).\n"
      "# Not mapped: the block order and seed, the stopping rule, the engine's switch method and\n"
      "# timeouts, initrds, the run arguments (kstacklab run " +
      Json(s.plan.run_args).dump() +
      "), and the\n"
      "# benchmarks: Fastpath has no kstacklab container, so the includes name kstacklab's rows.\n";
  const campaign::EngineMachine machine = MachineOf(s);
  out += "sut:\n  name: " + Str(machine.name) + "\n";
  if (!machine.ssh_host.empty()) {
    out += "  connection:\n    method: SSH\n    params:\n      user: " + Str(machine.ssh_user) +
           "\n      host: " + Str(machine.ssh_host) + "\n";
  }
  out += "swprofiles:\n";
  for (const campaign::Profile& p : s.plan.profiles) {
    out += "- name: " + Str(p.name) + "\n  kernel: " + Str(p.kernel) + "\n";
    if (!p.cmdline.empty()) out += "  cmdline: " + Str(p.cmdline) + "\n";
    if (!p.sysctls.empty()) {
      std::string sysctl;
      for (const auto& [k, v] : p.sysctls) {
        if (!sysctl.empty()) sysctl += ' ';
        sysctl += k;
        sysctl += '=';
        sysctl += v;
      }
      out += "  sysctl: " + Str(sysctl) + "\n";
    }
  }
  std::set<std::string> names;
  size_t repeats = 0;
  for (const stats::CompareInput& in : inputs) {
    for (const BenchmarkResult& b : in.run.benchmarks) {
      names.insert(b.name);
      repeats = std::max(repeats, b.repetitions.size());
    }
  }
  out += names.empty() ? "benchmarks: []\n" : "benchmarks:\n";
  for (const std::string& n : names) out += "- include: " + Str(n + ".yaml") + "\n";
  out += fmt::format("defaults:\n  benchmark:\n    warmups: 0\n    repeats: {}\n    sessions: {}\n",
                     repeats, s.plan.MaxBlocks());
  return out;
}

std::string FastpathResultsCsv(const campaign::CampaignState& s,
                               const std::vector<stats::CompareInput>& inputs) {
  std::string out = "sut,swprofile,benchmark,resultclass,unit,session,repeat,value\n";
  const std::string sut = CsvField(MachineOf(s).name);
  for (const stats::CompareInput& in : inputs) {
    const Json& stamp = in.run.run.campaign;
    const uint64_t boot = stamp.is_object() ? stamp.value("boot", uint64_t{0}) : 0;
    for (const BenchmarkResult& b : in.run.benchmarks) {
      for (size_t r = 0; r < b.repetitions.size(); ++r) {
        for (const char* metric : {"mean", "p99", "p99.9"}) {
          auto it = b.repetitions[r].metrics.find(metric);
          if (it == b.repetitions[r].metrics.end()) continue;
          out += fmt::format("{},{},{},{},{},{},{},{}\n", sut, CsvField(in.run.label),
                             CsvField(FastpathRowName(b.Key())),
                             CsvField(ResultClass(b.name, "", metric, b.unit, false)),
                             CsvField(b.unit), boot, r, Json(it->second).dump());
        }
      }
    }
  }
  return out;
}

}  // namespace kstacklab::report
