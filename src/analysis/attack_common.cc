// Shared pieces of the attack reports (include/kstacklab/attack.h).
#include <fmt/format.h>

#include <cmath>

#include "kstacklab/attack.h"

namespace kstacklab::analysis {

void AddEvidence(AttackRow& row, std::string key, double value) {
  const bool integral =
      std::isfinite(value) && std::fabs(value) < 1e15 && value == std::floor(value);
  row.evidence.push_back(
      {std::move(key),
       integral ? fmt::format("{}", static_cast<int64_t>(value)) : fmt::format("{:.6g}", value),
       true});
}

void AddEvidence(AttackRow& row, std::string key, std::string text) {
  row.evidence.push_back({std::move(key), std::move(text), false});
}

void SetAccuracy(AttackRow& row) {
  row.accuracy = row.predicted == 0
                     ? 0
                     : static_cast<double>(row.correct) / static_cast<double>(row.predicted);
}

double ConditionalEntropyBits(const std::vector<std::vector<uint64_t>>& counts) {
  uint64_t total = 0;
  for (const auto& row : counts) {
    for (uint64_t c : row) total += c;
  }
  if (total == 0) return 0;
  double bits = 0;
  for (const auto& row : counts) {
    uint64_t n = 0;
    for (uint64_t c : row) n += c;
    if (n == 0) continue;
    double h = 0;
    for (uint64_t c : row) {
      if (c == 0) continue;
      const double p = static_cast<double>(c) / static_cast<double>(n);
      h -= p * std::log2(p);
    }
    bits += static_cast<double>(n) / static_cast<double>(total) * h;
  }
  return bits + 0.0;
}

}  // namespace kstacklab::analysis
