// `kstacklab campaign`: boot each profile as often as the plan (or its target) says, run
// `kstacklab run` in every boot, and print the lists' table across the profiles.
//   kstacklab campaign PLAN.yaml --dir DIR
//   kstacklab campaign --kernel IMG --profile NAME=CMDLINE... --boots N --dir DIR -- RUN-ARGS
//   kstacklab campaign --resume DIR
//   kstacklab campaign --report DIR [--format grid|markdown|csv|json]
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>

#include "campaign_support.h"
#include "cli_util.h"
#include "command.h"
#include "compare_support.h"
#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/engines.h"
#include "kstacklab/campaign/lava.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/campaign/qemu.h"
#include "kstacklab/campaign/runner.h"
#include "kstacklab/campaign/state.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/report/campaign_report.h"
#include "kstacklab/report/fastpath_export.h"
#include "kstacklab/store/store.h"
#include "run_support.h"

namespace kstacklab::cli {
namespace {

namespace fs = std::filesystem;
using campaign::CampaignPlan;
using campaign::CampaignState;

struct CampaignArgs {
  std::vector<std::string> positional;  // PLAN.yaml, or the run arguments after `--`
  std::string dir;
  std::string resume;
  std::string report;
  std::string format = "grid";
  std::string metrics;
  // the shorthand
  std::string kernel;
  std::string initrd;
  std::string config;
  std::vector<std::string> profiles;
  std::string boots;
  std::string target_mdc;
  std::string target_metric = "mean";
  std::string max_boots;
  std::string budget;
  std::string seed;
  std::string order;
  std::string accel;
  std::string cpus;
  std::string memory;
  std::string boot_timeout;
  std::string init_timeout;
  std::string kstacklab;  // the binary that runs in the guest or on the machine
  bool strength = false;
  bool dry_run = false;  // engine lava: write the job files, submit nothing
  std::string fastpath;  // with --report: write a Fastpath plan and results CSV into this dir
  // the store
  std::string store;
  bool no_store = false;
};

// The shorthand's engine flags as an `engine:` section: the engine's own Read takes them, so its
// keys' ranges are written once (qemu.h); a message names the flag, as ParseCount's do.
class FlagSection : public campaign::EngineSection {
 public:
  struct Flag {
    std::string_view key;  // the engine's YAML key
    const char* flag;
    const std::string* value;  // "" = not given
  };
  explicit FlagSection(std::vector<Flag> flags) : flags_(std::move(flags)) {}

  bool Has(std::string_view key) const override {
    const Flag* f = Find(key);
    return f != nullptr && !f->value->empty();
  }
  Expected<std::string> Text(std::string_view key, size_t max) const override {
    const Flag* f = nullptr;
    KSTACKLAB_ASSIGN_OR_RETURN(f, Given(key));
    const std::string& v = *f->value;
    if (v.size() > max) {
      return UsageError(fmt::format("{} is longer than {} bytes", f->flag, max));
    }
    if (auto problem = TextProblem(v)) {
      return UsageError(fmt::format("{} '{}' {}", f->flag, EscapeControl(v), *problem));
    }
    return v;
  }
  Expected<uint64_t> Count(std::string_view key, uint64_t lo, uint64_t hi) const override {
    const Flag* f = nullptr;
    KSTACKLAB_ASSIGN_OR_RETURN(f, Given(key));
    return ParseCount(*f->value, f->flag, lo, hi);
  }
  Expected<double> DurationS(std::string_view key, double lo_s, double hi_s,
                             const char* example) const override {
    const Flag* f = nullptr;
    KSTACKLAB_ASSIGN_OR_RETURN(f, Given(key));
    double ns = 0;
    KSTACKLAB_ASSIGN_OR_RETURN(
        ns, ParseDurationNs(*f->value, f->flag, true, lo_s * 1e9, hi_s * 1e9, example));
    return ns / 1e9;
  }
  // The shorthand has no flag of these kinds: Has() is false for every other key.
  Expected<std::vector<uint64_t>> Counts(std::string_view key, size_t, uint64_t, uint64_t,
                                         std::string_view) const override {
    return NoFlag(key);
  }
  Expected<bool> Bool(std::string_view key) const override { return NoFlag(key); }
  Expected<std::vector<std::string>> Words(std::string_view key, size_t) const override {
    return NoFlag(key);
  }
  Expected<std::string> Path(std::string_view key) const override { return NoFlag(key); }
  Error Bad(const std::string& what) const override { return UsageError(what); }

 private:
  const Flag* Find(std::string_view key) const {
    for (const Flag& f : flags_) {
      if (f.key == key) return &f;
    }
    return nullptr;
  }
  // The flag of `key`, given (an engine reads a key only where Has() said so).
  Expected<const Flag*> Given(std::string_view key) const {
    const Flag* f = Find(key);
    if (f == nullptr || f->value->empty()) return NoFlag(key);
    return f;
  }
  static Error NoFlag(std::string_view key) {
    return UsageError(fmt::format("engine {} has no shorthand flag; give it in a plan file", key));
  }

  std::vector<Flag> flags_;
};

Expected<CampaignPlan> PlanFromShorthand(const CampaignArgs& a) {
  CampaignPlan plan;
  if (a.profiles.empty()) {
    return UsageError(
        "--kernel needs one --profile NAME=CMDLINE or more (the first is the baseline)");
  }
  for (const std::string& spec : a.profiles) {
    auto p = campaign::ParseProfileShorthand(spec, a.kernel);
    if (!p.ok()) return WithFlag("--profile", p.error());
    p->initrd = a.initrd;
    p->config = a.config;
    plan.profiles.push_back(std::move(*p));
  }
  plan.run_args = a.positional;
  if (!a.boots.empty() && !a.target_mdc.empty()) {
    return UsageError("give --boots or --target-mdc, not both");
  }
  if (!a.boots.empty()) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        plan.boots, ParseCount(a.boots, "--boots", 1, campaign::CampaignLimits::kMaxBoots));
  } else if (!a.target_mdc.empty()) {
    campaign::Target t;
    char* end = nullptr;
    t.mdc_pct = std::strtod(a.target_mdc.c_str(), &end);
    if (*end != '\0' ||
        !(t.mdc_pct >= campaign::Target::kMinMdcPct && t.mdc_pct <= campaign::Target::kMaxMdcPct)) {
      return UsageError(fmt::format("--target-mdc '{}' is not a percentage from {:g} to {:g}",
                                    EscapeControl(a.target_mdc), campaign::Target::kMinMdcPct,
                                    campaign::Target::kMaxMdcPct));
    }
    t.metric = a.target_metric;
    if (!a.max_boots.empty()) {
      KSTACKLAB_ASSIGN_OR_RETURN(t.max_boots, ParseCount(a.max_boots, "--max-boots", 2,
                                                         campaign::CampaignLimits::kMaxBoots));
    }
    if (!a.budget.empty()) {
      double ns = 0;
      KSTACKLAB_ASSIGN_OR_RETURN(ns, ParseDurationNs(a.budget, "--budget", true, 1e9,
                                                     campaign::CampaignLimits::kMaxBudgetNs, "6h"));
      t.budget_s = ns / 1e9;
    }
    plan.target = t;
  } else {
    return UsageError("give --boots N (per profile) or --target-mdc PCT");
  }
  if (!a.order.empty()) {
    if (a.order != "randomised" && a.order != "randomized" && a.order != "fixed") {
      return UsageError("--order must be randomised or fixed");
    }
    plan.randomised = a.order != "fixed";
  }
  if (!a.seed.empty()) {
    KSTACKLAB_ASSIGN_OR_RETURN(plan.seed, ParseCount(a.seed, "--seed", 0, UINT64_MAX));
    plan.seed_given = true;
  }
  // The shorthand's engine is the default, qemu; these flags are its settings.
  const FlagSection engine_flags({{"accel", "--accel", &a.accel},
                                  {"cpus", "--cpus", &a.cpus},
                                  {"memory", "--memory", &a.memory},
                                  {"boot_timeout", "--boot-timeout", &a.boot_timeout},
                                  {"init_timeout", "--init-timeout", &a.init_timeout}});
  KSTACKLAB_RETURN_IF_ERROR(campaign::SettingsOf<campaign::QemuSettings>(plan).Read(engine_flags));
  plan.strength = a.strength;
  plan.kstacklab = a.kstacklab;
  return plan;
}

bool ShorthandGiven(const CampaignArgs& a) {
  return !a.profiles.empty() || !a.boots.empty() || !a.target_mdc.empty() || !a.initrd.empty() ||
         !a.config.empty() || !a.max_boots.empty() || !a.budget.empty() || !a.seed.empty() ||
         !a.order.empty() || !a.accel.empty() || !a.cpus.empty() || !a.memory.empty() ||
         !a.boot_timeout.empty() || !a.init_timeout.empty() || !a.kstacklab.empty() || a.strength;
}

// --report DIR --fastpath OUT: OUT/plan.yaml and OUT/results.csv, both or neither, neither
// replacing a file: both names are checked before either file is written, each is written
// atomically (temp + rename, never replacing), and a failed second write removes the first.
int ExportFastpath(const std::string& dir, const CampaignState& state, const std::string& out) {
  auto inputs = campaign::LoadCampaignResults(dir, state);
  if (!inputs.ok()) return Fail(inputs.error());
  std::error_code ec;
  if (Status st = CheckSymlinkOwner(out); !st.ok()) return Fail(st.error());
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out, ec)) {
    return Fail(UsageError(
        fmt::format("--fastpath '{}' is not a directory that can be created", EscapeControl(out))));
  }
  const std::pair<std::string, std::string> files[] = {
      {"plan.yaml", report::FastpathPlanYaml(state, *inputs)},
      {"results.csv", report::FastpathResultsCsv(state, *inputs)}};
  for (const auto& [name, text] : files) {
    struct stat st {};
    const std::string path = fmt::format("{}/{}", out, name);
    if (lstat(path.c_str(), &st) == 0 || errno != ENOENT) {
      return Fail(UsageError(fmt::format("--fastpath: '{}/{}' exists; give a new directory",
                                         EscapeControl(out), name)));
    }
  }
  std::vector<std::string> written;
  for (const auto& [name, text] : files) {
    const std::string path = fmt::format("{}/{}", out, name);
    bool exists = false;
    if (Status st = WriteNewFile(path, text, &exists); !st.ok()) {
      for (const std::string& w : written) unlink(w.c_str());
      if (exists) {
        return Fail(UsageError(fmt::format("--fastpath: '{}/{}' exists; give a new directory",
                                           EscapeControl(out), name)));
      }
      return Fail(st.error());
    }
    written.push_back(path);
  }
  return PrintStdout(fmt::format("{}/plan.yaml\n{}/results.csv\n", out, out));
}

int Report(const std::string& dir, const CampaignState& state, const CampaignArgs& a) {
  auto format = report::ParseCompareFormat(a.format);
  if (!format.ok()) return Fail(WithFlag("--format", format.error()));
  auto inputs = campaign::LoadCampaignResults(dir, state);
  if (!inputs.ok()) return Fail(inputs.error());
  std::vector<stats::CompareTable> tables;
  std::optional<campaign::TargetStatus> precision;
  if (!inputs->empty()) {
    stats::CompareOptions options;
    options.baseline = state.plan.profiles[0].name;
    if (!a.metrics.empty()) {
      auto metrics = stats::ParseMetricList(a.metrics);
      if (!metrics.ok()) return Fail(WithFlag("--metrics", metrics.error()));
      options.metrics = *metrics;
    }
    // Fewer than two profiles with an accepted boot: each compared within itself (its
    // variants), as `compare` does one label, with no profile baseline.
    std::set<std::string> labels;
    for (const stats::CompareInput& in : *inputs) labels.insert(in.run.label);
    if (labels.size() < 2 || labels.count(options.baseline) == 0) options.baseline.clear();
    auto built = BuildCompareTables(*inputs, options);
    if (!built.ok()) return Fail(built.error());
    tables = std::move(*built);
    campaign::Target t = state.plan.target.value_or(campaign::Target{"mean", 1e9});
    if (labels.size() >= 2 && !options.baseline.empty()) {
      auto p = campaign::EvaluateTarget(*inputs, t, options.baseline);
      if (p.ok()) precision = std::move(*p);
    }
  }
  return PrintStdout(report::RenderCampaignReport(state, tables, precision, *format));
}

// Checks the plan and the run arguments, then the engine made from the checked plan (its
// architecture, absolute paths, the kstacklab it runs); everything before boot 1.
Status Prepare(CampaignPlan& plan, const std::string& dir) {
  KSTACKLAB_RETURN_IF_ERROR(campaign::CheckPlan(plan));
  KSTACKLAB_RETURN_IF_ERROR(CheckRunArguments(plan.run_args));
  return campaign::MakeEngine(plan, dir + "/.work", campaign::GuestBinary(plan, SelfPath()))
      ->Check();
}

// --dry-run (engine lava): the plan checked as for a campaign, then one job file per boot in
// DIR/jobs; nothing submitted, no campaign state.
int DryRun(CampaignPlan& plan, const std::string& dir) {
  if (plan.engine.Find<campaign::LavaSettings>() == nullptr) {
    return Fail(UsageError("--dry-run writes LAVA job files: it needs engine: {name: lava}"));
  }
  if (Status st = campaign::CheckPlan(plan); !st.ok()) return Fail(st.error());
  if (Status st = CheckRunArguments(plan.run_args); !st.ok()) return Fail(st.error());
  if (Status st = campaign::CheckNewCampaignDir(dir); !st.ok()) return Fail(st.error());
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return Fail(
        RuntimeError(fmt::format("cannot create '{}': {}", EscapeControl(dir), ec.message())));
  auto paths = campaign::WriteLavaJobs(dir, plan);
  if (!paths.ok()) return Fail(paths.error());
  std::string out;
  for (const std::string& p : *paths) out += p + "\n";
  return PrintStdout(out);
}

// The report and the exit of a campaign that has ended, the same for the run that ended it and
// for every later --resume of it: 1 when a boot failed after its retry, else the report's own.
int Finish(const std::string& dir, const CampaignState& state, const CampaignArgs& a) {
  const int printed = Report(dir, state, a);
  size_t failed = 0;
  for (const campaign::Boot& b : state.boots) failed += b.status == campaign::BootStatus::kFailed;
  if (failed > 0) {
    return Fail(RuntimeError(fmt::format(
        "{} boot(s) failed after a retry; each is in the report with its console log under {}",
        failed, dir)));
  }
  return printed;
}

// Runs the campaign in `dir`, whose lock the caller holds.
int Drive(const std::string& dir, CampaignState& state, campaign::Engine& engine,
          const CampaignArgs& a) {
  StatusLine status;
  campaign::RunnerHooks hooks = TerminalHooks("campaign", status);
  const std::string store = StorePath(a.store);
  if (!a.no_store) {
    hooks.record = [store](const RunResult& r, const std::string& path) {
      // A boot's result not recorded does not stop the campaign: its file is in the campaign
      // directory, and the warning says how to add it.
      if (auto id = RecordRunInStore(r, store, path); !id.ok()) Warn(id.error().message);
    };
  }
  StopSignals signals;
  const Status st = campaign::RunCampaign(dir, state, engine, g_campaign_stop, hooks);
  status.Clear();
  if (!st.ok() && campaign::IsHostWriteFault(st.error())) {
    // Not a boot's failure: the campaign stopped before it could count one (status "stopped").
    return Fail(RuntimeError(fmt::format(
        "{}; free space on the file system of {} (df -h {}), then `kstacklab campaign --resume "
        "{}` continues",
        st.error().message, dir, dir, dir)));
  }
  if (!st.ok()) return Fail(st.error());
  if (state.status == campaign::CampaignStatus::kInterrupted) {
    Warn(
        fmt::format("interrupted: the guest was killed and the state kept; `kstacklab campaign "
                    "--resume {}` continues",
                    dir));
    return 128 + (g_campaign_signal != 0 ? g_campaign_signal : SIGINT);
  }
  if (state.status == campaign::CampaignStatus::kStopped) {
    (void)Report(dir, state, a);
    return Fail(RuntimeError(fmt::format(
        "{}; the state is kept: `kstacklab campaign --resume {}` continues once the machine "
        "answers again",
        state.stop_reason, dir)));
  }
  return Finish(dir, state, a);
}

// --resume DIR: the lock first, then the state read under it. A state read before the lock
// could be one a running campaign replaces before it ends: continued, it would redo a finished
// boot. The stored plan is then checked as a new plan is (campaign.json may come from anyone).
int Resume(const std::string& dir, const CampaignArgs& a) {
  struct stat st {};
  if (lstat((dir + "/" + campaign::kStateFile).c_str(), &st) != 0) {
    return Fail(UsageError(fmt::format("--resume '{}' holds no {}: give a campaign's directory",
                                       EscapeControl(dir), campaign::kStateFile)));
  }
  DirLock lock;
  if (Status taken = lock.Take(dir); !taken.ok()) return Fail(taken.error());
  std::string note;
  auto state = campaign::LoadState(dir, &note);
  if (!state.ok()) return Fail(state.error());
  if (!note.empty()) Warn(note);
  if (state->status == campaign::CampaignStatus::kComplete) {
    Warn("the campaign is already complete; its report follows");
    return Finish(dir, *state, a);
  }
  if (Status checked = campaign::CheckPlan(state->plan); !checked.ok()) {
    return Fail(checked.error());
  }
  if (Status args = CheckRunArguments(state->plan.run_args); !args.ok()) {
    return Fail(args.error());
  }
  if (Status same = campaign::CheckPlanFilesUnchanged(state->plan); !same.ok()) {
    return Fail(same.error());
  }
  auto engine = campaign::MakeEngine(state->plan, dir + "/.work",
                                     campaign::GuestBinary(state->plan, SelfPath()));
  if (Status ready = engine->Check(); !ready.ok()) return Fail(ready.error());
  if (!a.no_store) {
    if (Status store = store::CheckStoreLocation(StorePath(a.store)); !store.ok()) {
      return Fail(store.error());
    }
  }
  return Drive(dir, *state, *engine, a);
}

int Execute(CampaignArgs& a) {
  const int modes = !a.resume.empty() + !a.report.empty() + !a.dir.empty();
  if (modes != 1) {
    return Fail(UsageError("give one of --dir DIR (a new campaign), --resume DIR or --report DIR"));
  }
  if (!a.fastpath.empty() && a.report.empty()) {
    return Fail(UsageError("--fastpath OUT goes with --report DIR (a campaign's directory)"));
  }
  if (!a.report.empty() || !a.resume.empty()) {
    const std::string dir = campaign::CampaignDirPath(!a.report.empty() ? a.report : a.resume);
    if (!a.positional.empty() || ShorthandGiven(a) || !a.kernel.empty() || a.dry_run) {
      return Fail(
          UsageError("--resume and --report take the plan from DIR/campaign.json; give no "
                     "plan file or profile flags"));
    }
    if (!a.resume.empty()) return Resume(dir, a);
    std::string note;
    auto state = campaign::LoadState(dir, &note);
    if (!state.ok()) return Fail(state.error());
    if (!note.empty()) Warn(note);
    if (!a.fastpath.empty()) return ExportFastpath(dir, *state, a.fastpath);
    return Report(dir, *state, a);
  }
  Expected<CampaignPlan> plan = UsageError("");
  std::string source;
  if (!a.kernel.empty()) {
    plan = PlanFromShorthand(a);
    source = "command line";
  } else {
    if (ShorthandGiven(a)) {
      return Fail(
          UsageError("--profile, --boots and the other shorthand flags go with --kernel; "
                     "a plan file carries them itself"));
    }
    if (a.positional.size() != 1) {
      return Fail(
          UsageError("give a plan file (kstacklab campaign PLAN.yaml --dir DIR) or "
                     "--kernel IMG --profile NAME=CMDLINE ... -- RUN-ARGS"));
    }
    source = a.positional[0];
    auto text = ReadRegularFile(source, campaign::CampaignLimits::kMaxFileBytes);
    if (!text.ok()) return Fail(text.error());
    std::error_code ec;
    const std::string base = fs::absolute(source, ec).parent_path().string();
    plan = campaign::ParsePlanYaml(*text, source, base);
  }
  if (!plan.ok()) return Fail(plan.error());
  if (!plan->seed_given) {
    plan->seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }
  std::error_code ec;
  const std::string dir =
      campaign::CampaignDirPath(fs::absolute(a.dir, ec).lexically_normal().string());
  if (a.dry_run) return DryRun(*plan, dir);
  if (Status st = Prepare(*plan, dir); !st.ok()) return Fail(st.error());
  if (!a.no_store) {
    if (Status st = store::CheckStoreLocation(StorePath(a.store)); !st.ok()) {
      Error e = st.error();
      e.message += " (--store FILE, or --no-store)";
      return Fail(e);
    }
  }
  auto state = campaign::CreateCampaign(dir, *plan, source);
  if (!state.ok()) return Fail(state.error());
  DirLock lock;
  if (Status st = lock.Take(dir); !st.ok()) return Fail(st.error());
  auto engine = campaign::MakeEngine(state->plan, dir + "/.work",
                                     campaign::GuestBinary(state->plan, SelfPath()));
  return Drive(dir, *state, *engine, a);
}

}  // namespace

Runner SetupCampaignCommand(CLI::App& sub) {
  auto a = std::make_shared<CampaignArgs>();
  sub.add_option("plan", a->positional,
                 "PLAN.yaml; with --kernel, the `kstacklab run` arguments after `--`");
  sub.add_option("--dir", a->dir, "New (or empty) campaign directory");
  sub.add_option("--resume", a->resume, "Continue the campaign in DIR");
  sub.add_option("--report", a->report, "Print the report of the campaign in DIR");
  sub.add_option("--format", a->format, "Report format: grid, markdown, csv or json")
      ->capture_default_str();
  sub.add_option("--metrics", a->metrics, "Report metrics (default mean,p99,p99.9)");
  sub.add_option("--kernel", a->kernel,
                 "Shorthand: the kernel image every --profile boots (x86-64 bzImage, arm64 Image "
                 "or Image.gz)");
  sub.add_option("--initrd", a->initrd, "Shorthand: an extra initramfs for every profile");
  sub.add_option("--config", a->config,
                 "Shorthand: the kernel's .config (default: config-RELEASE beside the image)");
  sub.add_option("--profile", a->profiles,
                 "Shorthand: NAME=CMDLINE (repeatable; split at the first '='; first = baseline)");
  sub.add_option("--boots", a->boots, "Shorthand: boots per profile");
  sub.add_option("--target-mdc", a->target_mdc,
                 "Shorthand: boot until every row's MDC is at most PCT %");
  sub.add_option("--target-metric", a->target_metric, "Shorthand: the target's metric")
      ->capture_default_str();
  sub.add_option("--max-boots", a->max_boots, "Shorthand: the target's most boots per profile");
  sub.add_option("--budget", a->budget, "Shorthand: the target's time budget (e.g. 6h)");
  sub.add_option("--seed", a->seed, "Shorthand: seed of the randomised block order");
  sub.add_option("--order", a->order, "Shorthand: randomised (default) or fixed blocks");
  sub.add_option("--accel", a->accel, "Shorthand: auto (default), kvm or tcg");
  sub.add_option("--cpus", a->cpus, "Shorthand: guest CPUs (default 2)");
  sub.add_option("--memory", a->memory, "Shorthand: guest memory (default 2G)");
  sub.add_option("--boot-timeout", a->boot_timeout, "Shorthand: a boot's deadline (default 30min)");
  sub.add_option("--init-timeout", a->init_timeout,
                 "Shorthand: the guest's init must start by then (default 2min)");
  sub.add_option("--kstacklab", a->kstacklab,
                 "Shorthand: the kstacklab binary run in the guest (default: this one, where the "
                 "image's architecture is its own)");
  sub.add_option("--fastpath", a->fastpath,
                 "With --report DIR: write the campaign as a Fastpath plan and results CSV "
                 "(OUT/plan.yaml, OUT/results.csv)");
  sub.add_flag("--dry-run", a->dry_run,
               "Engine lava: write one LAVA job file per boot to DIR/jobs and submit nothing");
  sub.add_flag("--strength", a->strength,
               "Also run `entropy --kernel` in every boot (offsets, bits, design)");
  CLI::Option* store = AddStoreOption(sub, &a->store);
  sub.add_flag("--no-store", a->no_store, "Do not record the boots' results in the store")
      ->excludes(store);
  return [a] { return Execute(*a); };
}

}  // namespace kstacklab::cli
