#include "kstacklab/stats/bisect_rule.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kstacklab/stats/stats.h"

namespace kstacklab::stats {
namespace {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

}  // namespace

std::vector<size_t> BisectRule::Looks(size_t last) const {
  std::vector<size_t> looks;
  const size_t first = std::max<size_t>(min_blocks, 2);
  for (size_t n = first; n < last; n = std::max(n + 1, (3 * n + 1) / 2)) looks.push_back(n);
  looks.push_back(std::max(first, last));
  return looks;
}

bool BisectRule::IsLook(size_t blocks, size_t last) const {
  const std::vector<size_t> looks = Looks(last);
  return std::find(looks.begin(), looks.end(), blocks) != looks.end();
}

double BisectRule::LookAlpha(size_t last) const {
  return alpha / static_cast<double>(Looks(last).size());
}

ThetaInterval PairedFiellerTheta(const std::vector<BisectBlock>& blocks, double alpha) {
  ThetaInterval r{kNoValue, kNoValue, kNoValue, false, blocks.size()};
  const size_t n = blocks.size();
  if (n == 0) return r;
  // theta does not depend on the unit: the values are scaled by the largest |value| first, so
  // the sums of squares stay near 1 (ns means near 1e3 or offsets counts near 1e2 alike).
  double scale = 0;
  for (const BisectBlock& b : blocks) {
    for (double v : {b.good, b.candidate, b.bad}) {
      if (!std::isfinite(v)) return r;
      scale = std::max(scale, std::fabs(v));
    }
  }
  if (scale == 0) scale = 1;
  std::vector<double> x, y;  // candidate - good, bad - good
  for (const BisectBlock& b : blocks) {
    x.push_back((b.candidate - b.good) / scale);
    y.push_back((b.bad - b.good) / scale);
  }
  const double mx = Mean(x), my = Mean(y);
  r.theta = my != 0 ? mx / my : kNoValue;
  if (n < 2 || !(alpha > 0 && alpha < 1)) return r;
  double sxx = 0, syy = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  const double dn = static_cast<double>(n);
  sxx /= dn - 1;
  syy /= dn - 1;
  sxy /= dn - 1;
  const double t = StudentTQuantile(1 - alpha / 2, dn - 1);
  const double k = t * t / dn;
  // theta is in the set when (mx - theta my)^2 <= k (sxx - 2 theta sxy + theta^2 syy):
  // a theta^2 + b theta + c <= 0.
  const double a = my * my - k * syy;
  const double b = -2 * (mx * my - k * sxy);
  const double c = mx * mx - k * sxx;
  if (!(a > 0)) return r;  // bad - good not significantly non-zero: unbounded
  const double disc = std::max(0.0, b * b - 4 * a * c);  // >= 0: theta-hat is in the set
  const double lo = (-b - std::sqrt(disc)) / (2 * a), hi = (-b + std::sqrt(disc)) / (2 * a);
  r.low = std::min(lo, hi);
  r.high = std::max(lo, hi);
  r.bounded = true;
  return r;
}

const char* StepVerdictName(StepVerdict v) {
  switch (v) {
    case StepVerdict::kGood:
      return "good";
    case StepVerdict::kBad:
      return "bad";
    case StepVerdict::kMore:
      return "more";
    case StepVerdict::kUndecided:
      return "undecided";
  }
  return "?";
}

StepJudgement JudgeStep(const std::vector<BisectBlock>& blocks, const BisectRule& rule) {
  StepJudgement j;
  // A wrong verdict is one-sided (a good candidate's interval above 1/2 excludes its theta = 0
  // from below), so the two-sided interval is read at twice the look's alpha: each side
  // LookAlpha.
  j.interval = PairedFiellerTheta(blocks, 2 * rule.LookAlpha(rule.max_blocks));
  if (!rule.IsLook(blocks.size(), rule.max_blocks)) {
    j.verdict = blocks.size() >= rule.max_blocks ? StepVerdict::kUndecided : StepVerdict::kMore;
    return j;
  }
  if (j.interval.bounded && j.interval.high < 0.5) {
    j.verdict = StepVerdict::kGood;
  } else if (j.interval.bounded && j.interval.low > 0.5) {
    j.verdict = StepVerdict::kBad;
  } else {
    j.verdict = blocks.size() >= rule.max_blocks ? StepVerdict::kUndecided : StepVerdict::kMore;
  }
  return j;
}

EndsJudgement JudgeEnds(const std::vector<std::pair<double, double>>& pairs,
                        const BisectRule& rule) {
  EndsJudgement j;
  j.blocks = pairs.size();
  std::vector<double> d;
  for (const auto& [good, bad] : pairs) d.push_back(bad - good);
  j.difference = Mean(d);
  j.low = j.high = kNoValue;
  if (d.size() >= 2) {
    const double t = StudentTQuantile(1 - rule.LookAlpha(rule.max_end_blocks) / 2,
                                      static_cast<double>(d.size() - 1));
    const double half = t * StdDev(d) / std::sqrt(static_cast<double>(d.size()));
    j.low = j.difference - half;
    j.high = j.difference + half;
  }
  const bool look = rule.IsLook(pairs.size(), rule.max_end_blocks);
  const bool last = pairs.size() >= rule.max_end_blocks;
  if (look && std::isfinite(j.low) && (j.low > 0 || j.high < 0)) {
    j.verdict = EndsVerdict::kEstablished;
  } else {
    j.verdict = last ? EndsVerdict::kNoRegression : EndsVerdict::kMore;
  }
  return j;
}

BisectSearch::BisectSearch(size_t kernels)
    : low_(0), high_(kernels == 0 ? 0 : kernels - 1), skipped_(kernels, false) {}

std::optional<size_t> BisectSearch::Next() const {
  if (high_ <= low_ + 1) return std::nullopt;
  const size_t mid = low_ + (high_ - low_) / 2;
  for (size_t d = 0; d < high_ - low_; ++d) {
    if (mid >= d && mid - d > low_ && !skipped_[mid - d]) return mid - d;
    if (mid + d < high_ && !skipped_[mid + d]) return mid + d;
  }
  return std::nullopt;
}

void BisectSearch::Record(size_t kernel, StepVerdict verdict) {
  if (kernel <= low_ || kernel >= high_) return;
  ++steps_;
  if (verdict == StepVerdict::kGood) {
    low_ = kernel;
  } else if (verdict == StepVerdict::kBad) {
    high_ = kernel;
  } else {
    skipped_[kernel] = true;
  }
}

std::vector<size_t> BisectSearch::FirstBadRange() const {
  std::vector<size_t> range;
  for (size_t k = low_ + 1; k < high_; ++k) {
    if (skipped_[k]) range.push_back(k);
  }
  range.push_back(high_);
  return range;
}

}  // namespace kstacklab::stats
