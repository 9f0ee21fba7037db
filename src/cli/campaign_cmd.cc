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

#include <algorithm>
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
#include "kstacklab/campaign/plan_fields.h"
#include "kstacklab/campaign/runner.h"
#include "kstacklab/campaign/state.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/report/campaign_progress.h"
#include "kstacklab/report/campaign_report.h"
#include "kstacklab/report/fastpath_export.h"
#include "kstacklab/store/store.h"
#include "run_support.h"

namespace kstacklab::cli {
namespace {

namespace fs = std::filesystem;
using campaign::CampaignPlan;
using campaign::CampaignState;

// The engine the shorthand boots on: the table's first (qemu).
const campaign::EngineRow& ShorthandEngine() { return campaign::Engines().front(); }

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
  // The plan's fields and the default engine's keys as flags: one value per row of
  // campaign::PlanFields() and of the engine's shorthand, "" where not given.
  std::vector<std::string> fields = std::vector<std::string>(campaign::PlanFields().size());
  std::vector<std::string> engine = std::vector<std::string>(ShorthandEngine().shorthand.size());
  bool dry_run = false;  // engine lava: write the job files, submit nothing
  std::string fastpath;  // with --report: write a Fastpath plan and results CSV into this dir
  // the store
  std::string store;
  bool no_store = false;
};

// The shorthand's flags of one part of the plan (or of its engine's keys) as that part's section:
// the part's rows (or the engine's Read) take them, so a key's range is written once; a message
// names the flag, as ParseCount's do.
class FlagSection : public campaign::PlanSection {
 public:
  struct Flag {
    std::string_view key;  // the plan file's key
    const char* flag;
    const std::string* value;  // "" = not given; a switch given is "true"
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
  Expected<double> Number(std::string_view key, double lo, double hi,
                          const char* example) const override {
    const Flag* f = nullptr;
    KSTACKLAB_ASSIGN_OR_RETURN(f, Given(key));
    return ParseNumber(*f->value, f->flag, example, lo, hi);
  }
  Expected<double> DurationS(std::string_view key, double lo_s, double hi_s,
                             const char* example) const override {
    const Flag* f = nullptr;
    KSTACKLAB_ASSIGN_OR_RETURN(f, Given(key));
    double ns = 0;
    KSTACKLAB_ASSIGN_OR_RETURN(
        ns, ParseDurationNs(*f->value, f->flag, lo_s * 1e9, hi_s * 1e9, example));
    return ns / 1e9;
  }
  // A switch: given or not.
  Expected<bool> Bool(std::string_view key) const override {
    const Flag* f = nullptr;
    KSTACKLAB_ASSIGN_OR_RETURN(f, Given(key));
    return *f->value == "true";
  }
  // As given: CheckPlan makes a relative path absolute from the working directory.
  Expected<std::string> Path(std::string_view key) const override {
    return Text(key, campaign::CampaignLimits::kMaxTextBytes);
  }
  // The shorthand has no flag of these kinds: Has() is false for every other key.
  Expected<std::vector<uint64_t>> Counts(std::string_view key, size_t, uint64_t, uint64_t,
                                         std::string_view) const override {
    return NoFlag(key);
  }
  Expected<std::vector<std::string>> Words(std::string_view key, size_t) const override {
    return NoFlag(key);
  }
  Error Bad(const std::string& what) const override { return UsageError(what); }
  std::string Name(std::string_view key) const override {
    const Flag* f = Find(key);
    return f != nullptr ? f->flag : std::string(key);
  }

 private:
  const Flag* Find(std::string_view key) const {
    for (const Flag& f : flags_) {
      if (f.key == key) return &f;
    }
    return nullptr;
  }
  // The flag of `key`, given (a reader reads a key only where Has() said so).
  Expected<const Flag*> Given(std::string_view key) const {
    const Flag* f = Find(key);
    if (f == nullptr || f->value->empty()) return NoFlag(key);
    return f;
  }
  static Error NoFlag(std::string_view key) {
    return UsageError(fmt::format("{} has no shorthand flag; give it in a plan file", key));
  }

  std::vector<Flag> flags_;
};

// The flags of the plan's fields of `part`.
FlagSection PartFlags(const CampaignArgs& a, campaign::PlanPart part) {
  std::vector<FlagSection::Flag> flags;
  const auto fields = campaign::PlanFields();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].part == part && fields[i].flag != nullptr) {
      flags.push_back({fields[i].key, fields[i].flag, &a.fields[i]});
    }
  }
  return FlagSection(std::move(flags));
}

// The field of `part` that `part` needs (the target's mdc_pct): its flag makes the part.
const campaign::PlanField* RequiredField(campaign::PlanPart part) {
  for (const campaign::PlanField& f : campaign::PlanFields()) {
    if (f.part == part && f.required) return &f;
  }
  return nullptr;
}

// The value given for the field `f` ("" = none).
const std::string& FieldValue(const CampaignArgs& a, const campaign::PlanField& f) {
  return a.fields[static_cast<size_t>(&f - campaign::PlanFields().data())];
}

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
  using campaign::PlanPart;
  const campaign::PlanField* mdc = RequiredField(PlanPart::kTarget);
  const campaign::PlanField* boots = nullptr;
  for (const campaign::PlanField& f : campaign::PlanFields()) {
    if (f.part == PlanPart::kPlan && std::string_view(f.key) == "boots") boots = &f;
  }
  KSTACKLAB_CHECK(mdc != nullptr && boots != nullptr);
  const bool target = !FieldValue(a, *mdc).empty();
  if (!FieldValue(a, *boots).empty() && target) {
    return UsageError(fmt::format("give {} or {}, not both", boots->flag, mdc->flag));
  }
  if (FieldValue(a, *boots).empty() && !target) {
    return UsageError(fmt::format("give {} N (per profile) or {} PCT", boots->flag, mdc->flag));
  }
  for (const campaign::PlanField& f : campaign::PlanFields()) {
    if (f.part == PlanPart::kTarget && !target && !FieldValue(a, f).empty()) {
      return UsageError(fmt::format("{} is the target's; give {} PCT with it (or leave it out)",
                                    f.flag, mdc->flag));
    }
  }
  KSTACKLAB_RETURN_IF_ERROR(ReadPlanPart(PlanPart::kPlan, PartFlags(a, PlanPart::kPlan), plan));
  if (target) {
    plan.target = campaign::Target{};
    KSTACKLAB_RETURN_IF_ERROR(
        ReadPlanPart(PlanPart::kTarget, PartFlags(a, PlanPart::kTarget), plan));
  }
  KSTACKLAB_RETURN_IF_ERROR(ReadPlanPart(PlanPart::kOrder, PartFlags(a, PlanPart::kOrder), plan));
  // The shorthand's engine is the table's first; these flags are its settings.
  const campaign::EngineRow& engine = ShorthandEngine();
  std::vector<FlagSection::Flag> flags;
  for (size_t i = 0; i < engine.shorthand.size(); ++i) {
    flags.push_back({engine.shorthand[i].key, engine.shorthand[i].flag, &a.engine[i]});
  }
  KSTACKLAB_RETURN_IF_ERROR(engine.read(FlagSection(std::move(flags)), plan.engine.settings()));
  return plan;
}

bool ShorthandGiven(const CampaignArgs& a) {
  auto given = [](const std::string& v) { return !v.empty(); };
  return !a.profiles.empty() || !a.initrd.empty() || !a.config.empty() ||
         std::any_of(a.fields.begin(), a.fields.end(), given) ||
         std::any_of(a.engine.begin(), a.engine.end(), given);
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
  std::optional<campaign::JournalLineIgnored> ignored;
  auto state = campaign::LoadState(dir, &ignored);
  if (!state.ok()) return Fail(state.error());
  if (ignored) Warn(report::JournalLineIgnoredText(*ignored));
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
    std::optional<campaign::JournalLineIgnored> ignored;
    auto state = campaign::LoadState(dir, &ignored);
    if (!state.ok()) return Fail(state.error());
    if (ignored) Warn(report::JournalLineIgnoredText(*ignored));
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
  const auto fields = campaign::PlanFields();
  for (size_t i = 0; i < fields.size(); ++i) {
    const campaign::PlanField& f = fields[i];
    if (f.flag == nullptr) continue;
    std::string help = f.help;
    if (const std::string d = campaign::FieldDefault(f);
        !d.empty() && help.find("default") == std::string::npos) {
      help += fmt::format(" (default {})", d);
    }
    if (f.kind == campaign::FieldKind::kBool) {
      sub.add_flag_callback(
          f.flag, [a, i] { a->fields[i] = "true"; }, help);
      continue;
    }
    CLI::Option* o = sub.add_option(f.flag, a->fields[i], help);
    if (f.value_name != nullptr) o->type_name(f.value_name);
  }
  const campaign::EngineRow& engine = ShorthandEngine();
  for (size_t i = 0; i < engine.shorthand.size(); ++i) {
    const campaign::ShorthandFlag& f = engine.shorthand[i];
    CLI::Option* o = sub.add_option(f.flag, a->engine[i], f.help);
    if (f.value_name != nullptr) o->type_name(f.value_name);
  }
  sub.add_option("--fastpath", a->fastpath,
                 "With --report DIR: write the campaign as a Fastpath plan and results CSV "
                 "(OUT/plan.yaml, OUT/results.csv)");
  sub.add_flag("--dry-run", a->dry_run,
               "Engine lava: write one LAVA job file per boot to DIR/jobs and submit nothing");
  CLI::Option* store = AddStoreOption(sub, &a->store);
  sub.add_flag("--no-store", a->no_store, "Do not record the boots' results in the store")
      ->excludes(store);
  return [a] { return Execute(*a); };
}

}  // namespace kstacklab::cli
