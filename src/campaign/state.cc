#include "kstacklab/campaign/state.h"

#include <fmt/format.h>

#include <initializer_list>
#include <numeric>
#include <optional>
#include <string_view>
#include <type_traits>

#include "kstacklab/dice.h"
#include "kstacklab/fileio.h"
#include "kstacklab/results.h"
#include "kstacklab/text.h"

namespace kstacklab::campaign {

const char* BootStatusName(BootStatus s) {
  switch (s) {
    case BootStatus::kAccepted:
      return "accepted";
    case BootStatus::kFailed:
      return "failed";
    case BootStatus::kPending:
      break;
  }
  return "pending";
}

int Boot::CountedAttempts() const {
  int n = 0;
  for (const Attempt& a : attempts) n += IsCounted(a) ? 1 : 0;
  return n;
}

bool IsCounted(const Attempt& a) {
  return a.outcome != "interrupted" && a.outcome != "lost" && a.outcome != "host-fault";
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
  for (const char* key : {"samples", "distinct", "shannon_bits", "min_entropy_bits"}) {
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
  return {{"started", a.started}, {"outcome", a.outcome}, {"reason", a.reason},
          {"console", a.console}, {"accel", a.accel},     {"seconds", a.seconds}};
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

BootStatus ParseStatus(const std::string& s) {
  if (s == "accepted") return BootStatus::kAccepted;
  if (s == "failed") return BootStatus::kFailed;
  if (s == "pending") return BootStatus::kPending;
  throw Json::other_error::create(501, "unknown boot status '" + s + "'", nullptr);
}

void KnownStateKeys(const Json& j) {
  KnownJsonKeys(
      j,
      {"schema", "tool_version", "created", "updated", "source", "status", "stop_reason", "accel",
       "accel_reason", "boot_seconds", "machine", "plan", "blocks", "boots", "block_reports"},
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

Json StateToJson(const CampaignState& s) {
  Json boots = Json::array();
  for (const Boot& b : s.boots) boots.push_back(BootToJson(b));
  return {{"schema", s.schema},
          {"tool_version", s.tool_version},
          {"created", s.created},
          {"updated", s.updated},
          {"source", s.source},
          {"status", s.status},
          {"stop_reason", s.stop_reason},
          {"accel", s.accel},
          {"accel_reason", s.accel_reason},
          {"boot_seconds", s.boot_seconds},
          {"machine", s.machine},
          {"plan", PlanToJson(s.plan)},
          {"blocks", s.blocks},
          {"boots", std::move(boots)},
          {"block_reports", s.block_reports}};
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
    s.tool_version = j.at("tool_version").get<std::string>();
    s.created = j.at("created").get<std::string>();
    s.updated = j.at("updated").get<std::string>();
    s.source = j.at("source").get<std::string>();
    s.status = j.at("status").get<std::string>();
    if (s.status != "running" && s.status != "interrupted" && s.status != "stopped" &&
        s.status != "complete") {
      return UsageError(fmt::format("{}: status '{}' is not one a campaign records", where,
                                    EscapeControl(s.status)));
    }
    s.stop_reason = j.at("stop_reason").get<std::string>();
    s.accel = j.at("accel").get<std::string>();
    s.accel_reason = j.at("accel_reason").get<std::string>();
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
      b.status = ParseStatus(bj.at("status").get<std::string>());
      b.file = bj.at("file").get<std::string>();
      b.release = bj.at("release").get<std::string>();
      b.cmdline = bj.at("cmdline").get<std::string>();
      b.effective_kstack_randomization = NullOr<bool>(bj.at("effective_kstack_randomization"));
      b.stack_erasing = NullOr<int64_t>(bj.at("kernel_stack_erasing"));
      b.strength = bj.at("strength");
      for (const Json& aj : bj.at("attempts")) {
        b.attempts.push_back(
            Attempt{aj.at("started").get<std::string>(), aj.at("outcome").get<std::string>(),
                    aj.at("reason").get<std::string>(), aj.at("console").get<std::string>(),
                    aj.at("accel").get<std::string>(), aj.at("seconds").get<double>()});
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

Status SaveState(const std::string& dir, CampaignState& state) {
  state.updated = UtcTimestamp();
  return WriteFileAtomic(dir + "/" + kStateFile, DumpJson(StateToJson(state)));
}

Expected<CampaignState> LoadState(const std::string& dir) {
  const std::string path = dir + "/" + kStateFile;
  std::string text;
  // Not blocking on a FIFO or a device put in the state's place: a regular file is required.
  KSTACKLAB_ASSIGN_OR_RETURN(text, ReadRegularFile(path, kMaxStateBytes));
  // Before parsing: a deep array is small as text, a deep tree to build and to write back.
  if (JsonNestingDepth(text, kMaxStateDepth) > kMaxStateDepth) {
    return UsageError(fmt::format(
        "'{}' nests arrays or objects deeper than {} levels; it is not a campaign state",
        EscapeControl(path), kMaxStateDepth));
  }
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return UsageError(
        fmt::format("'{}' is not valid JSON; it is not a campaign state", EscapeControl(path)));
  }
  return StateFromJson(j, path);
}

}  // namespace kstacklab::campaign
