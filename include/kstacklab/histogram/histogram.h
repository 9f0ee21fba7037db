// Log-linear (HDR-style) latency histogram.
//
// Values are unsigned integers in a unit chosen by the caller (the sampler records picoseconds).
// Bucket layout, with S = sub_bucket_bits: values below 2^S each have their own bucket (exact);
// above, every power of two [2^e, 2^(e+1)) is split into 2^(S-1) equal buckets. A bucket's width
// is therefore at most value * 2^-(S-1), and reporting its midpoint is off by at most
// value * 2^-S: 0.049 % for the default S = 11 (bound tested in histogram_test.cc).
// Range: [0, 2^max_value_bits); larger values are counted in overflow() (and in count, sum, min
// and max, which are always exact), never dropped.
//
// Record() is O(1) (count-leading-zeros, shift, increment) and never allocates; the bucket array
// is allocated once in the constructor. Not thread-safe: one histogram per thread, then Merge().
#pragma once

#include <cstdint>
#include <vector>

#include "kstacklab/common/error.h"

namespace kstacklab::histogram {

// The sampler records picoseconds (histograms, BenchmarkResult::histogram); metrics are in ns.
inline constexpr double PsToNs(double ps) { return ps / 1000.0; }
inline constexpr double NsToPs(double ns) { return ns * 1000.0; }

// The nearest rank of the pct-th percentile of `count` values: ceil(pct/100 * count), clamped to
// [1, count] (0 when count is 0), computed so that an exact product is not pushed up by binary
// rounding (99.9/100 * 2000 is 1998.0000000000002 in doubles; its rank is 1998, not 1999).
uint64_t PercentileRank(double pct, uint64_t count);

class Histogram {
 public:
  static constexpr int kDefaultSubBucketBits = 11;  // 0.049 % worst-case midpoint error
  // 2^50 ps = 18.8 min: a macro/kernbench build on a slow or loaded machine (182 s seen) fits;
  // 2^44 (17.6 s, before 2026-11-30) sent every such build to `overflow`.
  static constexpr int kDefaultMaxValueBits = 50;

  struct Bucket {
    uint64_t low;   // smallest value in the bucket
    uint64_t high;  // one past the largest value in the bucket
    uint64_t count;
  };

  explicit Histogram(int sub_bucket_bits = kDefaultSubBucketBits,
                     int max_value_bits = kDefaultMaxValueBits);

  void Record(uint64_t value) { RecordN(value, 1); }
  void RecordN(uint64_t value, uint64_t n) {
    if (n == 0) return;
    count_ += n;
    sum_ += static_cast<double>(value) * static_cast<double>(n);
    if (value < min_) min_ = value;
    if (value > max_) max_ = value;
    if (value >= fast_limit_) [[unlikely]] {
      RecordSlow(value, n);  // an overflow, or the first value: allocates the buckets
      return;
    }
    counts_[IndexOf(value)] += n;
  }

  // Adds `other` into this histogram. Both must have the same layout (else a UsageError).
  Status Merge(const Histogram& other);
  void Reset();

  uint64_t count() const { return count_; }
  uint64_t overflow() const { return overflow_; }
  double sum() const { return sum_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double Mean() const;  // exact (sum / count); NaN when empty
  int sub_bucket_bits() const { return sub_bucket_bits_; }
  int max_value_bits() const { return max_value_bits_; }

  // Nearest-rank percentile, pct in [0, 100]: the midpoint of the bucket holding the
  // PercentileRank(pct, count)-th smallest value, clamped to [min, max]; pct 0 -> min, 100 -> max.
  // Overflowed values rank above every bucket and are represented by max(). NaN when empty.
  double ValueAtPercentile(double pct) const;

  std::vector<Bucket> NonEmptyBuckets() const;

  // Rebuilds a histogram from stored buckets (result files). Each bucket must be one of this
  // layout's buckets; count/sum/min/max/overflow are taken as given.
  static Expected<Histogram> FromBuckets(int sub_bucket_bits, int max_value_bits,
                                         const std::vector<Bucket>& buckets, uint64_t overflow,
                                         double sum, uint64_t min, uint64_t max);

  // Bucket maths, public for tests.
  size_t IndexOf(uint64_t value) const {
    int e = 63 - __builtin_clzll(value | 1);
    int shift = e < sub_bucket_bits_ ? 0 : e - sub_bucket_bits_ + 1;
    return (static_cast<size_t>(shift) << (sub_bucket_bits_ - 1)) + (value >> shift);
  }
  Bucket BucketAt(size_t index) const;
  size_t bucket_count() const { return bucket_count_; }

 private:
  int sub_bucket_bits_;
  int max_value_bits_;
  size_t bucket_count_;
  // Allocated (bucket_count_ zeros, 328 KiB for the default layout) by the first value that is
  // not an overflow: an empty histogram (loop mode, a result loaded for its means, the copies
  // compare makes) costs nothing. fast_limit_ is 2^max_value_bits_ once allocated and 0 before,
  // so RecordN tests one bound for both "overflow" and "not yet allocated".
  std::vector<uint64_t> counts_;
  uint64_t fast_limit_ = 0;
  void RecordSlow(uint64_t value, uint64_t n);
  void Allocate();
  uint64_t count_ = 0;
  uint64_t overflow_ = 0;
  double sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace kstacklab::histogram
