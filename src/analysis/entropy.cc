#include "kstacklab/entropy.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <cmath>

namespace kstacklab::analysis {

uint64_t SampleCount(const OffsetHistogram& h) {
  uint64_t n = 0;
  for (uint64_t c : h) n += c;
  return n;
}

int DistinctCount(const OffsetHistogram& h) {
  return static_cast<int>(std::count_if(h.begin(), h.end(), [](uint64_t c) { return c > 0; }));
}

double ShannonBits(const OffsetHistogram& h) {
  const uint64_t n = SampleCount(h);
  if (n == 0) return 0;
  double bits = 0;
  for (uint64_t c : h) {
    if (c == 0) continue;
    const double p = static_cast<double>(c) / static_cast<double>(n);
    bits -= p * std::log2(p);
  }
  return bits + 0.0;  // no -0
}

double MinEntropyBits(const OffsetHistogram& h) {
  const uint64_t n = SampleCount(h);
  if (n == 0) return 0;
  const uint64_t max = *std::max_element(h.begin(), h.end());
  return -std::log2(static_cast<double>(max) / static_cast<double>(n)) + 0.0;
}

double ChiSquareUniform(const OffsetHistogram& h) {
  const uint64_t n = SampleCount(h);
  if (n == 0) return 0;
  const double expected = static_cast<double>(n) / kOffsetBins;
  double chi2 = 0;
  for (uint64_t c : h) {
    const double d = static_cast<double>(c) - expected;
    chi2 += d * d / expected;
  }
  return chi2;
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

EntropyStats Analyze(const OffsetTally& tally) {
  const OffsetHistogram& h = tally.histogram();
  EntropyStats s;
  s.samples = tally.samples();
  s.distinct = DistinctCount(h);
  s.shannon_bits = ShannonBits(h);
  s.min_entropy_bits = MinEntropyBits(h);
  s.chi_square = ChiSquareUniform(h);
  s.chi_square_p = ChiSquarePValue(s.chi_square);
  s.repeat_rate = RepeatRate(tally.repeats(), tally.samples());
  s.script_bits = StackEntropyScriptBits(static_cast<uint64_t>(s.distinct));
  return s;
}

Expected<EntropyStats> AnalyzeOffsets(std::span<const uint32_t> offsets) {
  OffsetTally tally;
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (!tally.Add(offsets[i])) {
      return RuntimeError(fmt::format(
          "offset {} (index {}) is not one of 0, 16, ..., 1008 (a 64-bit v6.11+ masked offset)",
          offsets[i], i));
    }
  }
  return Analyze(tally);
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
