#include "kstacklab/analysis/entropy.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <cmath>
#include <vector>

namespace kstacklab::analysis {

uint64_t SampleCount(std::span<const uint64_t> h) {
  uint64_t n = 0;
  for (uint64_t c : h) n += c;
  return n;
}

int DistinctCount(std::span<const uint64_t> h) {
  return static_cast<int>(std::count_if(h.begin(), h.end(), [](uint64_t c) { return c > 0; }));
}

namespace {

// -sum p log2 p of the distribution proportional to w (counts or weights, all >= 0).
template <class T>
double Shannon(std::span<const T> w) {
  double total = 0;
  for (T c : w) total += static_cast<double>(c);
  if (!(total > 0)) return 0;
  double bits = 0;
  for (T c : w) {
    if (!(c > 0)) continue;
    const double p = static_cast<double>(c) / total;
    bits -= p * std::log2(p);
  }
  return bits + 0.0;  // no -0
}

}  // namespace

double ShannonBits(std::span<const uint64_t> h) { return Shannon(h); }

double ShannonBits(std::span<const double> weights) { return Shannon(weights); }

double MillerMadowBits(std::span<const uint64_t> h) {
  const uint64_t n = SampleCount(h);
  if (n == 0) return 0;
  const double m = DistinctCount(h);
  return ShannonBits(h) + (m - 1) / (2.0 * static_cast<double>(n) * std::log(2.0));
}

double ConditionalEntropyBits(std::span<const uint64_t> joint, size_t columns) {
  KSTACKLAB_CHECK(columns >= 1 && joint.size() % columns == 0);
  std::vector<uint64_t> rows(joint.size() / columns, 0);
  for (size_t i = 0; i < joint.size(); ++i) rows[i / columns] += joint[i];
  return MillerMadowBits(joint) - MillerMadowBits(rows) + 0.0;
}

Expected<MutualInformation> MutualInformationBits(std::span<const uint8_t> x,
                                                  std::span<const uint8_t> y, uint32_t bins) {
  if (bins == 0 || bins > kstack::kMaxOffsetCount) {
    return RuntimeError(fmt::format("{} offset bins; give 1..{}", bins, kstack::kMaxOffsetCount));
  }
  if (x.size() != y.size()) {
    return RuntimeError(fmt::format("mutual information of {} and {} values", x.size(), y.size()));
  }
  MutualInformation mi;
  mi.pairs = x.size();
  if (x.empty()) return mi;
  std::vector<uint64_t> cx(bins, 0);
  std::vector<uint64_t> cy(bins, 0);
  std::vector<uint64_t> cxy(static_cast<size_t>(bins) * bins, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] >= bins || y[i] >= bins) {
      return RuntimeError(
          fmt::format("offset bin {} at pair {} is not below {}", std::max(x[i], y[i]), i, bins));
    }
    ++cx[x[i]];
    ++cy[y[i]];
    ++cxy[static_cast<size_t>(x[i]) * bins + y[i]];
  }
  mi.plugin_bits = ShannonBits(cx) + ShannonBits(cy) - ShannonBits(cxy) + 0.0;
  mi.miller_madow_bits = MillerMadowBits(cx) + MillerMadowBits(cy) - MillerMadowBits(cxy) + 0.0;
  mi.conditional_bits = ConditionalEntropyBits(cxy, bins);  // rows: x
  return mi;
}

double MinEntropyBits(std::span<const uint64_t> h) {
  const uint64_t n = SampleCount(h);
  if (n == 0) return 0;
  const uint64_t max = *std::max_element(h.begin(), h.end());
  return -std::log2(static_cast<double>(max) / static_cast<double>(n)) + 0.0;
}

double ChiSquareIdeal(std::span<const uint64_t> h, const kstack::OffsetGeometry& g) {
  KSTACKLAB_CHECK(h.size() == g.count());
  const uint64_t n = SampleCount(h);
  if (n == 0) return 0;
  double chi2 = 0;
  for (size_t bin = 0; bin < h.size(); ++bin) {
    const double expected = static_cast<double>(n) * g.Probability(static_cast<uint32_t>(bin));
    const double d = static_cast<double>(h[bin]) - expected;
    chi2 += d * d / expected;
  }
  return chi2;
}

double IdealShannonBits(const kstack::OffsetGeometry& g) {
  double bits = 0;
  for (uint32_t bin = 0; bin < g.count(); ++bin) {
    const double p = g.Probability(bin);
    if (p > 0) bits -= p * std::log2(p);
  }
  return bits;
}

double BestBlindGuess(const kstack::OffsetGeometry& g) {
  double best = 0;
  for (uint32_t bin = 0; bin < g.count(); ++bin) best = std::max(best, g.Probability(bin));
  return best;
}

double ChanceOfEqualOffsets(const kstack::OffsetGeometry& g) {
  double chance = 0;
  for (uint32_t bin = 0; bin < g.count(); ++bin) chance += g.Probability(bin) * g.Probability(bin);
  return chance;
}

double ChiSquarePValue(double chi2, int dof) {
  KSTACKLAB_CHECK(dof > 0);
  if (!(chi2 > 0)) return 1;
  const boost::math::chi_squared_distribution<double> dist(dof);
  return boost::math::cdf(boost::math::complement(dist, chi2));
}

int StackEntropyScriptBits(uint64_t seen) {
  int bits = 1;
  while (seen > 1) {
    seen >>= 1;
    ++bits;
  }
  return bits;
}

double RepeatRate(uint64_t repeats, uint64_t samples) {
  if (samples < 2) return 0;
  return static_cast<double>(repeats) / static_cast<double>(samples - 1);
}

namespace {

// Every statistic of a histogram of geometry g's offsets (chi-square against g's ideal
// distribution: the uniform one for v6.11+).
EntropyStats StatsOf(std::span<const uint64_t> h, uint64_t samples, uint64_t repeats,
                     const kstack::OffsetGeometry& g) {
  EntropyStats s;
  s.samples = samples;
  s.distinct = DistinctCount(h);
  s.shannon_bits = ShannonBits(h);
  s.min_entropy_bits = MinEntropyBits(h);
  s.chi_square = ChiSquareIdeal(h, g);
  s.chi_square_p = ChiSquarePValue(s.chi_square, static_cast<int>(g.count()) - 1);
  s.repeat_rate = RepeatRate(repeats, samples);
  s.script_bits = StackEntropyScriptBits(static_cast<uint64_t>(s.distinct));
  return s;
}

}  // namespace

EntropyStats Analyze(const OffsetTally& tally) {
  return StatsOf(tally.histogram(), tally.samples(), tally.repeats(), kstack::kGeometryV611);
}

Expected<EntropyStats> AnalyzeOffsets(std::span<const uint32_t> offsets,
                                      const kstack::OffsetGeometry& g) {
  std::vector<uint64_t> h(g.count(), 0);
  uint64_t repeats = 0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (!g.Contains(offsets[i])) {
      return RuntimeError(
          fmt::format("offset {} (index {}) is not one of {}", offsets[i], i, g.name));
    }
    if (i > 0 && offsets[i] == offsets[i - 1]) ++repeats;
    ++h[offsets[i] / g.align];
  }
  return StatsOf(h, offsets.size(), repeats, g);
}

Expected<EntropyStats> SamplePolicy(const kstack::PolicyDef& policy, uint64_t samples) {
  auto state = policy.boot();
  if (!state.ok()) return state.error();
  OffsetTally tally;
  for (uint64_t i = 0; i < samples; ++i) {
    const uint32_t offset = policy.next_offset(state->get());
    if (!tally.Add(offset)) {
      return RuntimeError(
          fmt::format("policy {} produced offset {}, not one of 0, 16, ..., 1008 (internal error)",
                      policy.name, offset));
    }
  }
  return Analyze(tally);
}

}  // namespace kstacklab::analysis
