// CDF and tail maths of the latency plots (private to src/report; LatencyCdf itself is public in
// include/kstacklab/report/plot.h).
#pragma once

#include <vector>

#include "kstacklab/report/plot.h"

namespace kstacklab::report {

// The tail view of a CDF: for each point below fraction 1, (ns, 1 - fraction) — the fraction of
// calls slower than ns. Points at fraction 1 are left out (0 cannot be drawn on a log axis).
std::vector<CdfPoint> TailCurve(const std::vector<CdfPoint>& cdf);

// The smallest ns at which the CDF reaches `fraction` (e.g. 0.999: the p99.9 as drawn), or 0
// when it never does (an empty CDF).
double NsAtFraction(const std::vector<CdfPoint>& cdf, double fraction);

}  // namespace kstacklab::report
