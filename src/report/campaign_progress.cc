#include "kstacklab/report/campaign_progress.h"

#include <fmt/format.h>

#include <variant>

#include "kstacklab/common/text.h"

namespace kstacklab::report {
namespace {

// One function per kind of note, chosen by std::visit.
struct NoteWords {
  std::string operator()(const campaign::BootFailed& f) const {
    return fmt::format("boot {} of '{}' failed{}: {} (console: {})", f.index, f.profile,
                       f.retrying ? ", retrying once" : "", f.reason, f.console);
  }
  std::string operator()(const campaign::MachineLost& m) const {
    return fmt::format("boot {} of '{}': {} (log: {})", m.index, m.profile, m.reason, m.log);
  }
  std::string operator()(const campaign::BlockEvaluated& e) const {
    const std::string worst = e.worst_mdc_pct ? fmt::format("{:.2f} %", *e.worst_mdc_pct)
                                              : std::string("not yet known (fewer than 2 boots)");
    const std::string after =
        e.reached      ? std::string(": reached")
        : e.needed > 0 ? fmt::format("; about {} boots per profile needed (plan)", e.needed)
                       : std::string();
    return fmt::format("after block {}: worst MDC of the {} {} over {} rows (target {:g} %){}",
                       e.block, e.metric, worst, e.rows, e.target_pct, after);
  }
  std::string operator()(const campaign::TargetNotEvaluable& t) const {
    return "the target cannot be evaluated: " + t.message;
  }
};

struct EngineWords {
  std::string operator()(const campaign::AcceleratorChanged& a) const { return a.why; }
  std::string operator()(const campaign::GuestFileCut& c) const {
    if (c.dropped) return fmt::format("the guest's {} was over {} bytes: not kept", c.name, c.cap);
    return fmt::format(
        "the guest's {} was {} bytes: kept its first and last {} bytes (cap {} bytes)", c.name,
        c.bytes, c.kept_each, c.cap);
  }
  std::string operator()(const campaign::LogCut& c) const {
    return fmt::format("{} {} was {} bytes: kept its first and last {} bytes (cap {} bytes)",
                       c.kind == campaign::LogKind::kLava ? "LAVA log" : "console log",
                       EscapeControl(c.file.path), c.file.bytes, c.file.kept_each, c.file.cap);
  }
  std::string operator()(const campaign::MachineAwaited& m) const {
    return fmt::format("waiting for {}:{} to answer ({:.0f} s of {:g} s{})", m.host, m.port,
                       m.waited_s, m.timeout_s, m.after_recover ? ", after recover" : "");
  }
};

}  // namespace

std::string CampaignDurationText(double s) {
  if (s >= 3600)
    return fmt::format("{}h{:02}m", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
  if (s >= 60) return fmt::format("{}m{:02}s", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  return fmt::format("{}s", static_cast<int>(s));
}

std::string BootStartingText(const campaign::BootStarting& b) {
  const std::string eta = b.eta_s ? ", ETA " + CampaignDurationText(*b.eta_s) : std::string();
  return fmt::format("boot {} of {}: profile {} (boot {}), {} elapsed{}", b.number, b.total,
                     b.profile, b.index, CampaignDurationText(b.elapsed_s), eta);
}

std::string RunnerNoteText(const campaign::RunnerNote& note) {
  return std::visit(NoteWords{}, note);
}

std::string EngineNoteText(const campaign::EngineNote& note) {
  return std::visit(EngineWords{}, note);
}

std::string JournalLineIgnoredText(const campaign::JournalLineIgnored& ignored) {
  return fmt::format(
      "the last line of '{}' is incomplete and is ignored (a save was killed while writing it: its "
      "step is done again)",
      EscapeControl(ignored.journal));
}

std::string CampaignStopText(const campaign::StopReason& why) {
  using campaign::StopKind;
  switch (why.kind) {
    case StopKind::kBootsDone:
      return "boots done";
    case StopKind::kTargetReached:
      return fmt::format("target reached after {} blocks", why.blocks);
    case StopKind::kMaxBoots:
      return fmt::format("max_boots ({}) reached before the target", why.max_boots);
    case StopKind::kBudgetSpent:
      return fmt::format("time budget spent ({} of boots)", CampaignDurationText(why.boot_seconds));
    case StopKind::kMachineLost:
      return "the machine was lost: " + why.text;
    case StopKind::kHostWriteFault:
      return "a write on this host failed: " + why.text;
    case StopKind::kCaller:
      return why.text;
  }
  return why.text;
}

}  // namespace kstacklab::report
