#include "kstacklab/campaign/runner.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "kstacklab/campaign/engines.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/results/naming.h"
#include "kstacklab/results/result_reader.h"

namespace kstacklab::campaign {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxCountedAttempts = 2;  // a boot is retried once

// Less free space than this on DIR's file system after a boot that was not accepted: the boot's
// output (console log, data channel, written by QEMU, lavacli or ssh, which do not say when a
// write fails) may have been cut short by this host, so the failure is not the boot's.
constexpr uint64_t kMinFreeBytes = uint64_t{1} << 20;

// ENOSPC naming `dir` when its file system has less than kMinFreeBytes left for this user
// (root may use the blocks reserved for it); nullopt otherwise or when it cannot be told.
std::optional<Error> FullFileSystem(const std::string& dir) {
  struct statvfs fs {};
  if (statvfs(dir.c_str(), &fs) != 0) return std::nullopt;
  const uint64_t blocks = geteuid() == 0 ? fs.f_bfree : fs.f_bavail;
  const uint64_t bytes = blocks * fs.f_frsize;
  if (bytes >= kMinFreeBytes) return std::nullopt;
  return SystemError(fmt::format("the file system of '{}' is full ({} KiB free): {}",
                                 EscapeControl(dir), bytes / 1024, strerror(ENOSPC)),
                     ENOSPC);
}

// Stops the campaign for a write this host failed (`cause`, IsHostWriteFault): the attempt in
// progress is recorded "host-fault" (not a try: --resume boots it again), the status is
// "stopped", and the state is saved if it can be. Returns the error the campaign ends with: the
// cause (its errno kept), what became of the state, and which boot a resume redoes.
Error StopForHost(StateWriter& writer, const std::string& dir, CampaignState& state,
                  const RunnerHooks& hooks, const Error& cause) {
  std::string redo;
  for (Boot& b : state.boots) {
    for (Attempt& a : b.attempts) {
      if (a.outcome != AttemptOutcome::kRunning) continue;
      a.outcome = AttemptOutcome::kHostFault;
      a.reason = CapStateText(cause.message, kMaxReasonBytes);
      redo = fmt::format("; boot {} of '{}' is booted again", b.index, b.profile);
    }
  }
  state.status = CampaignStatus::kStopped;
  StopReason why;
  why.kind = StopKind::kHostWriteFault;
  why.text = cause.message;
  state.stop_reason = CapStateText(hooks.stop_text(why), kMaxReasonBytes);
  const Status saved = writer.Save(state);
  Error e = cause;
  e.exit_code = kExitRuntime;
  e.message = saved.ok()
                  ? fmt::format("{}: the campaign stopped, its state kept{}", cause.message, redo)
                  : fmt::format(
                        "{}: the campaign stopped and the state of the last boot was not "
                        "saved ('{}' holds the one before it){}",
                        cause.message, EscapeControl(dir), redo);
  return e;
}

// writer.Save, a host fault stopping the campaign (StopForHost).
Status Save(StateWriter& writer, const std::string& dir, CampaignState& state,
            const RunnerHooks& hooks) {
  Status st = writer.Save(state);
  if (!st.ok() && IsHostWriteFault(st.error())) {
    return StopForHost(writer, dir, state, hooks, st.error());
  }
  return st;
}

// The try number of the next attempt of `b`: one more than its last attempt's (the number in its
// console log's name), so a try whose record made room keeps its logs.
size_t NextTry(const Boot& b) {
  if (b.attempts.empty()) return 1;
  const std::string& c = b.attempts.back().console;
  const size_t at = c.rfind("-try-");
  size_t k = 0;
  for (size_t i = at == std::string::npos ? c.size() : at + 5; i < c.size() && k < 1000000; ++i) {
    if (c[i] < '0' || c[i] > '9') break;
    k = k * 10 + static_cast<size_t>(c[i] - '0');
  }
  return std::max(k, b.attempts.size()) + 1;
}

std::string LastLine(const std::string& text) {
  const std::string t = Trim(text);
  const size_t nl = t.rfind('\n');
  return EscapeControl(t.substr(nl == std::string::npos ? 0 : nl + 1).substr(0, 300));
}

std::string File(const GuestReport& r, const std::string& name) {
  auto it = r.files.find(name);
  return it == r.files.end() ? std::string() : it->second;
}

bool Has(const GuestReport& r, const std::string& name) { return r.files.count(name) != 0; }

// The headline of `entropy --kernel --format json`: what the change buys, per boot.
Json StrengthSummary(const GuestReport& r) {
  if (!Has(r, "entropy.rc")) return nullptr;
  if (Trim(File(r, "entropy.rc")) != "0") {
    return Json{{"error", LastLine(File(r, "entropy.log"))}};
  }
  const Json j = Json::parse(File(r, "entropy.json"), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("entropy")) {
    return Json{{"error", "entropy --kernel printed no JSON report"}};
  }
  const Json& e = j["entropy"];
  const Json env = j.value("environment", Json::object());
  // The geometry the offsets were read against: how many offsets the kernel can apply, the
  // largest (kstack::OffsetGeometry).
  const Json offsets = j.value("offsets", Json::object());
  const Json geometry = offsets.is_object() ? offsets.value("geometry", Json::object()) : Json();
  const bool has_geometry = geometry.is_object();
  return Json{{"samples", e.value("samples", Json())},
              {"distinct", e.value("distinct", Json())},
              {"shannon_bits", e.value("shannon_bits", Json())},
              {"min_entropy_bits", e.value("min_entropy_bits", Json())},
              {"geometry_offsets", has_geometry ? geometry.value("count", Json()) : Json()},
              {"geometry_max_bytes", has_geometry ? geometry.value("max", Json()) : Json()},
              {"design", env.value("design", Json())}};
}

Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) {
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return OkStatus();
    return RuntimeError(fmt::format("'{}' is not a directory", EscapeControl(path)));
  }
  return RuntimeError(fmt::format("cannot create '{}': {}", EscapeControl(path), strerror(errno)));
}

// The result file as the campaign keeps it: the guest's, with how it was booted in run.campaign.
RunResult Stamped(RunResult r, const Boot& boot, const BootFacts& facts, const Engine& engine,
                  const std::string& engine_name, const std::string& cmdline) {
  r.run.campaign = {{"engine", engine_name},           {"accelerator", facts.how},
                    {"accelerator_reason", facts.why}, {"emulated", facts.emulated},
                    {"profile", boot.profile},         {"boot", boot.index},
                    {"attempt", boot.attempts.size()}, {"cmdline", cmdline}};
  if (const std::string model = engine.MachineModel(); !model.empty()) {
    r.run.campaign["machine_model"] = model;
  }
  return r;
}

// kStackErasingNotBuilt when the kernel's configuration says stack erasing is not built (neither
// CONFIG_KSTACK_ERASE nor its older name CONFIG_GCC_PLUGIN_STACKLEAK): the guest's reading of it
// (environment.config.kstack_erase_built), else the profile's config file here. nullopt when
// neither is at hand, or when it is built (the sysctl is then unreadable, not absent).
std::optional<int64_t> StackErasingNotBuilt(const Json& environment, const Profile& profile) {
  std::optional<bool> built;
  if (environment.is_object() && environment.contains("config") &&
      environment["config"].is_object() && environment["config"].contains("kstack_erase_built") &&
      environment["config"]["kstack_erase_built"].is_boolean()) {
    built = environment["config"]["kstack_erase_built"].get<bool>();
  } else if (!profile.config.empty()) {
    if (auto text = ReadWholeFile(profile.config, size_t{64} << 20); text.ok()) {
      built = false;
      for (const std::string& line : Split(*text, '\n')) {
        const std::string t = Trim(line);
        built = *built || t == "CONFIG_KSTACK_ERASE=y" || t == "CONFIG_GCC_PLUGIN_STACKLEAK=y";
      }
    }
  }
  if (built.has_value() && !*built) return kStackErasingNotBuilt;
  return std::nullopt;
}

// environment.kernel.machine when it is a string, else nullptr.
const Json* MachineOf(const Json& environment) {
  if (!environment.is_object() || !environment.contains("kernel")) return nullptr;
  const Json& kernel = environment.at("kernel");
  if (!kernel.is_object() || !kernel.contains("machine")) return nullptr;
  const Json& m = kernel.at("machine");
  return m.is_string() ? &m : nullptr;
}

}  // namespace

bool IsHostWriteFault(const Error& e) {
  switch (e.os_errno) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case EIO:
    case EROFS:
      return true;
    default:
      return false;
  }
}

BootCheck VerifyBoot(const Profile& profile, const GuestReport& report, bool strength) {
  BootCheck c;
  c.release = Trim(File(report, "uname"));
  c.cmdline = Trim(File(report, "cmdline"));
  if (strength) c.strength = StrengthSummary(report);
  if (!report.completed) {
    c.reason = report.failure.empty() ? "the boot did not complete" : report.failure;
    return c;
  }
  if (!Has(report, "uname") || !Has(report, "cmdline")) {
    c.reason = "the guest did not report uname -r and /proc/cmdline";
    return c;
  }
  if (!profile.release.empty() && c.release != profile.release) {
    c.reason = fmt::format("the guest runs kernel {}, not the profile's {}",
                           EscapeControl(c.release), profile.release);
    return c;
  }
  const std::vector<std::string> booted = CmdlineWords(c.cmdline);
  for (const std::string& w : CmdlineWords(profile.cmdline)) {
    if (std::find(booted.begin(), booted.end(), w) == booted.end()) {
      c.reason = fmt::format("/proc/cmdline lacks the profile's '{}' (it is '{}')", w,
                             EscapeControl(c.cmdline));
      return c;
    }
  }
  for (const std::string& line : Split(File(report, "sysctl.log"), '\n')) {
    if (line.rfind("failed ", 0) == 0) {
      c.reason =
          fmt::format("sysctl {} could not be set in the guest", EscapeControl(line.substr(7)));
      return c;
    }
  }
  const std::string rc = Trim(File(report, "run.rc"));
  if (rc != "0") {
    c.reason = fmt::format("kstacklab run exited {} in the guest: {}",
                           rc.empty() ? "without a status" : rc, LastLine(File(report, "run.log")));
    return c;
  }
  auto result = ResultFromJson(File(report, "result.json"), "the guest's result file");
  if (!result.ok()) {
    c.reason = result.error().message;
    return c;
  }
  if (result->label != profile.name) {
    c.reason = fmt::format("the guest's result is labelled '{}', not '{}'",
                           EscapeControl(result->label), profile.name);
    return c;
  }
  // The kernel the guest ran is of the profile's architecture (its capture's `uname -m`).
  if (const Json* m = MachineOf(result->environment);
      m != nullptr && !profile.arch.empty() && m->get<std::string>() != profile.arch) {
    c.reason = fmt::format("the guest's kernel is {} (uname -m), not the profile's {}",
                           EscapeControl(m->get<std::string>()), profile.arch);
    return c;
  }
  const EnvironmentFacts env = EnvironmentFactsOf(result->environment);
  c.effective_kstack_randomization = env.effective_kstack_randomization;
  c.stack_erasing = env.stack_erasing;
  if (!c.stack_erasing) c.stack_erasing = StackErasingNotBuilt(result->environment, profile);
  if (!profile.config.empty() && !c.effective_kstack_randomization) {
    c.reason =
        "the kernel configuration was carried into the guest, yet the effective kstack "
        "randomisation is unknown (see the result's environment.problems)";
    return c;
  }
  c.result = std::move(*result);
  c.accepted = true;
  return c;
}

Expected<TargetStatus> EvaluateTarget(const std::vector<stats::CompareInput>& inputs,
                                      const Target& target, const std::string& baseline) {
  TargetStatus s;
  stats::CompareOptions options;
  options.metrics = {target.metric};
  options.baseline = baseline;
  bool all = true;
  bool any = false;
  for (const std::vector<stats::CompareInput>& part : stats::CompareParts(inputs, baseline)) {
    stats::CompareTable table;
    KSTACKLAB_ASSIGN_OR_RETURN(table, stats::BuildCompareTable(part, options));
    for (const stats::CompareRow& row : table.rows) {
      for (size_t v = 0; v < row.variants.size(); ++v) {
        const stats::CompareCell& cell = row.variants[v];
        if (!cell.present() || !row.baseline.present()) continue;
        any = true;
        TargetRow tr;
        tr.row = ComparisonName(
            CompareRowName(row.key),
            RowResultClass(row.key, row.metric, row.unit, table.options.metrics.size() > 1),
            table.columns[v + 1].name, table.columns[0].name);
        const bool per_boot =
            cell.unit == stats::SampleUnit::kRun && row.baseline.unit == stats::SampleUnit::kRun;
        tr.boots =
            per_boot ? std::min(cell.n, row.baseline.n) : std::min(cell.runs, row.baseline.runs);
        tr.mdc_pct = per_boot ? cell.mdc_pct : stats::kCompareNaN;
        if (per_boot) {
          // kstacklab plan's rule at the run level: boots per side for the target, from the
          // larger of the two sides' coefficients of variation over these boots.
          const double cv = std::max(cell.sd / std::fabs(cell.value),
                                     row.baseline.sd / std::fabs(row.baseline.value));
          tr.needed = stats::RepetitionsNeeded(cv, target.mdc_pct / 100, 0.05, 0.8);
          s.needed = std::max(s.needed, tr.needed);
        }
        const bool ok = std::isfinite(tr.mdc_pct) && tr.mdc_pct <= target.mdc_pct &&
                        tr.boots >= static_cast<int>(target.min_boots);
        all = all && ok;
        if (std::isfinite(tr.mdc_pct) &&
            (!std::isfinite(s.worst_mdc_pct) || tr.mdc_pct > s.worst_mdc_pct)) {
          s.worst_mdc_pct = tr.mdc_pct;
        }
        s.rows.push_back(std::move(tr));
      }
    }
  }
  s.reached = any && all;
  return s;
}

Expected<std::vector<stats::CompareInput>> LoadCampaignResults(const std::string& dir,
                                                               const CampaignState& state) {
  std::vector<stats::CompareInput> inputs;
  for (const Profile& p : state.plan.profiles) {
    for (uint64_t i = 1; i <= state.blocks.size(); ++i) {
      const Boot* b = state.Find(p.name, i);
      if (b == nullptr || b->status != BootStatus::kAccepted) continue;
      const std::string path = dir + "/" + b->file;
      std::string text;
      KSTACKLAB_ASSIGN_OR_RETURN(text, ReadRegularFile(path, ResultLimits::kMaxFileBytes));
      RunResult r;
      KSTACKLAB_ASSIGN_OR_RETURN(r, ResultFromJson(text, path));
      // The campaign labelled this boot's run with its profile; another label is another run's
      // file (copied in, or another campaign's), and would put its numbers in this column.
      if (r.label != p.name) {
        return UsageError(fmt::format(
            "'{}' is labelled '{}', not its profile '{}': it is not this campaign's boot; "
            "restore the campaign's own file",
            EscapeControl(path), EscapeControl(r.label), p.name));
      }
      inputs.push_back({b->file, std::move(r)});
    }
  }
  return inputs;
}

namespace {

// A read-only place is refused as input (exit 2) whichever way it is read-only — the existing
// directory or the parent a new one goes into, permission bits (EACCES) or a read-only mount
// (EROFS): nothing has been done yet, the path given is what cannot work, and the fix is the
// user's (another directory), as for a non-empty one. access(2) says EROFS to root as well.
Status RequireWritable(const std::string& path, const std::string& shown) {
  if (access(path.c_str(), W_OK | X_OK) != 0) {
    return UsageError(fmt::format(
        "campaign directory '{}': '{}' is not writable ({}); give a directory you can write", shown,
        EscapeControl(path), strerror(errno)));
  }
  return OkStatus();
}

}  // namespace

std::string CampaignDirPath(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

Status CheckNewCampaignDir(const std::string& given) {
  const std::string dir = CampaignDirPath(given);
  const std::string shown = EscapeControl(dir);
  KSTACKLAB_RETURN_IF_ERROR(CheckSymlinkOwner(dir));
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) {
    const std::string parent = fs::path(dir).parent_path().string();
    struct stat pst {};
    if (stat(parent.empty() ? "." : parent.c_str(), &pst) != 0 || !S_ISDIR(pst.st_mode)) {
      return UsageError(fmt::format(
          "campaign directory '{}': its parent '{}' is not a directory; create it first", shown,
          EscapeControl(parent)));
    }
    return RequireWritable(parent.empty() ? "." : parent, shown);
  }
  if (S_ISLNK(st.st_mode)) {
    // A link of our own (CheckSymlinkOwner above) to a directory of our own is that directory.
    if (stat(dir.c_str(), &st) != 0) {
      return UsageError(fmt::format(
          "campaign directory '{}' is a symbolic link to nothing ({}); give a directory", shown,
          strerror(errno)));
    }
    if (S_ISDIR(st.st_mode) && st.st_uid != geteuid()) {
      return UsageError(fmt::format(
          "campaign directory '{}' is a symbolic link to another user's directory; give one of "
          "your own",
          shown));
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    return UsageError(
        fmt::format("--dir '{}' exists and is not a directory; give a new directory", shown));
  }
  std::error_code ec;
  if (!fs::is_empty(dir, ec) || ec) {
    return UsageError(fmt::format(
        "--dir '{}' is not an empty directory: `kstacklab campaign --resume {}` continues the "
        "campaign in it, or give a new directory",
        shown, shown));
  }
  return RequireWritable(dir, shown);
}

Expected<CampaignState> CreateCampaign(const std::string& given, const CampaignPlan& plan,
                                       const std::string& source) {
  KSTACKLAB_RETURN_IF_ERROR(CheckNewCampaignDir(given));
  const std::string dir = CampaignDirPath(given);
  CampaignState state;
  state.tool_version = KSTACKLAB_VERSION;
  state.created = UtcTimestamp();
  state.source = source;
  state.plan = plan;
  // The plan and the state's other texts within kMaxPlanJsonBytes: what the runner adds to it is
  // bounded (state.h), so every state it writes is one LoadState reads.
  const size_t plan_bytes = DumpJson(StateToJson(state)).size();
  if (plan_bytes > kMaxPlanJsonBytes - 4 * kMaxReasonBytes) {
    return UsageError(fmt::format(
        "the plan takes {} bytes in a campaign state, more than the {} it may; shorten its "
        "values (sysctls, paths, arguments)",
        plan_bytes, kMaxPlanJsonBytes - 4 * kMaxReasonBytes));
  }
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return RuntimeError(fmt::format("cannot create '{}': {}", EscapeControl(dir), strerror(errno)));
  }
  KSTACKLAB_RETURN_IF_ERROR(SaveState(dir, state));
  return state;
}

Status CheckPlanFilesUnchanged(const CampaignPlan& plan) {
  // URLs (engine lava): the lab fetches them per job.
  if (plan.engine.row().files == ProfileFiles::kUrls) return OkStatus();
  for (const Profile& p : plan.profiles) {
    struct stat st {};
    if (stat(p.kernel.c_str(), &st) != 0) {
      return UsageError(fmt::format("profile '{}': its kernel '{}' is gone: {}", p.name,
                                    EscapeControl(p.kernel), strerror(errno)));
    }
    if (static_cast<uint64_t>(st.st_size) != p.kernel_size || st.st_mtim.tv_sec != p.kernel_mtime) {
      return UsageError(fmt::format(
          "profile '{}': its kernel '{}' changed since the campaign began (size or time); a "
          "campaign compares one kernel per profile: start a new campaign",
          p.name, EscapeControl(p.kernel)));
    }
  }
  return OkStatus();
}

namespace {

// How a boot slot ended.
enum class SlotEnd { kDone, kInterrupted, kMachineLost };

// Runs one boot slot to its end (accepted or failed after the retry), until interrupted, or until
// the engine reports its machine lost (the attempt is recorded failed; the slot stays pending
// while it has a try left, for --resume).
class SlotRunner {
 public:
  SlotRunner(const std::string& dir, StateWriter& writer, CampaignState& state, Engine& engine,
             const std::atomic<bool>& stop, const RunnerHooks& hooks)
      : dir_(dir), writer_(writer), state_(state), engine_(engine), stop_(stop), hooks_(hooks) {}

  Expected<SlotEnd> Run(const Profile& profile, uint64_t index, size_t done, size_t total,
                        double started_s) {
    Boot* b = state_.Find(profile.name, index);
    while (b->status == BootStatus::kPending) {
      if (stop_.load()) return SlotEnd::kInterrupted;
      const size_t k = NextTry(*b);
      GuestReport report;
      KSTACKLAB_ASSIGN_OR_RETURN(report, BootAttempt(profile, index, k, done, total, started_s));
      b = state_.Find(profile.name, index);  // (the vector did not grow; kept for clarity)
      SlotEnd end = SlotEnd::kDone;
      KSTACKLAB_ASSIGN_OR_RETURN(end, RecordAttempt(profile, index, k, report, *b));
      if (end != SlotEnd::kDone) return end;
    }
    return SlotEnd::kDone;
  }

  const std::string& lost_reason() const { return lost_reason_; }

 private:
  // Records attempt `k` of boot `index` as running (saved to the state file before the boot)
  // and boots it.
  Expected<GuestReport> BootAttempt(const Profile& profile, uint64_t index, size_t k, size_t done,
                                    size_t total, double started_s) {
    Boot* b = state_.Find(profile.name, index);
    Attempt a;
    a.started = UtcTimestamp();
    a.outcome = AttemptOutcome::kRunning;
    a.console = fmt::format("{}/boot-{}-try-{}.console.log", profile.name, index, k);
    if (b->attempts.size() >= kMaxAttempts) {
      // The oldest attempt not counted makes room: a boot's record stays bounded however often
      // it is interrupted (its console log stays on disk).
      auto old = std::find_if(b->attempts.begin(), b->attempts.end(),
                              [](const Attempt& x) { return !IsCounted(x); });
      KSTACKLAB_CHECK(old != b->attempts.end());  // at most kMaxCountedAttempts are counted
      b->attempts.erase(old);
    }
    b->attempts.push_back(a);
    KSTACKLAB_RETURN_IF_ERROR(Save(writer_, dir_, state_, hooks_));
    Progress(profile, index, done, total, started_s);
    GuestJob job{&profile,
                 state_.plan.run_args,
                 state_.plan.strength,
                 state_.plan.strength_samples,
                 dir_ + "/" + a.console,
                 index,
                 {}};
    job.note = hooks_.engine_note;
    Status noted = OkStatus();
    job.machine_note = [this, &noted](const std::string& where) {
      state_.machine = CapStateText(where, kMaxReasonBytes);
      if (Status st = writer_.Save(state_); !st.ok() && noted.ok()) noted = st;
    };
    job.facts_note = [this, &noted] {
      const BootFacts facts = engine_.Facts();
      state_.accel = facts.how;
      state_.accel_reason = facts.why;
      if (Status st = writer_.Save(state_); !st.ok() && noted.ok()) noted = st;
    };
    GuestReport report = engine_.Boot(job, stop_);
    if (!noted.ok() && IsHostWriteFault(noted.error())) {
      return StopForHost(writer_, dir_, state_, hooks_, noted.error());
    }
    KSTACKLAB_RETURN_IF_ERROR(noted);
    if (!report.machine.empty()) state_.machine = CapStateText(report.machine, kMaxReasonBytes);
    return report;
  }

  // Records how attempt `k` of boot `b` (the `index`th of the profile) ended, and writes its
  // result when the boot is accepted. Returns kInterrupted or kMachineLost when the slot ends
  // so, else kDone: the attempt is recorded, and the slot is over unless `b` is still pending
  // (failed with a try left).
  Expected<SlotEnd> RecordAttempt(const Profile& profile, uint64_t index, size_t k,
                                  const GuestReport& report, Boot& b) {
    Attempt& at = b.attempts.back();
    at.accel = report.facts.how;
    at.seconds = report.seconds;
    state_.boot_seconds += report.seconds;
    const BootFacts facts = engine_.Facts();
    state_.accel = CapStateText(facts.how, kMaxShortTextBytes);
    state_.accel_reason = CapStateText(facts.why, kMaxReasonBytes);
    state_.machine_model = CapStateText(engine_.MachineModel(), kMaxShortTextBytes);
    if (report.interrupted) {
      at.outcome = AttemptOutcome::kInterrupted;
      at.reason = "the campaign was stopped by a signal; the guest was killed";
      KSTACKLAB_RETURN_IF_ERROR(Save(writer_, dir_, state_, hooks_));
      return SlotEnd::kInterrupted;
    }
    if (report.host_fault) return StopForHost(writer_, dir_, state_, hooks_, *report.host_fault);
    if (Has(report, "run.log")) {
      const std::string log = fmt::format("{}/boot-{}-try-{}.run.log", profile.name, index, k);
      // A copy of what the console log holds too: only this host failing it stops the campaign.
      if (Status st = WriteFileAtomic(dir_ + "/" + log, File(report, "run.log"));
          !st.ok() && IsHostWriteFault(st.error())) {
        return StopForHost(writer_, dir_, state_, hooks_, st.error());
      }
    }
    BootCheck check = VerifyBoot(profile, report, state_.plan.strength);
    if (!check.accepted && !report.machine_lost) {
      if (std::optional<Error> full = FullFileSystem(dir_)) {
        return StopForHost(writer_, dir_, state_, hooks_, *full);
      }
    }
    b.release = CapStateText(check.release, kMaxBootReleaseBytes);
    b.cmdline = CapStateText(check.cmdline, kMaxBootCmdlineBytes);
    b.effective_kstack_randomization = check.effective_kstack_randomization;
    b.stack_erasing = check.stack_erasing;
    b.strength = CapStrength(check.strength);
    check.reason = CapStateText(check.reason, kMaxReasonBytes);
    if (check.accepted) {
      const std::string file = fmt::format("{}/boot-{}.json", profile.name, index);
      // The result file keeps the guest's whole command line; the state keeps its first bytes.
      const RunResult stamped = Stamped(std::move(check.result), b, report.facts, engine_,
                                        state_.plan.engine.name(), check.cmdline);
      if (Status st = WriteFileAtomic(dir_ + "/" + file, ResultToJson(stamped)); !st.ok()) {
        if (IsHostWriteFault(st.error())) {
          return StopForHost(writer_, dir_, state_, hooks_, st.error());
        }
        return st.error();
      }
      at.outcome = AttemptOutcome::kAccepted;
      b.file = file;
      b.status = BootStatus::kAccepted;
      KSTACKLAB_RETURN_IF_ERROR(Save(writer_, dir_, state_, hooks_));
      if (hooks_.record) hooks_.record(stamped, dir_ + "/" + file);
    } else if (report.machine_lost) {
      // Not the profile's fault: recorded, not counted as a try, and the campaign stops.
      at.outcome = AttemptOutcome::kLost;
      at.reason = check.reason;
      lost_reason_ = check.reason;
      if (hooks_.runner_note) {
        hooks_.runner_note(MachineLost{index, profile.name, check.reason, dir_ + "/" + at.console});
      }
      KSTACKLAB_RETURN_IF_ERROR(Save(writer_, dir_, state_, hooks_));
      return SlotEnd::kMachineLost;
    } else {
      at.outcome = AttemptOutcome::kFailed;
      at.reason = check.reason;
      const bool last = b.CountedAttempts() >= kMaxCountedAttempts;
      if (last) b.status = BootStatus::kFailed;
      if (hooks_.runner_note) {
        hooks_.runner_note(
            BootFailed{index, profile.name, !last, check.reason, dir_ + "/" + at.console});
      }
      KSTACKLAB_RETURN_IF_ERROR(Save(writer_, dir_, state_, hooks_));
    }
    return SlotEnd::kDone;
  }

  void Progress(const Profile& profile, uint64_t index, size_t done, size_t total,
                double started_s) {
    if (!hooks_.progress) return;
    BootStarting b{done + 1, total, profile.name, index, started_s, std::nullopt};
    if (done > 0) {
      b.eta_s = started_s / static_cast<double>(done) * static_cast<double>(total - done);
    }
    hooks_.progress(b);
  }

  const std::string& dir_;
  StateWriter& writer_;
  CampaignState& state_;
  Engine& engine_;
  const std::atomic<bool>& stop_;
  const RunnerHooks& hooks_;
  std::string lost_reason_;
};

// After a block: the precision reached, printed and kept in the state. True when the rule stops.
Expected<bool> AfterBlock(const std::string& dir, CampaignState& state, uint64_t block,
                          const RunnerHooks& hooks) {
  const Target& t = *state.plan.target;
  std::vector<stats::CompareInput> inputs;
  KSTACKLAB_ASSIGN_OR_RETURN(inputs, LoadCampaignResults(dir, state));
  if (inputs.empty()) return false;
  auto status = EvaluateTarget(inputs, t, state.plan.profiles[0].name);
  if (!status.ok()) {
    if (hooks.runner_note) hooks.runner_note(TargetNotEvaluable{status.error().message});
    return false;
  }
  // At most kMaxReportRows rows, in table order: those with the largest MDC (unknown first).
  std::vector<const TargetRow*> kept;
  for (const TargetRow& r : status->rows) kept.push_back(&r);
  if (kept.size() > kMaxReportRows) {
    std::stable_sort(kept.begin(), kept.end(), [](const TargetRow* a, const TargetRow* b) {
      const double x = std::isfinite(a->mdc_pct) ? a->mdc_pct : HUGE_VAL;
      const double y = std::isfinite(b->mdc_pct) ? b->mdc_pct : HUGE_VAL;
      return x > y;
    });
    kept.resize(kMaxReportRows);
    std::sort(kept.begin(), kept.end());  // pointers into status->rows: table order
  }
  Json rows = Json::array();
  for (const TargetRow* row : kept) {
    const TargetRow& r = *row;
    rows.push_back({{"row", CapStateText(r.row, kMaxRowBytes)},
                    {"boots", r.boots},
                    {"mdc_pct", std::isfinite(r.mdc_pct) ? Json(RoundSignificant(r.mdc_pct, 4))
                                                         : Json(nullptr)}});
  }
  state.block_reports.push_back(
      {{"block", block},
       {"reached", status->reached},
       {"worst_mdc_pct", std::isfinite(status->worst_mdc_pct)
                             ? Json(RoundSignificant(status->worst_mdc_pct, 4))
                             : Json(nullptr)},
       {"boots_needed", status->needed},
       {"rows", std::move(rows)}});
  if (hooks.runner_note) {
    hooks.runner_note(BlockEvaluated{
        block, t.metric,
        std::isfinite(status->worst_mdc_pct) ? std::optional(status->worst_mdc_pct) : std::nullopt,
        status->rows.size(), t.mdc_pct, status->reached, status->needed});
  }
  return status->reached;
}

// Why the campaign ends after `block`'s boots, by the caller's rule first, then by the target;
// nullopt to go on.
Expected<std::optional<StopReason>> StopAfterBlock(const std::string& dir, CampaignState& state,
                                                   uint64_t block, const RunnerHooks& hooks) {
  if (hooks.after_block) {
    std::string caller;
    KSTACKLAB_ASSIGN_OR_RETURN(caller, hooks.after_block(state, block));
    if (!caller.empty()) {
      return std::optional(StopReason{StopKind::kCaller, 0, 0, 0, std::move(caller)});
    }
  }
  if (state.plan.target) {
    bool reached = false;
    KSTACKLAB_ASSIGN_OR_RETURN(reached, AfterBlock(dir, state, block, hooks));
    if (reached) return std::optional(StopReason{StopKind::kTargetReached, block, 0, 0, {}});
  }
  return std::optional<StopReason>();
}

// RunCampaign's steps, every save through `writer`.
Status RunSteps(const std::string& dir, StateWriter& writer, CampaignState& state, Engine& engine,
                const std::atomic<bool>& stop, const RunnerHooks& hooks) {
  const CampaignPlan& plan = state.plan;
  KSTACKLAB_RETURN_IF_ERROR(MakeDir(dir + "/.work"));
  for (const Profile& p : plan.profiles) KSTACKLAB_RETURN_IF_ERROR(MakeDir(dir + "/" + p.name));
  // An attempt still "running" was cut short by a kill of the campaign itself.
  for (Boot& b : state.boots) {
    for (Attempt& a : b.attempts) {
      if (a.outcome == AttemptOutcome::kRunning) {
        a.outcome = AttemptOutcome::kInterrupted;
        a.reason = "the campaign was killed during this attempt";
      }
    }
  }
  if (!state.accel.empty()) {
    engine.Restore({state.accel, state.accel_reason, plan.engine.row().emulated(state.accel)});
  }
  KSTACKLAB_RETURN_IF_ERROR(engine.Prepare());
  state.status = CampaignStatus::kRunning;
  state.stop_reason.clear();
  KSTACKLAB_RETURN_IF_ERROR(Save(writer, dir, state, hooks));

  const size_t n = plan.profiles.size();
  const size_t total = plan.MaxBlocks() * n;
  size_t done = 0;
  const double seconds_before = state.boot_seconds;
  SlotRunner slots(dir, writer, state, engine, stop, hooks);
  std::optional<StopReason> why;
  for (uint64_t block = 1; block <= plan.MaxBlocks() && !why; ++block) {
    if (block > state.blocks.size()) {
      state.blocks.push_back(BlockOrder(plan.seed, block, n, plan.randomised));
      KSTACKLAB_RETURN_IF_ERROR(Save(writer, dir, state, hooks));
    }
    const std::vector<size_t> order = state.blocks[block - 1];
    for (size_t pi : order) {
      const Profile& profile = plan.profiles[pi];
      if (state.Find(profile.name, block) == nullptr) {
        Boot fresh;
        fresh.profile = profile.name;
        fresh.index = block;
        state.boots.push_back(std::move(fresh));
        KSTACKLAB_RETURN_IF_ERROR(Save(writer, dir, state, hooks));
      }
      if (plan.target && plan.target->budget_s > 0 && state.boot_seconds >= plan.target->budget_s &&
          state.Find(profile.name, block)->status == BootStatus::kPending) {
        why = StopReason{StopKind::kBudgetSpent, 0, 0, state.boot_seconds, {}};
        break;
      }
      SlotEnd end = SlotEnd::kDone;
      KSTACKLAB_ASSIGN_OR_RETURN(
          end, slots.Run(profile, block, done, total, state.boot_seconds - seconds_before));
      if (end == SlotEnd::kInterrupted) {
        state.status = CampaignStatus::kInterrupted;
        return Save(writer, dir, state, hooks);
      }
      if (end == SlotEnd::kMachineLost) {
        // Every later boot needs the machine: stop, and let --resume go on once it answers.
        state.status = CampaignStatus::kStopped;
        state.stop_reason =
            CapStateText(hooks.stop_text({StopKind::kMachineLost, 0, 0, 0, slots.lost_reason()}),
                         kMaxReasonBytes);
        return Save(writer, dir, state, hooks);
      }
      ++done;
    }
    if (!why) {
      KSTACKLAB_ASSIGN_OR_RETURN(why, StopAfterBlock(dir, state, block, hooks));
    }
  }
  if (!why) {
    why = plan.target ? StopReason{StopKind::kMaxBoots, 0, plan.target->max_boots, 0, {}}
                      : StopReason{StopKind::kBootsDone, 0, 0, 0, {}};
  }
  state.status = CampaignStatus::kComplete;
  state.stop_reason = hooks.stop_text(*why);
  return Save(writer, dir, state, hooks);
}

}  // namespace

Status RunCampaign(const std::string& dir, CampaignState& state, Engine& engine,
                   const std::atomic<bool>& stop, const RunnerHooks& hooks) {
  KSTACKLAB_CHECK(hooks.stop_text != nullptr);
  StateWriter writer(dir);
  Status st = RunSteps(dir, writer, state, engine, stop, hooks);
  // Every end but a failure saves the state whole (status no longer "running"). After a failure
  // what was saved is made whole too, so campaign.json alone is the state whenever no campaign
  // runs in DIR (unless one was killed); a host fault stopped it with a whole save already.
  if (!st.ok() && !IsHostWriteFault(st.error())) {
    if (auto saved = LoadState(dir); saved.ok()) (void)SaveState(dir, *saved);
  }
  return st;
}

}  // namespace kstacklab::campaign
