// A campaign on disk (STYLE.md 18: a long job is a state machine on disk). DIR/campaign.json holds
// the plan, the seed, the order of every block begun, and every boot's outcome with each attempt;
// it is rewritten atomically after every attempt, so a campaign killed at any point (SIGKILL
// included) resumes from it without redoing a finished boot and in the recorded order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kstacklab/campaign/plan.h"
#include "kstacklab/error.h"
#include "kstacklab/json.h"

namespace kstacklab::campaign {

inline constexpr const char* kCampaignSchema = "kstacklab-campaign/1";
inline constexpr const char* kStateFile = "campaign.json";
inline constexpr size_t kMaxStateBytes = size_t{16} << 20;
// The deepest nesting a state holds is 6 (a boot's strength summary); a deeper file is refused
// before it is parsed.
inline constexpr int kMaxStateDepth = 32;

enum class BootStatus { kPending, kAccepted, kFailed };
const char* BootStatusName(BootStatus s);  // "pending", "accepted", "failed"

// One try at a boot. outcome: "accepted", "failed" (reason says why; retried once),
// "interrupted" (the campaign was stopped by a signal; not counted as a try), or "lost" (the
// engine's machine stopped answering; not counted as a try; the campaign stops for --resume).
struct Attempt {
  std::string started;  // UTC timestamp
  std::string outcome;
  std::string reason;   // "" when accepted
  std::string console;  // console log, relative to DIR
  std::string accel;    // "kvm", "tcg"
  double seconds = 0;   // QEMU start to exit
};

// Boot `index` (1-based) of one profile; it belongs to block `index`.
struct Boot {
  std::string profile;
  uint64_t index = 0;
  BootStatus status = BootStatus::kPending;
  std::vector<Attempt> attempts;
  std::string file;  // result file relative to DIR ("off/boot-1.json"), when accepted
  // What the guest reported, from the accepted (or last) attempt.
  std::string release;
  std::string cmdline;
  std::optional<bool> effective_kstack_randomization;  // nullopt: not known
  std::optional<int64_t> stack_erasing;                // kernel.stack_erasing (0/1); nullopt: none
  Json strength = nullptr;                             // entropy --kernel summary, or null
  int CountedAttempts() const;  // attempts other than "interrupted" and "lost"
};

struct CampaignState {
  std::string schema = kCampaignSchema;
  std::string tool_version;
  std::string created;
  std::string updated;
  std::string source;  // the plan file, or "command line"
  CampaignPlan plan;
  // The profile order of every block begun (indices into plan.profiles); block k is blocks[k-1].
  std::vector<std::vector<size_t>> blocks;
  std::vector<Boot> boots;   // in the order they were begun
  std::string accel;         // the accelerator decided ("" before the first boot)
  std::string accel_reason;  // why (e.g. "KVM guest silent for 120 s: fell back to TCG")
  // running, interrupted (a signal), stopped (the engine lost its machine), complete
  std::string status = "running";
  std::string stop_reason;  // why the campaign ended ("boots done", "target reached", ...)
  double boot_seconds = 0;  // wall time of every attempt so far (the budget's clock)
  // A real machine's whereabouts (engine ssh): which profile's kernel it runs, or that it did
  // not come back. "" for engines whose guests end with the boot. The report repeats it.
  std::string machine;
  Json block_reports = Json::array();  // after each block: the MDC reached per row (target)

  Boot* Find(const std::string& profile, uint64_t index);
  const Boot* Find(const std::string& profile, uint64_t index) const;
  size_t Accepted(const std::string& profile) const;
  size_t Failed(const std::string& profile) const;
};

// The order of block `block` (1-based): a permutation of 0..n-1 drawn from the seed and the block
// number alone (Fisher-Yates on kstacklab's SplitMix64 dice), or 0..n-1 when not randomised.
std::vector<size_t> BlockOrder(uint64_t seed, uint64_t block, size_t n, bool randomised);

// One boot as campaign.json holds it (the report's JSON shows the same object).
Json BootToJson(const Boot& boot);
Json StateToJson(const CampaignState& state);
// A damaged or foreign file -> UsageError naming `path`.
Expected<CampaignState> StateFromJson(const Json& j, const std::string& path);

// DIR/campaign.json written atomically (temp + fsync + rename).
Status SaveState(const std::string& dir, CampaignState& state);
Expected<CampaignState> LoadState(const std::string& dir);

}  // namespace kstacklab::campaign
