#include "entropy_kernel.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "cli_util.h"
#include "kstacklab/entropy.h"
#include "kstacklab/entropy_report.h"
#include "kstacklab/fileio.h"
#include "kstacklab/grid_table.h"
#include "kstacklab/json.h"
#include "kstacklab/live/infer.h"
#include "kstacklab/live/probe.h"
#include "kstacklab/live/records.h"
#include "kstacklab/results.h"
#include "kstacklab/run.h"
#include "kstacklab/sysinfo.h"
#include "kstacklab/text.h"

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

struct KernelReport {
  std::string source;  // "live probe" or the records file
  std::string syscall;
  int cpu = -1;
  EnvironmentFacts environment;  // this kernel's, for the probe; unknown for --records
  live::DerivedOffsets derived;
  analysis::EntropyStats stats;
  std::vector<live::LagDependence> dependence;
  live::InputDiagnosis inputs;
  live::PrngCheck prng;         // records with kstack_rnd_state (v7.1+)
  std::string prng_unreadable;  // why BTF's kstack_rnd_state could not be read (probe only)
  live::KernelDesign design;
  uint64_t cpus_seen = 0;
  uint64_t threads_seen = 0;
};

Json EnvironmentJson(const KernelReport& r) {
  Json env = Json::object();
  env["kernel_release"] = OptionalJson(r.environment.kernel_release);
  env["randomize_kstack_offset"] = OptionalJson(r.environment.randomize_kstack_offset);
  env["effective_kstack_randomization"] =
      OptionalJson(r.environment.effective_kstack_randomization);
  env["design_state"] = r.design.state;
  env["design_input"] = r.design.input;
  env["design"] = r.design.summary;
  env["prng_state_unreadable"] =
      r.prng_unreadable.empty() ? Json(nullptr) : Json(r.prng_unreadable);
  return env;
}

std::string JsonText(const Json& v) {
  if (v.is_null()) return "?";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// One row per lag: mutual information between offsets i and i+lag, and the shuffled baseline.
GridTable DependenceTable(const std::vector<live::LagDependence>& dependence) {
  GridTable t;
  t.header = {
      {"lag", "pairs", "MI plug-in", "MI M-M", "shuffled avg", "shuffled max", "H(next|prev)"}};
  t.right_align = std::vector<bool>(7, true);
  std::vector<std::vector<std::string>> rows;
  for (const live::LagDependence& d : dependence) {
    rows.push_back({fmt::format("{}", d.lag), fmt::format("{}", d.mi.pairs),
                    fmt::format("{:.5f}", d.mi.plugin_bits),
                    fmt::format("{:.5f}", d.mi.miller_madow_bits),
                    fmt::format("{:.5f}", d.shuffled_plugin_bits),
                    fmt::format("{:.5f}", d.shuffled_plugin_max_bits),
                    fmt::format("{:.4f}", d.mi.conditional_bits)});
  }
  t.groups = {std::move(rows)};
  return t;
}

// Record indices as "3, 17, ..." (the first live::kMaxPrngListed), with how many in all.
std::string IndexList(const std::vector<size_t>& listed, uint64_t total) {
  std::string out;
  for (size_t i : listed) out += fmt::format("{}{}", out.empty() ? "" : ", ", i);
  if (total > listed.size()) out += fmt::format(", ... ({} in all)", total);
  return out;
}

// The per-record and succession checks of the per-CPU generator (live::CheckPrngStates).
std::string PrngText(const live::PrngCheck& c, const kstack::OffsetGeometry& g) {
  std::string out = fmt::format(
      "per-CPU generator (kstack_rnd_state read at sys_exit): offset = (s1^s2^s3^s4) & 0x{:X}{} in "
      "{} of {} records",
      g.mask, g.mask % g.align == 0 ? "" : fmt::format(" rounded up to {}", g.align), c.agreeing,
      c.checked);
  if (c.agreeing < c.checked) {
    out +=
        fmt::format("; disagreeing: records {}", IndexList(c.mismatches, c.checked - c.agreeing));
  }
  out += fmt::format(
      "\nsuccession on each CPU: {} of {} consecutive pairs follow by k LFSR113 steps (k: median "
      "{}, max {}; k - 1 = other syscalls on that CPU)",
      c.following, c.pairs, c.median_steps, c.max_steps);
  if (c.unchanged > 0) {
    out +=
        fmt::format(", {} repeat the state (no draw there in between: a migration)", c.unchanged);
  }
  if (c.broken > 0) {
    out += fmt::format(
        ", {} do not follow within {} steps (records {}: a reseed, another "
        "generator, or another CPU's state)",
        c.broken, live::kMaxPrngSteps, IndexList(c.breaks, c.broken));
  }
  return out + "\n";
}

std::string RenderKernelTable(const KernelReport& r) {
  const Json env = EnvironmentJson(r);
  std::string out =
      fmt::format("kernel {}  randomize_kstack_offset: {} (effective: {})\ndesign: {}\n",
                  JsonText(env["kernel_release"]), JsonText(env["randomize_kstack_offset"]),
                  JsonText(env["effective_kstack_randomization"]), r.design.summary);
  out += fmt::format("source: {}, syscall {}, {} thread(s), {} CPU(s){}\n", r.source, r.syscall,
                     r.threads_seen, r.cpus_seen,
                     r.cpu >= 0 ? fmt::format(" (pinned to CPU {})", r.cpu) : std::string());
  const kstack::OffsetGeometry& g = r.derived.geometry;
  out +=
      fmt::format("offsets: H0 - (local address - task stack base), H0 = {} bytes, spread {} bytes",
                  r.derived.anchor_height, r.derived.spread);
  if (r.derived.state_checked > 0) {
    out +=
        fmt::format("; equal to task_struct.kstack_offset & 0x{:X}{} in {} of {} records", g.mask,
                    g.mask % g.align == 0 ? "" : fmt::format(" rounded up to {}", g.align),
                    r.derived.state_agreeing, r.derived.state_checked);
  }
  out += fmt::format(
      "\ngeometry (read off the heights): {}; ideal {:.4f} bits (Shannon), chi2 against that "
      "ideal distribution\n",
      g.name, analysis::IdealShannonBits(g));
  if (r.prng.checked > 0) out += PrngText(r.prng, g);
  if (!r.prng_unreadable.empty()) out += "note: " + r.prng_unreadable + "\n";
  for (const kstack::OffsetGeometry& alt : r.derived.also_consistent) {
    out += fmt::format(
        "also consistent with these heights (likelihood ratio >= {:g} against the geometry above; "
        "more samples tell them apart): {}\n",
        live::kAlsoConsistentLikelihood, alt.name);
  }
  out += "\n";
  out += RenderGrid(EntropyStatsTable("kernel", {{r.syscall, r.stats}}));
  out +=
      "\nserial dependence: mutual information between offsets i and i+lag of the same thread "
      "on the same CPU, bits (0 = independent; the offsets' entropy = next offset determined)\n";
  out += RenderGrid(DependenceTable(r.dependence));
  out += fmt::format(
      "MI M-M: plug-in with the Miller-Madow bias correction; shuffled: plug-in MI of the same "
      "pairs with the later offset shuffled ({} shuffles) — the estimator's bias under "
      "independence. Dependence shows as MI plug-in well above shuffled max. H(next|prev): "
      "conditional entropy, Miller-Madow corrected.\n",
      kShuffles);
  const uint64_t cells = uint64_t{g.count()} * g.count();
  if (!r.dependence.empty() && r.dependence.front().mi.pairs < 10 * cells) {
    out += fmt::format(
        "note: {} pairs for {} cells is sparse: the plug-in bias is large and Miller-Madow "
        "under-corrects; compare with the shuffled columns (or use --samples {}+)\n",
        r.dependence.front().mi.pairs, cells, 10 * cells);
  }
  if (r.inputs.pairs > 0) {
    out += fmt::format(
        "kernel input (state_(n+1) xor ror32(state_n, 5)): increases in {} of {} consecutive "
        "pairs, median step {:.0f}\n",
        r.inputs.increasing, r.inputs.pairs, r.inputs.median_step);
  }
  return out;
}

// The names of the other geometries the heights fit about as well (DerivedOffsets).
Json AlsoConsistentJson(const live::DerivedOffsets& d) {
  Json names = Json::array();
  for (const kstack::OffsetGeometry& g : d.also_consistent) names.push_back(g.name);
  return names;
}

std::string RenderKernelJson(const KernelReport& r) {
  Json j = Json::object();
  j["mode"] = "kernel";
  j["source"] = r.source;
  j["syscall"] = r.syscall;
  j["cpu"] = r.cpu >= 0 ? Json(r.cpu) : Json(nullptr);
  j["environment"] = EnvironmentJson(r);
  const kstack::OffsetGeometry& g = r.derived.geometry;
  j["offsets"] = {{"anchor_height", r.derived.anchor_height},
                  {"spread", r.derived.spread},
                  {"geometry",
                   {{"name", g.name},
                    {"mask", g.mask},
                    {"align", g.align},
                    {"max", g.max()},
                    {"count", g.count()},
                    {"ideal_shannon_bits", analysis::IdealShannonBits(g)}}},
                  {"also_consistent", AlsoConsistentJson(r.derived)},
                  {"state_checked", r.derived.state_checked},
                  {"state_agreeing", r.derived.state_agreeing}};
  const live::PrngCheck& c = r.prng;
  j["prng_state"] = {{"checked", c.checked},
                     {"agreeing", c.agreeing},
                     {"mismatches", c.mismatches},
                     {"pairs", c.pairs},
                     {"following", c.following},
                     {"unchanged", c.unchanged},
                     {"broken", c.broken},
                     {"breaks", c.breaks},
                     {"median_steps", c.median_steps},
                     {"max_steps", c.max_steps},
                     {"max_steps_searched", live::kMaxPrngSteps}};
  j["entropy"] = EntropyStatsJson(r.stats);
  Json lags = Json::array();
  for (const live::LagDependence& d : r.dependence) {
    lags.push_back({{"lag", d.lag},
                    {"pairs", d.mi.pairs},
                    {"mi_plugin_bits", d.mi.plugin_bits},
                    {"mi_miller_madow_bits", d.mi.miller_madow_bits},
                    {"mi_shuffled_mean_bits", d.shuffled_plugin_bits},
                    {"mi_shuffled_max_bits", d.shuffled_plugin_max_bits},
                    {"shuffles", d.shuffles},
                    {"conditional_entropy_bits", d.mi.conditional_bits}});
  }
  j["serial_dependence"] = std::move(lags);
  j["kernel_input"] = {{"inputs", r.inputs.inputs},
                       {"increasing", r.inputs.increasing},
                       {"pairs", r.inputs.pairs},
                       {"median_step", r.inputs.median_step}};
  return DumpJson(j);
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
                                                      KernelReport* report) {
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
  report->environment = EnvironmentFactsOf(CaptureEnvironment(SysinfoOptionsFromEnvironment()));
  if (!flags.save_records.empty()) {
    if (Status s = WriteFileAtomic(flags.save_records, live::RecordsToCsv(*collected)); !s.ok()) {
      return s.error();
    }
  }
  return collected;
}

// Offsets, their entropy, serial dependence, the inputs' diagnosis and the design inferred.
Status AnalyseRecords(const std::vector<live::LiveRecord>& records, uint64_t lags, bool from_file,
                      KernelReport* report) {
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
  KernelReport report;
  report.syscall = plan->syscall->name;
  report.cpu = plan->cpu;
  auto records = KernelRecords(flags, *plan, &report);
  if (!records.ok()) return Fail(records.error());
  if (Status s = AnalyseRecords(*records, plan->lags, !flags.records.empty(), &report); !s.ok()) {
    return Fail(s.error());
  }
  return PrintStdout(format == "json" ? RenderKernelJson(report) : RenderKernelTable(report));
}

}  // namespace kstacklab::cli
