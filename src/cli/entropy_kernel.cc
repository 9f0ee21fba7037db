#include "entropy_kernel.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "cli_util.h"
#include "kstacklab/analysis/entropy.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/live/infer.h"
#include "kstacklab/live/probe.h"
#include "kstacklab/live/records.h"
#include "kstacklab/report/kernel_entropy_report.h"
#include "kstacklab/results/results.h"
#include "kstacklab/run/run.h"
#include "kstacklab/sysinfo/sysinfo.h"

namespace kstacklab::cli {

namespace {

constexpr uint64_t kMaxKernelSamples = 10'000'000;
constexpr uint64_t kMaxLags = 64;
constexpr int kShuffles = 8;
constexpr uint64_t kShuffleSeed = 0x6b737461636b6c61;  // "kstackla"

std::string SyscallNames() {
  std::string names;
  for (const live::CollectableSyscall& s : live::CollectableSyscalls()) {
    if (!names.empty()) names += ", ";
    names += s.name;
  }
  return names;
}

}  // namespace

void AddKernelEntropyFlags(CLI::App& sub, KernelEntropyFlags& flags) {
  // The --kernel options need --kernel: without it they would be ignored (the model runs).
  CLI::Option* kernel =
      sub.add_flag("--kernel", flags.kernel,
                   "measure the running kernel with the live BPF probe (root or CAP_BPF + "
                   "CAP_PERFMON; docs/live.md) instead of the models");
  sub.add_option("--syscall", flags.syscall, "--kernel: the syscall to sample: " + SyscallNames())
      ->capture_default_str()
      ->needs(kernel);
  sub.add_option("--cpu", flags.cpu, "--kernel: pin the sampling thread to this CPU")
      ->needs(kernel);
  sub.add_option("--lags", flags.lags, "--kernel: serial dependence at lags 1..N (1..64)")
      ->capture_default_str()
      ->needs(kernel);
  sub.add_option("--records", flags.records,
                 "--kernel: analyse probe records saved with --save-records (no BPF needed)")
      ->needs(kernel);
  sub.add_option("--save-records", flags.save_records,
                 "--kernel: also write the raw probe records (CSV) to this file")
      ->needs(kernel);
}

namespace {

// The checked flags of `entropy --kernel`, before anything is measured.
struct KernelPlan {
  const live::CollectableSyscall* syscall = nullptr;
  uint64_t samples = 0;
  uint64_t lags = 0;
  int cpu = -1;
};

Expected<KernelPlan> CheckKernelFlags(const KernelEntropyFlags& flags,
                                      const std::vector<std::string>& policies,
                                      const std::string& samples_text, const std::string& format) {
  if (!policies.empty()) {
    return UsageError(fmt::format(
        "--kernel measures the running kernel; drop the policy names ({}) or drop --kernel",
        policies.front()));
  }
  KernelPlan plan;
  auto samples =
      ParseCount(samples_text, "--samples (with --kernel)", kMinEntropySamples, kMaxKernelSamples);
  if (!samples.ok()) return samples.error();
  plan.samples = *samples;
  if (Status st = CheckGridOrJson(format); !st.ok()) return st.error();
  auto lags = ParseCount(flags.lags, "--lags", 1, kMaxLags);
  if (!lags.ok()) return lags.error();
  plan.lags = *lags;
  for (const live::CollectableSyscall& s : live::CollectableSyscalls()) {
    if (flags.syscall == s.name) plan.syscall = &s;
  }
  if (plan.syscall == nullptr) {
    return UsageError(fmt::format("--syscall {} is not supported; give one of {}", flags.syscall,
                                  SyscallNames()));
  }
  if (!flags.cpu.empty()) {
    const long cpus = sysconf(_SC_NPROCESSORS_CONF);  // the one strict count parser
    auto c = ParseCount(flags.cpu, "--cpu", 0, static_cast<uint64_t>(std::max(1L, cpus) - 1));
    if (!c.ok()) return c.error();
    plan.cpu = static_cast<int>(*c);
    // An offline CPU, or one outside this process's affinity, is the user's choice: refused
    // now, as `run --cpu` refuses it (the probe's pin would fail with EINVAL).
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && !CPU_ISSET(plan.cpu, &allowed)) {
      return UsageError(fmt::format(
          "--cpu {}: CPU {} is not available to this process (offline, or outside its affinity; "
          "allowed: {}); give one of those",
          plan.cpu, plan.cpu, run::AllowedCpus()));
    }
  }
  if (!flags.records.empty() && (!flags.cpu.empty() || !flags.save_records.empty())) {
    return UsageError("--records analyses a saved file: drop --cpu and --save-records");
  }
  if (!flags.save_records.empty()) {
    if (Status s = CheckWritable(flags.save_records); !s.ok()) {
      return WithFlag("--save-records", s.error());
    }
  }
  return plan;
}

// The records: read from --records, or collected by the live probe (and saved with
// --save-records). Fills the report's source, syscall and environment.
Expected<std::vector<live::LiveRecord>> KernelRecords(const KernelEntropyFlags& flags,
                                                      const KernelPlan& plan,
                                                      report::KernelEntropyReport* report) {
  if (!flags.records.empty()) {
    // The cap of every reader (64 MiB: about a million records); /dev/zero is refused, not read
    // until memory runs out.
    auto text = ReadWholeFile(flags.records, ResultLimits::kMaxFileBytes);
    if (!text.ok()) return text.error();
    auto parsed = live::RecordsFromCsv(*text);
    if (!parsed.ok()) {
      return UsageError(fmt::format("--records {}: {}", flags.records, parsed.error().message));
    }
    if (parsed->empty()) {
      return UsageError(fmt::format("--records {} holds no records", flags.records));
    }
    report->source = flags.records;
    report->syscall = "records";
    return parsed;
  }
  auto collected = live::Collect(live::CollectOptions{plan.syscall->nr, plan.samples, plan.cpu},
                                 &report->prng_unreadable);
  if (!collected.ok()) return collected.error();
  report->source = fmt::format("live probe ({})", live::kProbeHook);
  report->environment =
      EnvironmentFactsOf(sysinfo::CaptureEnvironment(sysinfo::SysinfoOptionsFromEnvironment()));
  if (!flags.save_records.empty()) {
    if (Status s = WriteFileAtomic(flags.save_records, live::RecordsToCsv(*collected)); !s.ok()) {
      return s.error();
    }
  }
  return collected;
}

// Offsets, their entropy, serial dependence, the inputs' diagnosis and the design inferred.
Status AnalyseRecords(const std::vector<live::LiveRecord>& records, uint64_t lags, bool from_file,
                      report::KernelEntropyReport* report) {
  auto derived = live::DeriveOffsets(records);
  if (!derived.ok()) {
    // From a file, records that make no sense are bad input (exit 2), not a probe failure.
    if (from_file) return UsageError("--records: " + derived.error().message);
    return derived.error();
  }
  report->derived = std::move(*derived);
  auto stats = analysis::AnalyzeOffsets(report->derived.offsets, report->derived.geometry);
  if (!stats.ok()) return stats.error();
  report->stats = *stats;
  auto dependence =
      live::SerialDependence(records, report->derived.offsets, report->derived.geometry,
                             static_cast<int>(lags), kShuffles, kShuffleSeed);
  if (!dependence.ok()) return dependence.error();
  report->dependence = std::move(*dependence);
  report->shuffles = kShuffles;
  report->inputs = live::DiagnoseInputs(records);
  auto prng = live::CheckPrngStates(records, report->derived.offsets, report->derived.geometry);
  if (!prng.ok()) return prng.error();
  report->prng = std::move(*prng);
  live::BtfDesignHints hints;
  if (!from_file) {
    if (auto h = live::ReadBtfDesignHints()) hints = *h;
  } else {
    // A saved file says only which state was recorded.
    hints.task_field = !records.empty() && (records.front().flags & live::kHasTaskState) != 0;
    hints.prng_state = !records.empty() && (records.front().flags & live::kHasPrngState) != 0;
  }
  report->design =
      live::InferDesign(hints.task_field, hints.prng_state, hints.percpu_counter, report->inputs);
  std::unordered_set<uint32_t> cpus;
  std::unordered_set<uint32_t> tids;
  for (const live::LiveRecord& r : records) {
    cpus.insert(r.cpu);
    tids.insert(r.tid);
  }
  report->cpus_seen = cpus.size();
  report->threads_seen = tids.size();
  return OkStatus();
}

}  // namespace

int RunKernelEntropy(const KernelEntropyFlags& flags, const std::vector<std::string>& policies,
                     const std::string& samples_text, const std::string& format) {
  auto plan = CheckKernelFlags(flags, policies, samples_text, format);
  if (!plan.ok()) return Fail(plan.error());
  report::KernelEntropyReport report;
  report.syscall = plan->syscall->name;
  report.cpu = plan->cpu;
  auto records = KernelRecords(flags, *plan, &report);
  if (!records.ok()) return Fail(records.error());
  if (Status s = AnalyseRecords(*records, plan->lags, !flags.records.empty(), &report); !s.ok()) {
    return Fail(s.error());
  }
  return PrintStdout(format == "json" ? report::RenderKernelEntropyJson(report)
                                      : report::RenderKernelEntropyTable(report));
}

}  // namespace kstacklab::cli
