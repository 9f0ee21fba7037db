// The engine table, the plan's engine (a row and its settings), and the value checks every
// engine's settings use.
#include "kstacklab/campaign/engines.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "kstacklab/campaign/lava.h"
#include "kstacklab/campaign/qemu.h"
#include "kstacklab/campaign/ssh.h"
#include "kstacklab/common/text.h"

namespace kstacklab::campaign {

// The engine table. The first row is the default engine (a plan without `engine:`).
EngineTable Engines() {
  static const std::array<EngineRow, 3> kEngines = {
      engine_internal::Row<QemuSettings>(),
      engine_internal::Row<SshSettings>(),
      engine_internal::Row<LavaSettings>(),
  };
  return kEngines;
}

std::string EngineNames(EngineTable table) {
  std::string out;
  for (size_t i = 0; i < table.size(); ++i) {
    if (i > 0) out += i + 1 == table.size() ? " or " : ", ";
    out += table[i].name;
  }
  return out;
}

Expected<const EngineRow*> FindEngine(std::string_view name, EngineTable table) {
  for (const EngineRow& row : table) {
    if (name == row.name) return &row;
  }
  return UsageError(fmt::format("engine '{}' is unknown; give {}", EscapeControl(std::string(name)),
                                EngineNames(table)));
}

PlanEngine::PlanEngine() : PlanEngine(Engines().front()) {}

PlanEngine::PlanEngine(const EngineRow& row) : row_(&row), settings_(row.defaults()) {}

PlanEngine::PlanEngine(const EngineRow& row, std::unique_ptr<EngineSettings> settings)
    : row_(&row), settings_(std::move(settings)) {
  KSTACKLAB_CHECK(settings_ != nullptr);
}

PlanEngine::PlanEngine(const PlanEngine& other)
    : row_(other.row_), settings_(other.settings_->Clone()) {}

PlanEngine& PlanEngine::operator=(const PlanEngine& other) {
  if (this != &other) {
    row_ = other.row_;
    settings_ = other.settings_->Clone();
  }
  return *this;
}

const char* PlanEngine::name() const { return row_->name; }

std::unique_ptr<Engine> MakeEngine(const CampaignPlan& plan, const std::string& work_dir,
                                   const std::string& guest_binary) {
  return plan.engine.row().make(plan, work_dir, guest_binary);
}

// ---- values ----------------------------------------------------------------------------------

Status TextValue(const std::string& field, const std::string& s, size_t max) {
  if (s.size() > max) return UsageError(fmt::format("{} is longer than {} bytes", field, max));
  if (auto problem = TextProblem(s)) return UsageError(fmt::format("{} {}", field, *problem));
  return OkStatus();
}

Status ListValue(const std::string& field, const std::vector<std::string>& items, size_t max_items,
                 size_t max_bytes) {
  if (items.size() > max_items) {
    return UsageError(fmt::format("{} has more than {} items", field, max_items));
  }
  for (const std::string& s : items) KSTACKLAB_RETURN_IF_ERROR(TextValue(field, s, max_bytes));
  return OkStatus();
}

Status CountValue(const std::string& field, uint64_t v, uint64_t lo, uint64_t hi) {
  if (v < lo || v > hi) {
    return UsageError(fmt::format("{} {} is out of range; give {} to {}", field, v, lo, hi));
  }
  return OkStatus();
}

Status SecondsValue(const std::string& field, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {
    return UsageError(
        fmt::format("{} {:g} s is out of range; give {:g} to {:g} seconds", field, v, lo, hi));
  }
  return OkStatus();
}

// A relative path would name a different program from every working directory, and a leading
// '-' is an option.
Status ProgramValue(const std::string& field, const std::string& s) {
  KSTACKLAB_RETURN_IF_ERROR(TextValue(field, s));
  if (s.empty() || s[0] == '-' || !PrintableAscii(s) ||
      (s.find('/') != std::string::npos && s[0] != '/')) {
    return UsageError(
        fmt::format("{} '{}' is not a program: give a name found on PATH or an absolute path",
                    field, EscapeControl(s)));
  }
  return OkStatus();
}

bool PrintableAscii(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

bool OptionWord(const std::string& s) {
  if (s.empty() || s[0] == '-' || !PrintableAscii(s)) return false;
  return s.find_first_of(" \t'\"\\;&|$`<>(){}*?[]#~!") == std::string::npos;
}

// It goes into a job file and a QEMU command line as it is.
bool IsFetchableUrl(const std::string& url) {
  static const char* const kSchemes[] = {"http://", "https://", "file://", "ftp://"};
  bool scheme = false;
  for (const char* k : kSchemes) scheme = scheme || url.rfind(k, 0) == 0;
  if (!scheme || url.size() > CampaignLimits::kMaxTextBytes) return false;
  for (char c : url) {
    if (c <= ' ' || c > '~' || c == '"' || c == '\'' || c == '\\') return false;
  }
  return true;
}

Status CheckFile(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return UsageError(fmt::format("{} '{}': {}; give an existing file", what, EscapeControl(path),
                                  std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return UsageError(fmt::format("{} '{}' is not a regular file", what, EscapeControl(path)));
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return UsageError(fmt::format("{} '{}' is not readable", what, EscapeControl(path)));
  }
  return OkStatus();
}

}  // namespace kstacklab::campaign
