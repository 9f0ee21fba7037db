// Shared pieces of the attack reports (include/kstacklab/analysis/attack.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "kstacklab/analysis/attack.h"

namespace kstacklab::analysis {

void AddEvidence(AttackRow& row, std::string key, double value) {
  const bool integral =
      std::isfinite(value) && std::fabs(value) < 1e15 && value == std::floor(value);
  row.evidence.push_back(
      {std::move(key),
       integral ? fmt::format("{}", static_cast<int64_t>(value)) : fmt::format("{:.6g}", value),
       true, std::nullopt});
}

void AddEvidence(AttackRow& row, std::string key, std::string text) {
  row.evidence.push_back({std::move(key), std::move(text), false, std::nullopt});
}

void AddCountEvidence(AttackRow& row, std::string key, uint64_t count, bool lower_bound) {
  row.evidence.push_back({std::move(key), fmt::format("{}", count), true, lower_bound});
}

std::string DescribeAttackCost(const AttackCost& c) {
  std::string time;
  if (c.seconds < 1) {
    time = "under 1 s";
  } else if (c.seconds < 120) {
    time = fmt::format("about {:.0f} s", c.seconds);
  } else if (c.seconds < 7200) {
    time = fmt::format("about {:.0f} min", c.seconds / 60);
  } else if (c.seconds < 48 * 3600) {
    time = fmt::format("about {:.1f} h", c.seconds / 3600);
  } else {
    time = fmt::format("about {:.3g} days", c.seconds / 86400);
  }
  const double mib = c.bytes / (1024.0 * 1024);
  const std::string memory = mib < 1024 ? fmt::format("{:.0f} MiB", std::max(mib, 1.0))
                                        : fmt::format("{:.1f} GiB", mib / 1024);
  return fmt::format("{} and {}", time, memory);
}

std::string PredictionVerdict(uint64_t correct, uint64_t predicted, double chance) {
  if (predicted == 0) return "nothing predicted";
  const double n = static_cast<double>(predicted);
  const double hits = static_cast<double>(correct);
  const double sd = std::sqrt(n * chance * (1 - chance));
  const bool significant = sd > 0 ? (hits - n * chance) / sd > kVerdictSigmas : hits > n * chance;
  if (!significant) return "chance";
  return hits / n >= 0.5 ? "predictable" : "above chance";
}

void SetAccuracy(AttackRow& row) {
  row.accuracy = row.predicted == 0
                     ? 0
                     : static_cast<double>(row.correct) / static_cast<double>(row.predicted);
}

}  // namespace kstacklab::analysis
