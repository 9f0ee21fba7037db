// `kstacklab entropy [POLICY…]`: offset entropy of each kstack design in the user-space model
// (DESIGN.md job 4): boot the policy, draw N masked offsets on one thread, and report distinct
// count, Shannon and min-entropy, chi-square against uniform, lag-1 repeat rate and what
// lkdtm's stack-entropy.sh would print.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli_util.h"
#include "command.h"
#include "entropy_kernel.h"
#include "kstacklab/analysis/entropy.h"
#include "kstacklab/common/text.h"
#include "kstacklab/kstack/policies.h"
#include "kstacklab/report/entropy_report.h"
#include "kstacklab/report/grid_table.h"
#include "kstacklab/results/json.h"
#include "kstacklab/results/results.h"

namespace kstacklab::cli {

namespace {

constexpr uint64_t kMaxSamples = 100'000'000;

struct EntropyOptions {
  std::vector<std::string> policies;
  std::string samples = "100000";
  std::string format = "grid";
  KernelEntropyFlags kernel;
};

std::string PolicyNames() {
  std::string names;
  for (const kstack::PolicyDef& p : kstack::Policies()) {
    if (!names.empty()) names += ", ";
    names += p.name;
  }
  return names;
}

using Row = std::pair<std::string, analysis::EntropyStats>;

std::string RenderTable(const std::vector<Row>& rows, uint64_t samples) {
  report::GridTable table = report::EntropyStatsTable("policy", rows);
  std::string out = report::RenderGrid(table);
  out += "\nWhich kernels run each design (docs/models.md):\n";
  for (const auto& row : rows) {
    const kstack::PolicyDef* def = kstack::FindPolicy(row.first);
    if (def != nullptr)
      out += fmt::format("  {}: {}\n", def->name, kstack::KernelsLine(def->kernels));
  }
  out += fmt::format(
      "\nUser-space model: each policy booted as at boot, then {} offsets drawn with its "
      "next_offset() on one thread (whatever CPU it runs on; per-CPU designs use that CPU's "
      "slot).\nshannon / min-ent in bits (ideal 6 = 64 offsets of 16 bytes, 64-bit v6.11+; "
      "`off` gives 0). chi2-p: chi-square vs uniform over 64 offsets (63 dof). repeat: fraction "
      "of consecutive equal offsets (uniform iid: 1/64 = 0.01563).\nscript: what lkdtm "
      "stack-entropy.sh prints, floor(log2(distinct)) + 1 — over-reports 64 distinct as 7.\n",
      samples);
  return out;
}

std::string RenderJson(const std::vector<Row>& rows, uint64_t samples) {
  Json j = Json::object();
  j["samples"] = samples;
  j["model"] = "user space, single thread, next_offset() of each policy";
  j["ideal_bits"] = 6;
  Json list = Json::array();
  for (const auto& [name, stats] : rows) {
    Json row = {{"policy", name}};
    row.update(report::EntropyStatsJson(stats));
    if (const kstack::PolicyDef* def = kstack::FindPolicy(name)) {
      row["kernels"] = {{"mainline", def->kernels.mainline},
                        {"stable", def->kernels.stable},
                        {"verified", def->kernels.verified}};
    }
    list.push_back(std::move(row));
  }
  j["policies"] = std::move(list);
  return DumpJson(j);
}

int RunEntropy(const EntropyOptions& o) {
  if (o.kernel.kernel) return RunKernelEntropy(o.kernel, o.policies, o.samples, o.format);
  auto samples = ParseCount(o.samples, "--samples", kMinEntropySamples, kMaxSamples);
  if (!samples.ok()) return Fail(samples.error());
  if (Status st = CheckGridOrJson(o.format); !st.ok()) return Fail(st.error());
  std::vector<const kstack::PolicyDef*> chosen;
  for (const std::string& name : o.policies) {
    const kstack::PolicyDef* def = kstack::FindPolicy(name);
    if (def == nullptr) {
      return Fail(
          UsageError(fmt::format("unknown policy '{}'; valid policies: {}", name, PolicyNames())));
    }
    chosen.push_back(def);
  }
  if (chosen.empty()) {
    for (const kstack::PolicyDef& def : kstack::Policies()) chosen.push_back(&def);
  }
  std::vector<Row> rows;
  for (const kstack::PolicyDef* def : chosen) {
    auto stats = analysis::SamplePolicy(*def, *samples);
    if (!stats.ok()) return Fail(stats.error());
    rows.push_back({def->name, *stats});
  }
  return PrintStdout(o.format == "json" ? RenderJson(rows, *samples) : RenderTable(rows, *samples));
}

}  // namespace

Runner SetupEntropyCommand(CLI::App& sub) {
  auto o = std::make_shared<EntropyOptions>();
  sub.add_option("policy", o->policies,
                 "kstack designs to measure (default: all): " + PolicyNames());
  sub.add_option("--samples", o->samples, "offsets drawn per policy, 64..100000000")
      ->capture_default_str();
  sub.add_option("--format", o->format, kGridOrJsonHelp)->capture_default_str();
  AddKernelEntropyFlags(sub, o->kernel);
  return [o] { return RunEntropy(*o); };
}

}  // namespace kstacklab::cli
