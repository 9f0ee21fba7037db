#include "kstacklab/report/bisect_progress.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <variant>

namespace kstacklab::report {
namespace {

// A figure with 3 decimals, "-" when it is not a number (as the bisect report writes them).
std::string BisectFigure(double v) {
  return std::isfinite(v) ? fmt::format("{:.3f}", v) : std::string("-");
}

std::string ThetaIntervalText(const stats::ThetaInterval& i) {
  if (!i.bounded) return "unbounded";
  return fmt::format("[{}, {}]", BisectFigure(i.low), BisectFigure(i.high));
}

// One function per kind of note, chosen by std::visit.
struct BisectWords {
  std::string operator()(const campaign::KernelBuilding& b) const {
    return fmt::format("building {} ... (log: {})", b.kernel, b.log);
  }
  std::string operator()(const campaign::EndsMeasuring& m) const {
    return fmt::format(
        "measuring the ends ({} and {}) until their difference is established, at most {} blocks",
        m.good, m.bad, m.max_blocks);
  }
  std::string operator()(const campaign::EndsMeasured& m) const {
    return fmt::format("ends: {} {} vs {} {}: difference {} [{}, {}] after {} blocks: {}", m.good,
                       BisectFigure(m.good_mean), m.bad, BisectFigure(m.bad_mean),
                       BisectFigure(m.difference), BisectFigure(m.low), BisectFigure(m.high),
                       m.blocks, m.established ? "established" : "not established");
  }
  std::string operator()(const campaign::StepStarting& s) const {
    return fmt::format("step {}: {} (between {} and {}), at most {} blocks of 3 boots", s.number,
                       s.kernel, s.low, s.high, s.max_blocks);
  }
  std::string operator()(const campaign::StepSkipped& s) const {
    return fmt::format("step {}: {}: {}: undecided (skipped)", s.number, s.kernel, s.failure);
  }
  std::string operator()(const campaign::StepJudged& s) const {
    const char* verdict = s.verdict == stats::StepVerdict::kGood  ? "good"
                          : s.verdict == stats::StepVerdict::kBad ? "bad"
                                                                  : "undecided (skipped)";
    return fmt::format("step {}: {}: {} boots, theta {} {}: {}", s.number, s.kernel, s.boots,
                       BisectFigure(s.interval.theta), ThetaIntervalText(s.interval), verdict);
  }
  std::string operator()(const campaign::BisectOutcome& o) const { return BisectOutcomeText(o); }
};

}  // namespace

std::string BisectOutcomeText(const campaign::BisectOutcome& o) {
  if (o.ends_only) {
    return fmt::format(
        "the ends differ; a candidate can now be judged against them (kstacklab bisect step {}, "
        "for git bisect run)",
        o.dir);
  }
  if (o.first_bad.size() == 1) {
    return fmt::format("first bad kernel: {} (last good: {})", o.first_bad[0], o.last_good);
  }
  return fmt::format("the first bad kernel is one of {} (steps undecided; last good: {})",
                     fmt::join(o.first_bad, ", "), o.last_good);
}

std::string BisectNoteText(const campaign::BisectNote& note) {
  return std::visit(BisectWords{}, note);
}

}  // namespace kstacklab::report
