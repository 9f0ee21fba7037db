// The latency CDF of a histogram and the tail view of it (include/kstacklab/report/plot.h,
// src/report/plot_cdf.h).
#include "plot_cdf.h"

#include "kstacklab/histogram/histogram.h"

namespace kstacklab::report {

std::vector<CdfPoint> LatencyCdf(const histogram::Histogram& histogram, double overhead_ns) {
  std::vector<CdfPoint> out;
  const uint64_t total = histogram.count();
  if (total == 0) return out;
  const double min_ns = histogram::PsToNs(static_cast<double>(histogram.min())) - overhead_ns;
  if (min_ns > 0) out.push_back({min_ns, 0.0});
  uint64_t below = 0;
  for (const histogram::Histogram::Bucket& b : histogram.NonEmptyBuckets()) {
    below += b.count;
    const double x = histogram::PsToNs(static_cast<double>(b.high)) - overhead_ns;
    if (x > 0) out.push_back({x, static_cast<double>(below) / static_cast<double>(total)});
  }
  if (histogram.overflow() > 0) {
    const double x = histogram::PsToNs(static_cast<double>(histogram.max())) - overhead_ns;
    if (x > 0) out.push_back({x, 1.0});
  }
  return out;
}

std::vector<CdfPoint> TailCurve(const std::vector<CdfPoint>& cdf) {
  std::vector<CdfPoint> tail;
  for (const CdfPoint& p : cdf) {
    if (p.fraction < 1.0) tail.push_back({p.ns, 1.0 - p.fraction});
  }
  return tail;
}

double NsAtFraction(const std::vector<CdfPoint>& cdf, double fraction) {
  for (const CdfPoint& p : cdf) {
    if (p.fraction >= fraction) return p.ns;
  }
  return 0;
}

}  // namespace kstacklab::report
