#include "kstacklab/histogram/histogram.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kstacklab::histogram {

Histogram::Histogram(int sub_bucket_bits, int max_value_bits)
    : sub_bucket_bits_(sub_bucket_bits), max_value_bits_(max_value_bits) {
  KSTACKLAB_CHECK(sub_bucket_bits >= 2 && sub_bucket_bits <= 20);
  KSTACKLAB_CHECK(max_value_bits > sub_bucket_bits && max_value_bits <= 63);
  // Largest index is that of 2^max_value_bits - 1.
  uint64_t top = (uint64_t{1} << max_value_bits) - 1;
  bucket_count_ = IndexOf(top) + 1;
}

void Histogram::Allocate() {
  if (!counts_.empty()) return;
  counts_.assign(bucket_count_, 0);
  fast_limit_ = uint64_t{1} << max_value_bits_;
}

void Histogram::RecordSlow(uint64_t value, uint64_t n) {
  if (value >> max_value_bits_) {
    overflow_ += n;
    return;
  }
  Allocate();
  counts_[IndexOf(value)] += n;
}

Histogram::Bucket Histogram::BucketAt(size_t index) const {
  KSTACKLAB_CHECK(index < bucket_count_);
  const uint64_t count = counts_.empty() ? 0 : counts_[index];
  const size_t half = size_t{1} << (sub_bucket_bits_ - 1);
  if (index < 2 * half) return Bucket{index, index + 1, count};
  size_t shift = index / half - 1;
  uint64_t sub = index - shift * half;  // in [half, 2*half)
  uint64_t low = sub << shift;
  return Bucket{low, low + (uint64_t{1} << shift), count};
}

Status Histogram::Merge(const Histogram& other) {
  if (other.sub_bucket_bits_ != sub_bucket_bits_ || other.max_value_bits_ != max_value_bits_) {
    return UsageError(fmt::format("cannot merge histograms of different layouts ({}/{} vs {}/{})",
                                  sub_bucket_bits_, max_value_bits_, other.sub_bucket_bits_,
                                  other.max_value_bits_));
  }
  if (!other.counts_.empty()) {
    Allocate();
    for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  }
  if (other.count_) {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  count_ += other.count_;
  overflow_ += other.overflow_;
  sum_ += other.sum_;
  return OkStatus();
}

void Histogram::Reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = overflow_ = 0;
  sum_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
}

double Histogram::Mean() const {
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  return sum_ / static_cast<double>(count_);
}

uint64_t PercentileRank(double pct, uint64_t count) {
  if (count == 0 || std::isnan(pct)) return 0;
  const double x = std::clamp(pct, 0.0, 100.0) / 100.0 * static_cast<double>(count);
  // pct/100 is inexact in binary (99.9/100 = 0.9990000000000001), so a product that is an integer
  // in decimal arithmetic can land an ulp or two above it, and ceil would add one. A true
  // fractional part of pct * count / 100 is a multiple of 1e-6 when pct has at most 4 decimals
  // (p99.99), which is above this tolerance of 4 ulps for every count up to 10^9.
  const double tolerance = 4 * std::numeric_limits<double>::epsilon() * x;
  const double rank = std::ceil(x - tolerance);
  if (rank <= 1) return 1;
  if (rank >= static_cast<double>(count)) return count;
  return static_cast<uint64_t>(rank);
}

double Histogram::ValueAtPercentile(double pct) const {
  if (count_ == 0 || std::isnan(pct)) return std::numeric_limits<double>::quiet_NaN();
  pct = std::clamp(pct, 0.0, 100.0);
  if (pct == 0.0) return static_cast<double>(min_);
  if (pct == 100.0) return static_cast<double>(max_);
  const uint64_t rank = PercentileRank(pct, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] == 0) continue;
    seen += counts_[i];
    if (seen >= rank) {
      Bucket b = BucketAt(i);
      double mid = static_cast<double>(b.low) + static_cast<double>(b.high - b.low - 1) / 2.0;
      return std::clamp(mid, static_cast<double>(min_), static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);  // the rank falls among overflowed values
}

std::vector<Histogram::Bucket> Histogram::NonEmptyBuckets() const {
  std::vector<Bucket> out;
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i]) out.push_back(BucketAt(i));
  }
  return out;
}

Expected<Histogram> Histogram::FromBuckets(int sub_bucket_bits, int max_value_bits,
                                           const std::vector<Bucket>& buckets, uint64_t overflow,
                                           double sum, uint64_t min, uint64_t max) {
  if (sub_bucket_bits < 2 || sub_bucket_bits > 20 || max_value_bits <= sub_bucket_bits ||
      max_value_bits > 63) {
    return UsageError(
        fmt::format("histogram layout {}/{} is not supported", sub_bucket_bits, max_value_bits));
  }
  Histogram h(sub_bucket_bits, max_value_bits);
  for (const Bucket& b : buckets) {
    if (b.low >> max_value_bits) {
      return UsageError(fmt::format("histogram bucket at {} is out of range", b.low));
    }
    size_t i = h.IndexOf(b.low);
    Bucket expect = h.BucketAt(i);
    if (expect.low != b.low || expect.high != b.high) {
      return UsageError(
          fmt::format("histogram bucket [{}, {}) does not match the layout", b.low, b.high));
    }
    h.Allocate();
    h.counts_[i] += b.count;
    h.count_ += b.count;
  }
  h.overflow_ = overflow;
  h.count_ += overflow;
  h.sum_ = sum;
  if (h.count_) {
    h.min_ = min;
    h.max_ = max;
  }
  return h;
}

}  // namespace kstacklab::histogram
