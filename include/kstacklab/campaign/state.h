// A campaign on disk (STYLE.md 18: a long job is a state machine on disk). The state — the plan,
// the seed, the order of every block begun, and every boot's outcome with each attempt — is
// DIR/campaign.json (a snapshot, written atomically) and DIR/campaign.journal (what changed since,
// one fsync'd JSON line per save, appended). It is saved after every step, so a campaign killed at
// any point (SIGKILL included) resumes from it without redoing a finished boot and in the recorded
// order; the bytes written grow linearly with the steps (StateWriter).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/campaign/plan.h"
#include "kstacklab/common/error.h"
#include "kstacklab/results/json.h"

namespace kstacklab::campaign {

inline constexpr const char* kCampaignSchema = "kstacklab-campaign/1";
inline constexpr const char* kStateFile = "campaign.json";
inline constexpr const char* kJournalFile = "campaign.journal";
// A state smaller than this is written whole at every save (no journal): campaign.json alone is
// then the current state, for whoever reads it during a run.
inline constexpr size_t kWholeStateBytes = size_t{64} << 10;

// What one boot may add to the state. Every text a guest or an engine reports is cut to a number
// of bytes as JSON writes it (CapStateText), and a boot keeps its last kMaxAttempts attempts, so
// the state's size follows from the plan's limits (kMaxStateBytes).
inline constexpr size_t kMaxAttempts = 6;             // the two counted tries and the latest others
inline constexpr size_t kMaxReasonBytes = 512;        // an attempt's reason, the stop reason
inline constexpr size_t kMaxBootReleaseBytes = 128;   // the guest's uname -r
inline constexpr size_t kMaxBootCmdlineBytes = 1024;  // the guest's /proc/cmdline (its start)
inline constexpr size_t kMaxShortTextBytes = 128;     // an accelerator, a strength's design
// A block report keeps the kMaxReportRows rows with the largest MDC, each named in kMaxRowBytes.
inline constexpr size_t kMaxReportRows = 32;
inline constexpr size_t kMaxRowBytes = 256;
// Bounds of the state as DumpJson writes it, checked by the tests on a state of maximal parts:
// one boot (BootToJson, indented as in the state), one block's order and report, the plan with
// everything else the state holds once (CreateCampaign refuses a larger plan).
inline constexpr size_t kMaxBootJsonBytes = 8192;
inline constexpr size_t kMaxBlockJsonBytes = 16384;
inline constexpr size_t kMaxPlanJsonBytes = size_t{1} << 20;
inline constexpr size_t kMaxStateBytes =
    kMaxPlanJsonBytes + CampaignLimits::kMaxBoots * kMaxBlockJsonBytes +
    CampaignLimits::kMaxProfiles * CampaignLimits::kMaxBoots * kMaxBootJsonBytes;

// `text` cut so that JSON writes it in at most `max_bytes` bytes (a quote or backslash counts
// 2, another control character 6, a byte above 0x7f 3: U+FFFD if it is not UTF-8), at a
// character boundary.
std::string CapStateText(const std::string& text, size_t max_bytes);
// A strength summary (runner.cc) with its texts cut to kMaxReasonBytes / kMaxShortTextBytes and
// no members but the documented ones.
Json CapStrength(const Json& strength);
// The deepest nesting a state holds is 6 (a boot's strength summary); a deeper file is refused
// before it is parsed.
inline constexpr int kMaxStateDepth = 32;

// The states a campaign's words name. Each enum's values and their words on disk
// (campaign.json, bisect.json, the report) are one table in state.cc: *Name() writes a value's
// word, Parse*() reads one back (nullopt for a word the enum does not have: the caller refuses
// the file). docs/campaign.md ("Files") lists every word.

// A boot: "pending" (not yet accepted or failed), "accepted", "failed" (its counted tries failed).
enum class BootStatus { kPending, kAccepted, kFailed };
const char* BootStatusName(BootStatus s);
std::optional<BootStatus> ParseBootStatus(std::string_view word);

// A campaign (campaign.json) or a bisect (bisect.json): "running" (also what a campaign killed
// while it ran still says), "interrupted" (by a signal), "stopped" (the engine lost its machine,
// or a write on this host failed: --resume goes on), "complete".
enum class CampaignStatus { kRunning, kInterrupted, kStopped, kComplete };
const char* CampaignStatusName(CampaignStatus s);
std::optional<CampaignStatus> ParseCampaignStatus(std::string_view word);
// The status a file records: `word` must be a JSON string (another type throws Json::exception);
// one the enum does not have -> UsageError "WHERE: status 'WORD' is not one a WHAT records".
Expected<CampaignStatus> RecordedCampaignStatus(const Json& word, const std::string& where,
                                                std::string_view what);

// One try at a boot: "running" (saved before the boot starts; a resume records it "interrupted",
// the campaign having been killed during it), "accepted", "failed" (reason says why; retried
// once), "interrupted" (the campaign was stopped by a signal; not counted as a try), "lost" (the
// engine's machine stopped answering; not counted as a try; the campaign stops for --resume), or
// "host-fault" (a write on this host failed, e.g. a full disk; not counted as a try; the
// campaign stops for --resume).
enum class AttemptOutcome { kRunning, kAccepted, kFailed, kInterrupted, kLost, kHostFault };
const char* AttemptOutcomeName(AttemptOutcome o);
std::optional<AttemptOutcome> ParseAttemptOutcome(std::string_view word);

struct Attempt {
  std::string started;  // UTC timestamp
  AttemptOutcome outcome = AttemptOutcome::kRunning;
  std::string reason;   // "" when accepted
  std::string console;  // console log, relative to DIR
  std::string accel;    // how its machine was run (BootFacts::how: "kvm", "tcg", ...)
  double seconds = 0;   // QEMU start to exit
};

bool IsCounted(const Attempt& a);  // counts as a try: not interrupted, lost or host-fault

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
  int CountedAttempts() const;  // attempts other than "interrupted", "lost" and "host-fault"
};

struct CampaignState {
  std::string schema = kCampaignSchema;
  // Of the snapshot (campaign.json) last read or written: the journal lines that extend it carry
  // it, and lines of another (left by a save killed between snapshot and journal) are skipped.
  uint64_t generation = 0;
  std::string tool_version;
  std::string created;
  std::string updated;
  std::string source;  // the plan file, or "command line"
  CampaignPlan plan;
  // The profile order of every block begun (indices into plan.profiles); block k is blocks[k-1].
  std::vector<std::vector<size_t>> blocks;
  std::vector<Boot> boots;  // in the order they were begun
  // How the engine runs its machine and why (Engine::Facts: "tcg", "KVM guest silent for 120 s:
  // fell back to TCG"); "" before the first boot.
  std::string accel;
  std::string accel_reason;
  // The engine's machine and CPU model (Engine::MachineModel), "" for a real machine.
  std::string machine_model;
  CampaignStatus status = CampaignStatus::kRunning;
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

// The state written whole: DIR/campaign.json atomically (temp + fsync + rename) with the next
// generation, then DIR/campaign.journal removed.
Status SaveState(const std::string& dir, CampaignState& state);

// Saves one campaign's state in DIR step after step; the runner's one writer. A save appends to
// DIR/campaign.journal one line with what changed since the last save (the changed top-level
// fields, the new blocks and block reports, the new or changed boots), fsync'd; it writes the
// state whole (SaveState) instead on its first save, when the state has ended (status other than
// "running"), while the state is below kWholeStateBytes, when a change is not one a line holds (a
// boot removed or reordered, a block changed), and when the journal would grow past the snapshot.
// So every snapshot is at most about twice the journal written since the one before: the bytes
// written over a campaign grow linearly with its steps, and the journal is never larger than the
// snapshot (both within kMaxStateBytes). A failed save leaves the last saved state readable; the
// next save is then whole. Not thread-safe; one writer per directory (the caller holds its lock).
class StateWriter {
 public:
  explicit StateWriter(std::string dir);
  ~StateWriter();
  StateWriter(const StateWriter&) = delete;
  StateWriter& operator=(const StateWriter&) = delete;

  Status Save(CampaignState& state);
  // Bytes written to DIR by this writer's successful saves (snapshots and journal lines).
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  struct Saved;
  Status Whole(CampaignState& state);
  Status Append(const std::string& line);

  std::string dir_;
  std::unique_ptr<Saved> saved_;  // what is on disk; null: the next save is whole
  uint64_t bytes_written_ = 0;
};

// The state in DIR: campaign.json (at most kMaxStateBytes, a regular file), then the lines of
// campaign.journal of its generation applied in order (insert-or-replace of boots by profile and
// index), the result checked exactly as campaign.json alone is (StateFromJson). The journal must
// be a regular file, not a symbolic link, of at most kMaxStateBytes. Its last line, when cut
// short or not JSON (a save killed while writing it), is ignored and `*ignored` says so (report/
// words it: JournalLineIgnoredText); a damaged line before it, or a line of the wrong form ->
// UsageError naming the journal and the line.
struct JournalLineIgnored {
  std::string journal;  // the journal's path
};
Expected<CampaignState> LoadState(const std::string& dir,
                                  std::optional<JournalLineIgnored>* ignored = nullptr);
// LoadState on the two files' contents (`journal` empty when there is none), named as in `dir`.
Expected<CampaignState> StateFromFiles(const std::string& snapshot, const std::string& journal,
                                       const std::string& dir,
                                       std::optional<JournalLineIgnored>* ignored = nullptr);

}  // namespace kstacklab::campaign
