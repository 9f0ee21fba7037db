// Offset entropy: what a kstack-offset design "buys" (DESIGN.md job 4). Pure functions over a
// sequence of masked offsets or their 64-bin histogram (bin = offset / 16, offsets in
// {0, 16, ..., 1008} as on 64-bit v6.11+: KSTACK_OFFSET_MAX's mask 0x3F0, commit 872bb37f6829).
// Ideal: 6 bits.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "kstacklab/common/error.h"
#include "kstacklab/kstack/apply.h"
#include "kstacklab/kstack/policies.h"

namespace kstacklab::analysis {

inline constexpr int kOffsetBins = static_cast<int>(kstack::kOffsetCount);
inline constexpr uint32_t kOffsetStep = kstack::kOffsetGranule;

using OffsetHistogram = std::array<uint64_t, kOffsetBins>;

// Streaming tally of offsets: the histogram plus the lag-1 repeat count. No allocation.
class OffsetTally {
 public:
  // False (and nothing counted) when offset is not a multiple of 16 below 1024.
  bool Add(uint32_t offset) {
    if (!kstack::IsMaskedOffset(offset)) return false;
    if (samples_ > 0 && offset == previous_) ++repeats_;
    previous_ = offset;
    ++histogram_[offset / kOffsetStep];
    ++samples_;
    return true;
  }
  const OffsetHistogram& histogram() const { return histogram_; }
  uint64_t samples() const { return samples_; }
  uint64_t repeats() const { return repeats_; }  // consecutive equal pairs

 private:
  OffsetHistogram histogram_{};
  uint64_t samples_ = 0;
  uint64_t repeats_ = 0;
  uint32_t previous_ = 0;
};

// The histogram functions take any number of bins (an OffsetHistogram has 64; the live sampler's
// histograms have one bin per offset of the kernel's geometry, up to 129).
// Sum of the bins.
uint64_t SampleCount(std::span<const uint64_t> h);
// Bins with a non-zero count.
int DistinctCount(std::span<const uint64_t> h);
// Shannon entropy -sum p log2 p of the empirical distribution, bits (0 when empty). The one
// entropy formula of analysis/ and live/: everything below builds on it.
double ShannonBits(std::span<const uint64_t> h);
// The same for the distribution proportional to non-negative weights (0 when they sum to 0).
double ShannonBits(std::span<const double> weights);
// Miller–Madow corrected entropy, bits: ShannonBits(h) + (m - 1) / (2 n ln 2), m = bins with a
// non-zero count, n = samples. The plug-in estimate is biased low by about that term (it sees
// too few of the rare values); the correction removes the first order of the bias. 0 when empty.
double MillerMadowBits(std::span<const uint64_t> h);
// Conditional entropy H(X | Y), bits, of joint counts joint[y * columns + x] (row-major;
// columns >= 1, joint.size() a multiple of it), Miller–Madow corrected:
// H_MM(X, Y) - H_MM(Y) = plug-in H(X | Y) + (occupied cells - occupied rows) / (2 n ln 2).
// The plug-in alone is biased low by about the added term: 0.145 bits for a uniform 64 x 64
// table of 20 000 pairs. Still biased low when n is not large against the occupied cells.
// 0 for an empty table.
double ConditionalEntropyBits(std::span<const uint64_t> joint, size_t columns);

// Mutual information of pairs (x, y) of offset bins 0..bins-1 (bin = offset / geometry.align;
// live::SerialDependence pairs one thread's offsets at a lag), in bits.
struct MutualInformation {
  uint64_t pairs = 0;
  double plugin_bits = 0;        // H(X) + H(Y) - H(X,Y) of the empirical distribution
  double miller_madow_bits = 0;  // plug-in with each entropy Miller–Madow corrected: + (m-1)/2N
                                 // nats, m = occupied cells (can go below 0 when independent)
  double conditional_bits = 0;   // H(Y|X), bits, Miller–Madow corrected
                                 // (ConditionalEntropyBits)
};

// RuntimeError when a bin is not below `bins` (at most kstack::kMaxOffsetCount) or the lengths
// differ. Empty input: all zero.
Expected<MutualInformation> MutualInformationBits(std::span<const uint8_t> x,
                                                  std::span<const uint8_t> y, uint32_t bins = 64);
// Min-entropy -log2(max p), bits (0 when empty).
double MinEntropyBits(std::span<const uint64_t> h);
// Pearson chi-square statistic sum (O - E)^2 / E against a geometry's ideal distribution
// (E = n * g.Probability(bin), h has g.count() bins): the uniform one for v6.11+, the uneven one
// of the older kernels. 0 when empty.
double ChiSquareIdeal(std::span<const uint64_t> h, const kstack::OffsetGeometry& g);
// Shannon entropy of a geometry's ideal distribution, bits (6 for v6.11+; 7.004 for
// pre-v6.11 x86-64).
double IdealShannonBits(const kstack::OffsetGeometry& g);
// Chance that two independent offsets drawn from g's ideal distribution are equal: sum p^2
// (1/64 for v6.11+; 1/128.5 for pre-v6.11 x86-64).
double ChanceOfEqualOffsets(const kstack::OffsetGeometry& g);
// The best a predictor that knows nothing of the state can do: max p (1/64; 8/1024 = 1/128).
double BestBlindGuess(const kstack::OffsetGeometry& g);
// Upper-tail p-value P(X >= chi2) of a chi-square variable with `dof` degrees of freedom
// (63 for 64 bins). 1 for chi2 <= 0.
double ChiSquarePValue(double chi2, int dof = kOffsetBins - 1);
// What tools/testing/selftests/lkdtm/stack-entropy.sh prints for `seen` distinct offsets: the
// length of seen's binary representation (`echo "obase=2; $seen" | bc | wc -L`), i.e.
// floor(log2(seen)) + 1; seen = 0 prints "0", one digit, so 1 (the script as of torvalds/linux
// 85ebe5aeef9b). Over-reports
// by 1 when seen is a power of two: 64 distinct offsets (6 true bits) print 7.
int StackEntropyScriptBits(uint64_t seen);
// repeats / (samples - 1): the fraction of consecutive equal offsets (1/64 for uniform iid
// draws, 1 for a constant); 0 with fewer than 2 samples.
double RepeatRate(uint64_t repeats, uint64_t samples);

struct EntropyStats {
  uint64_t samples = 0;
  int distinct = 0;
  double shannon_bits = 0;
  double min_entropy_bits = 0;
  double chi_square = 0;
  double chi_square_p = 1;
  double repeat_rate = 0;
  int script_bits = 1;  // stack-entropy.sh
};

// All of the above for a tally.
EntropyStats Analyze(const OffsetTally& tally);
// All of the above for a sequence of offsets of geometry g (chi-square against g's ideal
// distribution, g.count() - 1 degrees of freedom); RuntimeError naming the first offset that is
// not one of g's.
Expected<EntropyStats> AnalyzeOffsets(std::span<const uint32_t> offsets,
                                      const kstack::OffsetGeometry& g = kstack::kGeometryV611);

// Boots `policy` as at boot and draws `samples` masked offsets with its next_offset() on the
// calling thread (whatever CPU it runs on; per-CPU designs use that CPU's slot). RuntimeError
// if the boot fails or the policy yields an offset outside {0, 16, ..., 1008} (a model bug).
Expected<EntropyStats> SamplePolicy(const kstack::PolicyDef& policy, uint64_t samples);

}  // namespace kstacklab::analysis
