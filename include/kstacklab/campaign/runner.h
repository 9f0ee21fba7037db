// The campaign runner: boots every profile in the planned order through an engine, accepts a boot
// only after verifying what the guest reports, keeps every boot's files and state on disk, and
// stops when the boots are done, the target precision is reached, or the budget is spent.
//
// Directory layout (DIR): campaign.json (state.h); PROFILE/boot-N.json (the result file of an
// accepted boot, labelled PROFILE); PROFILE/boot-N-try-K.console.log (every attempt's console);
// PROFILE/boot-N-try-K.run.log (the guest's `kstacklab run` output); .work/ (the engine's
// scratch files).
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/engine_events.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/campaign/runner_events.h"
#include "kstacklab/campaign/state.h"
#include "kstacklab/common/error.h"
#include "kstacklab/results/results.h"
#include "kstacklab/stats/compare.h"

namespace kstacklab::campaign {

// What a boot's guest report amounts to, before it counts.
struct BootCheck {
  bool accepted = false;
  std::string reason;  // why not accepted
  RunResult result;    // the parsed result file (accepted only)
  std::string release;
  std::string cmdline;
  std::optional<bool> effective_kstack_randomization;  // from the result's environment
  // kernel.stack_erasing: 0 or 1 as the guest read it; kStackErasingNotBuilt when the kernel has
  // no such sysctl and its configuration (carried into the guest, or the profile's config file)
  // has no stack erasing built; nullopt when unknown.
  std::optional<int64_t> stack_erasing;
  Json strength = nullptr;
};
inline constexpr int64_t kStackErasingNotBuilt = -1;

// Accepts a boot only if the guest completed, runs the profile's kernel (its release) with every
// word of the profile's command line, set every sysctl, `kstacklab run` succeeded with a valid
// result file labelled with the profile, and the effective kstack randomisation is known when
// the profile's kernel configuration was carried into the guest.
BootCheck VerifyBoot(const Profile& profile, const GuestReport& report, bool strength);

// The precision rule after a block: the MDC of `target.metric` of every row (each non-baseline
// profile against the baseline, samples = per-boot values) and whether every row reached
// target.mdc_pct with at least target.min_boots boots per profile. `needed` is the boots per
// profile the boots' run-level variance says the worst row needs (stats::RepetitionsNeeded, the
// rule `kstacklab plan` applies per level, at alpha 0.05 and power 0.8), 0 if not computable.
struct TargetRow {
  std::string row;  // "syscall/getpid [raw] mean: on vs off"
  double mdc_pct = stats::kCompareNaN;
  int boots = 0;  // the fewer of the two sides
  size_t needed = 0;
};
struct TargetStatus {
  bool reached = false;
  double worst_mdc_pct = stats::kCompareNaN;
  size_t needed = 0;
  std::vector<TargetRow> rows;
};
Expected<TargetStatus> EvaluateTarget(const std::vector<stats::CompareInput>& inputs,
                                      const Target& target, const std::string& baseline);

// The accepted boots' result files, loaded, in profile order then boot order.
Expected<std::vector<stats::CompareInput>> LoadCampaignResults(const std::string& dir,
                                                               const CampaignState& state);

struct RunnerHooks {
  // A boot starting (boot i of n, profile, elapsed, ETA), for a status line on a TTY.
  std::function<void(const BootStarting&)> progress;
  // A runner's note always worth printing (a failed boot, the MDC after a block), for stderr.
  std::function<void(const RunnerNote&)> runner_note;
  // An engine's note while a boot goes on (a log cut to its cap, a machine waited for), for
  // stderr: the boot's GuestJob::note.
  std::function<void(const EngineNote&)> engine_note;
  // Required: the words of a stop reason, kept as the state's stop_reason
  // (CampaignStopText, report/campaign_progress.h).
  std::function<std::string(const StopReason&)> stop_text;
  // An accepted boot's result, written at `path`, for the results store.
  std::function<void(const RunResult&, const std::string& path)> record;
  // A caller's stopping rule, read after each block (kstacklab bisect): the stop reason when the
  // campaign should end after this block, "" to go on. Called again for every block on a resume.
  std::function<Expected<std::string>(const CampaignState&, uint64_t block)> after_block;
};

// `dir` without trailing slashes ("d/" and "d" name one directory).
std::string CampaignDirPath(std::string dir);

// Whether `dir` can become a new campaign's directory, without touching it: a new path in an
// existing writable directory, or an empty writable directory (a symbolic link that passes
// CheckSymlinkOwner to a directory of this user's counts as that directory). Anything else ->
// UsageError naming the fix (a read-only directory or mount included).
Status CheckNewCampaignDir(const std::string& dir);

// A new campaign directory: `dir` must pass CheckNewCampaignDir (else a UsageError: use
// --resume for a used one). Creates it and DIR/campaign.json with the plan; nothing else.
Expected<CampaignState> CreateCampaign(const std::string& dir, const CampaignPlan& plan,
                                       const std::string& source);

// A campaign's files are still the ones it started with (each kernel's size and mtime): a resume
// must not mix kernels under one profile. UsageError naming the profile.
Status CheckPlanFilesUnchanged(const CampaignPlan& plan);

// Runs (or resumes) the campaign until it ends, `stop` is raised, or the engine loses its machine.
// Returns the state as written; state.status is "complete", "interrupted" or "stopped"
// (stop_reason says why, in hooks.stop_text's words; --resume continues). Runtime errors: the
// directory cannot be written. hooks.stop_text must be set.
Status RunCampaign(const std::string& dir, CampaignState& state, Engine& engine,
                   const std::atomic<bool>& stop, const RunnerHooks& hooks);

}  // namespace kstacklab::campaign
