#include "kstacklab/campaign/state.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>
#include <type_traits>

#include "kstacklab/common/dice.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/results/results.h"

namespace kstacklab::campaign {

namespace {

// A value of an enum and its word on disk: every enum's one table.
template <class E>
struct EnumWord {
  E value;
  const char* word;
};

constexpr EnumWord<BootStatus> kBootStatusWords[] = {
    {BootStatus::kPending, "pending"},
    {BootStatus::kAccepted, "accepted"},
    {BootStatus::kFailed, "failed"},
};

constexpr EnumWord<CampaignStatus> kCampaignStatusWords[] = {
    {CampaignStatus::kRunning, "running"},
    {CampaignStatus::kInterrupted, "interrupted"},
    {CampaignStatus::kStopped, "stopped"},
    {CampaignStatus::kComplete, "complete"},
};

constexpr EnumWord<AttemptOutcome> kAttemptOutcomeWords[] = {
    {AttemptOutcome::kRunning, "running"}, {AttemptOutcome::kAccepted, "accepted"},
    {AttemptOutcome::kFailed, "failed"},   {AttemptOutcome::kInterrupted, "interrupted"},
    {AttemptOutcome::kLost, "lost"},       {AttemptOutcome::kHostFault, "host-fault"},
};

template <class E, size_t N>
const char* WordOf(const EnumWord<E> (&table)[N], E value) {
  for (const EnumWord<E>& row : table) {
    if (row.value == value) return row.word;
  }
  KSTACKLAB_CHECK(false);  // every value has its row
  return "";
}

template <class E, size_t N>
std::optional<E> ValueOf(const EnumWord<E> (&table)[N], std::string_view word) {
  for (const EnumWord<E>& row : table) {
    if (word == row.word) return row.value;
  }
  return std::nullopt;
}

}  // namespace

const char* BootStatusName(BootStatus s) { return WordOf(kBootStatusWords, s); }
std::optional<BootStatus> ParseBootStatus(std::string_view word) {
  return ValueOf(kBootStatusWords, word);
}

const char* CampaignStatusName(CampaignStatus s) { return WordOf(kCampaignStatusWords, s); }
std::optional<CampaignStatus> ParseCampaignStatus(std::string_view word) {
  return ValueOf(kCampaignStatusWords, word);
}

Expected<CampaignStatus> RecordedCampaignStatus(const Json& word, const std::string& where,
                                                std::string_view what) {
  const auto text = word.get<std::string>();
  if (std::optional<CampaignStatus> known = ParseCampaignStatus(text)) return *known;
  return UsageError(
      fmt::format("{}: status '{}' is not one a {} records", where, EscapeControl(text), what));
}

const char* AttemptOutcomeName(AttemptOutcome o) { return WordOf(kAttemptOutcomeWords, o); }
std::optional<AttemptOutcome> ParseAttemptOutcome(std::string_view word) {
  return ValueOf(kAttemptOutcomeWords, word);
}

int Boot::CountedAttempts() const {
  int n = 0;
  for (const Attempt& a : attempts) n += IsCounted(a) ? 1 : 0;
  return n;
}

bool IsCounted(const Attempt& a) {
  return a.outcome != AttemptOutcome::kInterrupted && a.outcome != AttemptOutcome::kLost &&
         a.outcome != AttemptOutcome::kHostFault;
}

std::string CapStateText(const std::string& text, size_t max_bytes) {
  size_t used = 0;
  size_t end = 0;
  for (; end < text.size(); ++end) {
    const auto c = static_cast<unsigned char>(text[end]);
    const size_t cost = c == '"' || c == '\\' ? 2 : c < 0x20 ? 6 : c >= 0x80 ? 3 : 1;
    if (used + cost > max_bytes) break;
    used += cost;
  }
  if (end == text.size()) return text;
  // Not inside a UTF-8 sequence: back to the byte that starts the cut character.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

Json CapStrength(const Json& strength) {
  if (!strength.is_object()) return nullptr;
  if (strength.contains("error")) {
    const Json& e = strength["error"];
    return Json{
        {"error", CapStateText(e.is_string() ? e.get<std::string>() : e.dump(), kMaxReasonBytes)}};
  }
  Json out = Json::object();
  for (const char* key : {"samples", "distinct", "shannon_bits", "min_entropy_bits",
                          "geometry_offsets", "geometry_max_bytes"}) {
    const Json v = strength.value(key, Json());
    out[key] = v.is_number() ? v : Json();
  }
  const Json design = strength.value("design", Json());
  out["design"] = design.is_string()
                      ? Json(CapStateText(design.get<std::string>(), kMaxShortTextBytes))
                      : Json();
  return out;
}

Boot* CampaignState::Find(const std::string& profile, uint64_t index) {
  for (Boot& b : boots) {
    if (b.profile == profile && b.index == index) return &b;
  }
  return nullptr;
}

const Boot* CampaignState::Find(const std::string& profile, uint64_t index) const {
  return const_cast<CampaignState*>(this)->Find(profile, index);
}

size_t CampaignState::Accepted(const std::string& profile) const {
  size_t n = 0;
  for (const Boot& b : boots) n += b.profile == profile && b.status == BootStatus::kAccepted;
  return n;
}

size_t CampaignState::Failed(const std::string& profile) const {
  size_t n = 0;
  for (const Boot& b : boots) n += b.profile == profile && b.status == BootStatus::kFailed;
  return n;
}

std::vector<size_t> BlockOrder(uint64_t seed, uint64_t block, size_t n, bool randomised) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  if (!randomised) return order;
  // A fresh stream per block (the seed and the block number mixed through one SplitMix64 step),
  // so block k's order does not depend on how many blocks a resumed campaign had drawn before.
  Dice mix(seed ^ (0x9E3779B97F4A7C15ull * block));
  Dice dice(mix.Next());
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[dice.Below(i)]);
  return order;
}

namespace {

Json AttemptToJson(const Attempt& a) {
  return {{"started", a.started}, {"outcome", AttemptOutcomeName(a.outcome)},
          {"reason", a.reason},   {"console", a.console},
          {"accel", a.accel},     {"seconds", a.seconds}};
}

// A recorded JSON value: null -> nullopt, else the value (a wrong type throws Json::exception:
// the state is damaged).
template <class T>
std::optional<T> NullOr(const Json& j) {
  if (j.is_null()) return std::nullopt;
  if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) throw Json::type_error::create(302, "not a boolean or null", &j);
  } else {
    if (!j.is_number_integer()) throw Json::type_error::create(302, "not an integer or null", &j);
  }
  return j.get<T>();
}

// One attempt as campaign.json holds it; an outcome the enum does not have -> UsageError naming
// `where` (a missing or mistyped key throws Json::exception).
Expected<Attempt> AttemptFromJson(const Json& aj, const std::string& where) {
  const auto outcome = aj.at("outcome").get<std::string>();
  const std::optional<AttemptOutcome> known = ParseAttemptOutcome(outcome);
  if (!known) {
    return UsageError(fmt::format("{}: outcome '{}' is not one a campaign records", where,
                                  EscapeControl(outcome)));
  }
  return Attempt{aj.at("started").get<std::string>(), *known,
                 aj.at("reason").get<std::string>(),  aj.at("console").get<std::string>(),
                 aj.at("accel").get<std::string>(),   aj.at("seconds").get<double>()};
}

void KnownStateKeys(const Json& j) {
  KnownJsonKeys(j,
                {"schema", "generation", "tool_version", "created", "updated", "source", "status",
                 "stop_reason", "accel", "accel_reason", "machine_model", "boot_seconds", "machine",
                 "plan", "blocks", "boots", "block_reports"},
                "the state");
  for (const Json& b : j.at("boots")) {
    KnownJsonKeys(
        b,
        {"profile", "index", "status", "file", "release", "cmdline",
         "effective_kstack_randomization", "kernel_stack_erasing", "strength", "attempts"},
        "a boot");
    for (const Json& a : b.at("attempts")) {
      KnownJsonKeys(a, {"started", "outcome", "reason", "console", "accel", "seconds"},
                    "an attempt");
    }
  }
}

}  // namespace

Json BootToJson(const Boot& b) {
  Json attempts = Json::array();
  for (const Attempt& a : b.attempts) attempts.push_back(AttemptToJson(a));
  return {{"profile", b.profile},
          {"index", b.index},
          {"status", BootStatusName(b.status)},
          {"file", b.file},
          {"release", b.release},
          {"cmdline", b.cmdline},
          {"effective_kstack_randomization", OptionalJson(b.effective_kstack_randomization)},
          {"kernel_stack_erasing", OptionalJson(b.stack_erasing)},
          {"strength", b.strength},
          {"attempts", std::move(attempts)}};
}

namespace {

// Every top-level member of the state but blocks, boots and block_reports, in the file's order.
Json HeadToJson(const CampaignState& s) {
  return {{"schema", s.schema},
          {"generation", s.generation},
          {"tool_version", s.tool_version},
          {"created", s.created},
          {"updated", s.updated},
          {"source", s.source},
          {"status", CampaignStatusName(s.status)},
          {"stop_reason", s.stop_reason},
          {"accel", s.accel},
          {"accel_reason", s.accel_reason},
          {"machine_model", s.machine_model},
          {"boot_seconds", s.boot_seconds},
          {"machine", s.machine},
          {"plan", PlanToJson(s.plan)}};
}

}  // namespace

Json StateToJson(const CampaignState& s) {
  Json boots = Json::array();
  for (const Boot& b : s.boots) boots.push_back(BootToJson(b));
  Json j = HeadToJson(s);
  j["blocks"] = s.blocks;
  j["boots"] = std::move(boots);
  j["block_reports"] = s.block_reports;
  return j;
}

Expected<CampaignState> StateFromJson(const Json& j, const std::string& path) {
  const std::string where = fmt::format("'{}'", EscapeControl(path));
  if (!j.is_object() || !j.contains("schema") || j["schema"] != kCampaignSchema) {
    return UsageError(
        fmt::format("{} is not a kstacklab campaign state ({})", where, kCampaignSchema));
  }
  try {
    KnownStateKeys(j);
    CampaignState s;
    s.generation = j.value("generation", uint64_t{0});
    s.tool_version = j.at("tool_version").get<std::string>();
    s.created = j.at("created").get<std::string>();
    s.updated = j.at("updated").get<std::string>();
    s.source = j.at("source").get<std::string>();
    KSTACKLAB_ASSIGN_OR_RETURN(s.status, RecordedCampaignStatus(j.at("status"), where, "campaign"));
    s.stop_reason = j.at("stop_reason").get<std::string>();
    s.accel = j.at("accel").get<std::string>();
    s.accel_reason = j.at("accel_reason").get<std::string>();
    s.machine_model = j.value("machine_model", std::string());  // absent before arm64 support
    s.boot_seconds = j.at("boot_seconds").get<double>();
    s.machine = j.value("machine", std::string());
    auto plan = PlanFromJson(j.at("plan"));
    if (!plan.ok()) return UsageError(fmt::format("{}: {}", where, plan.error().message));
    s.plan = std::move(*plan);
    s.blocks = j.at("blocks").get<std::vector<std::vector<size_t>>>();
    for (const auto& order : s.blocks) {
      if (order.size() != s.plan.profiles.size()) {
        return UsageError(fmt::format("{}: a block does not hold every profile once", where));
      }
      for (size_t i : order) {
        if (i >= s.plan.profiles.size()) {
          return UsageError(fmt::format("{}: a block names a profile that does not exist", where));
        }
      }
    }
    for (const Json& bj : j.at("boots")) {
      Boot b;
      b.profile = bj.at("profile").get<std::string>();
      b.index = bj.at("index").get<uint64_t>();
      const auto boot_status = bj.at("status").get<std::string>();
      if (std::optional<BootStatus> known = ParseBootStatus(boot_status)) {
        b.status = *known;
      } else {
        throw Json::other_error::create(501, fmt::format("unknown boot status '{}'", boot_status),
                                        nullptr);
      }
      b.file = bj.at("file").get<std::string>();
      b.release = bj.at("release").get<std::string>();
      b.cmdline = bj.at("cmdline").get<std::string>();
      b.effective_kstack_randomization = NullOr<bool>(bj.at("effective_kstack_randomization"));
      b.stack_erasing = NullOr<int64_t>(bj.at("kernel_stack_erasing"));
      b.strength = bj.at("strength");
      for (const Json& aj : bj.at("attempts")) {
        Attempt a;
        KSTACKLAB_ASSIGN_OR_RETURN(a, AttemptFromJson(aj, where));
        b.attempts.push_back(std::move(a));
      }
      // A file name inside DIR only: the state is read back from a directory anyone may hand us.
      if (!b.file.empty() && (b.file[0] == '/' || b.file.find("..") != std::string::npos)) {
        return UsageError(fmt::format("{}: boot file '{}' points outside the campaign directory",
                                      where, EscapeControl(b.file)));
      }
      s.boots.push_back(std::move(b));
    }
    s.block_reports = j.at("block_reports");
    return s;
  } catch (const Json::exception& e) {
    return UsageError(
        fmt::format("{} is damaged ({}); a campaign directory is written only by "
                    "kstacklab campaign",
                    where, e.what()));
  }
}

namespace {

std::string JournalPath(const std::string& dir) { return dir + "/" + kJournalFile; }

// Makes the directory entry changes in `dir` durable (best effort: some file systems cannot
// fsync a directory; a lost entry change leaves lines of another generation, which are skipped).
void SyncDir(const std::string& dir) {
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

bool SameAttempt(const Attempt& a, const Attempt& b) {
  return a.started == b.started && a.outcome == b.outcome && a.reason == b.reason &&
         a.console == b.console && a.accel == b.accel && a.seconds == b.seconds;
}

bool SameBoot(const Boot& a, const Boot& b) {
  return a.profile == b.profile && a.index == b.index && a.status == b.status && a.file == b.file &&
         a.release == b.release && a.cmdline == b.cmdline &&
         a.effective_kstack_randomization == b.effective_kstack_randomization &&
         a.stack_erasing == b.stack_erasing && a.strength == b.strength &&
         std::equal(a.attempts.begin(), a.attempts.end(), b.attempts.begin(), b.attempts.end(),
                    SameAttempt);
}

}  // namespace

// What the last save left on disk, to tell what the next one changes.
struct StateWriter::Saved {
  uint64_t generation = 0;
  uint64_t snapshot_bytes = 0;
  uint64_t journal_bytes = 0;
  Json head;
  std::vector<std::vector<size_t>> blocks;
  Json block_reports;
  std::vector<Boot> boots;
};

StateWriter::StateWriter(std::string dir) : dir_(std::move(dir)) {}
StateWriter::~StateWriter() = default;

Status StateWriter::Whole(CampaignState& state) {
  saved_.reset();
  ++state.generation;
  const std::string text = DumpJson(StateToJson(state));
  if (Status st = WriteFileAtomic(dir_ + "/" + kStateFile, text); !st.ok()) {
    --state.generation;
    return st;
  }
  bytes_written_ += text.size();
  // Its lines are in the snapshot now (and are of the generation before, should this be lost).
  if (::unlink(JournalPath(dir_).c_str()) == 0) {
    SyncDir(dir_);
  } else if (errno != ENOENT) {
    const int err = errno;
    return SystemError(
        fmt::format("cannot remove '{}': {}", EscapeControl(JournalPath(dir_)), std::strerror(err)),
        err);
  }
  auto saved = std::make_unique<Saved>();
  saved->generation = state.generation;
  saved->snapshot_bytes = text.size();
  saved->head = HeadToJson(state);
  saved->blocks = state.blocks;
  saved->block_reports = state.block_reports;
  saved->boots = state.boots;
  saved_ = std::move(saved);
  return OkStatus();
}

Status StateWriter::Append(const std::string& line) {
  const std::string path = JournalPath(dir_);
  const std::string shown = EscapeControl(path);
  // O_NOFOLLOW, O_NONBLOCK: a link or a FIFO put in the journal's place is refused, not followed
  // or waited on.
  const int fd =
      ::open(path.c_str(),
             O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0666);
  if (fd < 0) {
    const int err = errno;
    return SystemError(fmt::format("cannot write '{}': {}", shown, std::strerror(err)), err);
  }
  struct stat st {};
  int err = 0;
  if (::fstat(fd, &st) != 0) {
    err = errno;
  } else if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return RuntimeError(fmt::format("cannot write '{}': it is not a regular file", shown));
  }
  const auto expected = static_cast<off_t>(saved_->journal_bytes);
  // Bytes past the last line saved are a line whose write failed: cut off before appending.
  if (err == 0 && st.st_size != expected && ::ftruncate(fd, expected) != 0) err = errno;
  for (size_t done = 0; err == 0 && done < line.size();) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (err != 0) (void)::ftruncate(fd, expected);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    return SystemError(fmt::format("cannot write '{}': {}", shown, std::strerror(err)), err);
  }
  if (expected == 0) SyncDir(dir_);  // the journal's first line: its name is new
  bytes_written_ += line.size();
  return OkStatus();
}

Status StateWriter::Save(CampaignState& state) {
  state.updated = UtcTimestamp();
  if (!saved_ || state.status != CampaignStatus::kRunning ||
      state.generation != saved_->generation) {
    return Whole(state);
  }
  Saved& saved = *saved_;
  // The line: the changes since the last save, if they are ones a line holds.
  if (state.boots.size() < saved.boots.size() || state.blocks.size() < saved.blocks.size() ||
      !std::equal(saved.blocks.begin(), saved.blocks.end(), state.blocks.begin()) ||
      !state.block_reports.is_array() || state.block_reports.size() < saved.block_reports.size() ||
      !std::equal(saved.block_reports.begin(), saved.block_reports.end(),
                  state.block_reports.begin())) {
    return Whole(state);
  }
  Json line = {{"generation", state.generation}};
  const Json head = HeadToJson(state);
  Json set = Json::object();
  for (const auto& [key, value] : head.items()) {
    if (saved.head[key] == value) continue;
    if (key == "schema" || key == "generation") return Whole(state);
    set[key] = value;
  }
  if (!set.empty()) line["set"] = set;
  if (state.blocks.size() > saved.blocks.size()) {
    line["blocks"] = std::vector<std::vector<size_t>>(state.blocks.begin() + saved.blocks.size(),
                                                      state.blocks.end());
  }
  if (state.block_reports.size() > saved.block_reports.size()) {
    Json reports = Json::array();
    for (size_t i = saved.block_reports.size(); i < state.block_reports.size(); ++i) {
      reports.push_back(state.block_reports[i]);
    }
    line["block_reports"] = std::move(reports);
  }
  std::vector<size_t> changed;
  for (size_t i = 0; i < state.boots.size(); ++i) {
    if (i < saved.boots.size()) {
      const Boot& was = saved.boots[i];
      if (was.profile != state.boots[i].profile || was.index != state.boots[i].index) {
        return Whole(state);
      }
      if (SameBoot(was, state.boots[i])) continue;
    }
    changed.push_back(i);
  }
  if (!changed.empty()) {
    Json boots = Json::array();
    for (size_t i : changed) boots.push_back(BootToJson(state.boots[i]));
    line["boots"] = std::move(boots);
  }
  const std::string text = line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  const uint64_t journal = saved.journal_bytes + text.size();
  if (saved.snapshot_bytes + journal < kWholeStateBytes || journal > saved.snapshot_bytes) {
    return Whole(state);
  }
  if (Status st = Append(text); !st.ok()) {
    saved_.reset();
    return st;
  }
  saved.journal_bytes = journal;
  saved.head = head;
  saved.blocks = state.blocks;
  saved.block_reports = state.block_reports;
  for (size_t i : changed) {
    if (i < saved.boots.size()) {
      saved.boots[i] = state.boots[i];
    } else {
      saved.boots.push_back(state.boots[i]);
    }
  }
  return OkStatus();
}

Status SaveState(const std::string& dir, CampaignState& state) {
  StateWriter writer(dir);
  return writer.Save(state);
}

namespace {

// Applies journal line `line` (an object of kLineKeys, of the snapshot's generation) to the
// state `j` (checked by StateFromJson already); `boot_at` finds a boot of `j` by profile and
// index. A line of the wrong form throws Json::exception.
using BootIndex = std::map<std::pair<std::string, uint64_t>, size_t>;

void ApplyLine(const Json& line, Json& j, BootIndex& boot_at) {
  if (line.contains("set")) {
    const Json& set = line["set"];
    if (!set.is_object()) throw Json::type_error::create(302, "set is not an object", &set);
    // Every top-level member but the state's identity (schema, generation) and the arrays.
    KnownJsonKeys(set,
                  {"tool_version", "created", "updated", "source", "status", "stop_reason", "accel",
                   "accel_reason", "machine_model", "boot_seconds", "machine", "plan"},
                  "a journal line's set");
    for (const auto& [key, value] : set.items()) j[key] = value;
  }
  for (const char* key : {"blocks", "block_reports"}) {
    if (!line.contains(key)) continue;
    for (const Json& v : line[key].get_ref<const Json::array_t&>()) j[key].push_back(v);
  }
  if (line.contains("boots")) {
    Json& boots = j["boots"];
    for (const Json& b : line["boots"].get_ref<const Json::array_t&>()) {
      auto key = std::make_pair(b.at("profile").get<std::string>(), b.at("index").get<uint64_t>());
      auto [at, fresh] = boot_at.try_emplace(std::move(key), boots.size());
      if (fresh) {
        boots.push_back(b);
      } else {
        boots[at->second] = b;
      }
    }
  }
}

}  // namespace

Expected<CampaignState> StateFromFiles(const std::string& snapshot, const std::string& journal,
                                       const std::string& dir,
                                       std::optional<JournalLineIgnored>* ignored) {
  const std::string path = dir + "/" + kStateFile;
  // Before parsing: a deep array is small as text, a deep tree to build and to write back.
  if (JsonNestingDepth(snapshot, kMaxStateDepth) > kMaxStateDepth) {
    return UsageError(fmt::format(
        "'{}' nests arrays or objects deeper than {} levels; it is not a campaign state",
        EscapeControl(path), kMaxStateDepth));
  }
  Json j = Json::parse(snapshot, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return UsageError(
        fmt::format("'{}' is not valid JSON; it is not a campaign state", EscapeControl(path)));
  }
  Expected<CampaignState> state = StateFromJson(j, path);
  if (!state.ok() || journal.empty()) return state;

  const std::string jpath = EscapeControl(dir + "/" + kJournalFile);
  BootIndex boot_at;
  for (size_t i = 0; i < state->boots.size(); ++i) {
    boot_at.try_emplace({state->boots[i].profile, state->boots[i].index}, i);
  }
  size_t applied = 0;
  size_t number = 0;
  for (size_t pos = 0; pos < journal.size();) {
    ++number;
    const size_t nl = journal.find('\n', pos);
    const bool complete = nl != std::string::npos;
    const std::string text = journal.substr(pos, complete ? nl - pos : std::string::npos);
    pos = complete ? nl + 1 : journal.size();
    const bool last = pos == journal.size();
    if (JsonNestingDepth(text, kMaxStateDepth) > kMaxStateDepth) {
      return UsageError(fmt::format(
          "line {} of '{}' nests arrays or objects deeper than {} levels; it is not a campaign "
          "journal",
          number, jpath, kMaxStateDepth));
    }
    const Json line = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (line.is_discarded() || !complete) {
      if (!last) {
        return UsageError(fmt::format(
            "line {} of '{}' is not valid JSON; a campaign directory is written only by "
            "kstacklab campaign",
            number, jpath));
      }
      if (ignored != nullptr) *ignored = JournalLineIgnored{dir + "/" + kJournalFile};
      break;
    }
    try {
      if (!line.is_object()) throw Json::type_error::create(302, "not an object", &line);
      KnownJsonKeys(line, {"generation", "set", "blocks", "block_reports", "boots"},
                    "a journal line");
      if (line.at("generation").get<uint64_t>() != state->generation) continue;
      ApplyLine(line, j, boot_at);
      ++applied;
    } catch (const Json::exception& e) {
      return UsageError(
          fmt::format("line {} of '{}' is damaged ({}); a campaign directory is "
                      "written only by kstacklab campaign",
                      number, jpath, e.what()));
    }
  }
  if (applied == 0) return state;
  // The state with the journal applied, checked as campaign.json alone is.
  return StateFromJson(j, dir + "/" + kJournalFile);
}

Expected<CampaignState> LoadState(const std::string& dir,
                                  std::optional<JournalLineIgnored>* ignored) {
  std::string snapshot;
  // Not blocking on a FIFO or a device put in the state's place: a regular file is required.
  KSTACKLAB_ASSIGN_OR_RETURN(snapshot, ReadRegularFile(dir + "/" + kStateFile, kMaxStateBytes));
  // The journal: as campaign.json, and never through a symbolic link (none is written).
  const std::string jpath = JournalPath(dir);
  const std::string shown = EscapeControl(jpath);
  const int fd = ::open(jpath.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) return StateFromFiles(snapshot, "", dir, ignored);
  if (fd < 0) {
    return UsageError(fmt::format("cannot read '{}': {}", shown,
                                  errno == ELOOP ? "it is a symbolic link" : std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return UsageError(fmt::format("cannot read '{}': it is not a regular file", shown));
  }
  auto journal = ReadAll(fd, kMaxStateBytes, fmt::format("'{}'", shown));
  ::close(fd);
  if (!journal.ok()) return journal.error();
  return StateFromFiles(snapshot, *journal, dir, ignored);
}

}  // namespace kstacklab::campaign
