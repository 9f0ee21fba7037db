// Pure statistics (include/kstacklab/stats/stats.h). Distributions come from boost::math;
// everything else is written out so that each formula can be checked against the header's
// definition.
#include "kstacklab/stats/stats.h"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>
#include <numeric>

namespace kstacklab::stats {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

bool AnyNan(const std::vector<double>& x) {
  return std::any_of(x.begin(), x.end(), [](double v) { return !std::isfinite(v); });
}

// Welch-Satterthwaite df of a combination with variance components va (n_a) and vb (n_b).
double WelchDf(double va, size_t na, double vb, size_t nb) {
  double num = (va + vb) * (va + vb);
  double den = va * va / static_cast<double>(na - 1) + vb * vb / static_cast<double>(nb - 1);
  if (den == 0) return static_cast<double>(na + nb - 2);
  return num / den;
}

}  // namespace

int MagnitudeExponent(const std::vector<double>& a, const std::vector<double>& b) {
  double largest = 0;
  for (double v : a) largest = std::max(largest, std::fabs(v));
  for (double v : b) largest = std::max(largest, std::fabs(v));
  return largest == 0 || !std::isfinite(largest) ? 0 : std::ilogb(largest);
}

std::vector<double> ScaledByPowerOfTwo(std::vector<double> x, int e) {
  for (double& v : x) v = std::ldexp(v, -e);
  return x;
}

double Mean(const std::vector<double>& x) {
  if (x.empty()) return kNan;
  const double sum = std::accumulate(x.begin(), x.end(), 0.0);
  if (std::isinf(sum) && !AnyNan(x)) {  // finite values whose sum overflows (1e308 + 1e308)
    const int e = MagnitudeExponent(x);
    return std::ldexp(Mean(ScaledByPowerOfTwo(x, e)), e);
  }
  // Two-pass (sum then correction) for accuracy on values with a large common offset.
  double m = sum / static_cast<double>(x.size());
  double c = 0;
  for (double v : x) c += v - m;
  return m + c / static_cast<double>(x.size());
}

double Variance(const std::vector<double>& x) {
  if (x.size() < 2) return kNan;
  double m = Mean(x);
  double ss = 0;
  for (double v : x) ss += (v - m) * (v - m);
  return ss / static_cast<double>(x.size() - 1);
}

double StdDev(const std::vector<double>& x) {
  const int e = MagnitudeExponent(x);
  return std::ldexp(std::sqrt(Variance(ScaledByPowerOfTwo(x, e))), e);
}

double StudentTQuantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0) || std::isnan(df)) return kNan;
  if (std::isinf(df)) return NormalQuantile(p);
  return boost::math::quantile(boost::math::students_t_distribution<double>(df), p);
}

double StudentTCdf(double t, double df) {
  if (std::isnan(t) || !(df > 0)) return kNan;
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  if (std::isinf(df)) return NormalCdf(t);
  return boost::math::cdf(boost::math::students_t_distribution<double>(df), t);
}

double NormalQuantile(double p) {
  if (!(p > 0 && p < 1)) return kNan;
  return boost::math::quantile(boost::math::normal_distribution<double>(), p);
}

double NormalCdf(double z) {
  if (std::isnan(z)) return kNan;
  if (std::isinf(z)) return z > 0 ? 1.0 : 0.0;
  return boost::math::cdf(boost::math::normal_distribution<double>(), z);
}

WelchResult WelchTTest(const std::vector<double>& a, const std::vector<double>& b) {
  WelchResult r{kNan, kNan, kNan, kNan};
  if (a.size() < 2 || b.size() < 2 || AnyNan(a) || AnyNan(b)) return r;
  if (const int e = MagnitudeExponent(a, b); e != 0) {  // t, df and p do not depend on the scale
    r = WelchTTest(ScaledByPowerOfTwo(a, e), ScaledByPowerOfTwo(b, e));
    r.se = std::ldexp(r.se, e);
    return r;
  }
  double va = Variance(a) / static_cast<double>(a.size());
  double vb = Variance(b) / static_cast<double>(b.size());
  double diff = Mean(a) - Mean(b);
  r.se = std::sqrt(va + vb);
  r.df = WelchDf(va, a.size(), vb, b.size());
  if (r.se == 0) {
    r.t = diff == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), diff);
    r.p = diff == 0 ? 1 : 0;
    return r;
  }
  if (!std::isfinite(r.se) || !std::isfinite(diff)) return {kNan, kNan, kNan, kNan};  // overflow
  r.t = diff / r.se;
  // 2 * upper tail of |t|, computed on the lower tail for accuracy at small p.
  r.p = std::min(1.0, 2 * StudentTCdf(-std::fabs(r.t), r.df));
  return r;
}

RatioInterval FiellerRatioCi(const std::vector<double>& num, const std::vector<double>& den,
                             double alpha) {
  RatioInterval r{kNan, kNan, kNan, kNan, false};
  if (num.empty() || den.empty() || AnyNan(num) || AnyNan(den)) return r;
  if (const int e = MagnitudeExponent(num, den); e != 0) {  // a ratio does not depend on the scale
    return FiellerRatioCi(ScaledByPowerOfTwo(num, e), ScaledByPowerOfTwo(den, e), alpha);
  }
  double mn = Mean(num), md = Mean(den);
  r.ratio = md != 0 ? mn / md : kNan;
  if (num.size() < 2 || den.size() < 2 || md == 0 || !(alpha > 0 && alpha < 1)) return r;
  double vn = Variance(num) / static_cast<double>(num.size());
  double vd = Variance(den) / static_cast<double>(den.size());
  double q = r.ratio;
  r.df = WelchDf(vn, num.size(), q * q * vd, den.size());
  double t = StudentTQuantile(1 - alpha / 2, r.df);
  double t2 = t * t;
  double g = t2 * vd / (md * md);
  if (!(g < 1)) return r;  // denominator not distinguishable from 0: unbounded set
  // Roots of R^2 (md^2 - t^2 vd) - 2 R mn md + (mn^2 - t^2 vn) = 0.
  double a = md * md - t2 * vd;
  double disc = mn * mn * vd + md * md * vn - t2 * vn * vd;  // (discriminant / 4) / t^2
  double half = t * std::sqrt(std::max(0.0, disc));
  double lo = (mn * md - half) / a, hi = (mn * md + half) / a;
  r.low = std::min(lo, hi);
  r.high = std::max(lo, hi);
  r.bounded = true;
  return r;
}

MannWhitneyResult MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitneyResult r{kNan, kNan, false};
  if (a.empty() || b.empty() || AnyNan(a) || AnyNan(b)) return r;
  const size_t na = a.size(), nb = b.size(), n = na + nb;
  // Mid-ranks of the pooled sample.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(n);
  for (double v : a) pooled.emplace_back(v, 0);
  for (double v : b) pooled.emplace_back(v, 1);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && pooled[j + 1].first == pooled[i].first) ++j;
    double mid = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    double tcount = static_cast<double>(j - i + 1);
    if (j > i) ties = true;
    tie_term += tcount * tcount * tcount - tcount;
    for (size_t k = i; k <= j; ++k) {
      if (pooled[k].second == 0) rank_sum_a += mid;
    }
    i = j + 1;
  }
  const double dna = static_cast<double>(na), dnb = static_cast<double>(nb);
  r.u = rank_sum_a - dna * (dna + 1) / 2;
  if (na < 50 && nb < 50 && !ties) {
    // Exact: count[u] = number of arrangements with statistic u, by the recurrence over the
    // largest element: N(u; i, j) = N(u - j; i - 1, j) + N(u; i, j - 1).
    const size_t umax = na * nb;
    // dp[j][u] for the current i; iterate i = 0..na.
    std::vector<std::vector<double>> prev(nb + 1, std::vector<double>(umax + 1, 0));
    for (size_t j = 0; j <= nb; ++j) prev[j][0] = 1;  // i = 0: one arrangement, u = 0
    for (size_t i = 1; i <= na; ++i) {
      std::vector<std::vector<double>> cur(nb + 1, std::vector<double>(umax + 1, 0));
      cur[0][0] = 1;
      for (size_t j = 1; j <= nb; ++j) {
        for (size_t u = 0; u <= i * j; ++u) {
          double v = cur[j - 1][u];
          if (u >= j) v += prev[j][u - j];
          cur[j][u] = v;
        }
      }
      prev.swap(cur);
    }
    const std::vector<double>& count = prev[nb];
    double total = std::accumulate(count.begin(), count.end(), 0.0);
    size_t u = static_cast<size_t>(std::llround(r.u));
    double le = 0, ge = 0;
    for (size_t k = 0; k <= umax; ++k) {
      if (k <= u) le += count[k];
      if (k >= u) ge += count[k];
    }
    r.p = std::min(1.0, 2 * std::min(le, ge) / total);
    r.exact = true;
    return r;
  }
  const double dn = static_cast<double>(n);
  double mu = dna * dnb / 2;
  double sigma = std::sqrt(dna * dnb / 12 * ((dn + 1) - tie_term / (dn * (dn - 1))));
  if (sigma == 0) {
    r.p = 1;
    return r;
  }
  double d = r.u - mu;
  double z = (d - std::copysign(0.5, d)) / sigma;
  if (d == 0) z = 0;
  // With ties at small n the normal approximation can fall below any p a permutation test of
  // these sample sizes can give (3 tied vs 3 tied: 0.047 < 2 / C(6, 3) = 0.1); tied ranks only
  // coarsen the permutation distribution, so its smallest p is floored there.
  r.p = std::max(std::min(1.0, 2 * NormalCdf(-std::fabs(z))), MannWhitneyMinP(na, nb));
  return r;
}

double MannWhitneyMinP(size_t n_a, size_t n_b) {
  // C(n_a + n_b, k) for k = min(n_a, n_b), as a product of ratios (exact for the small n that
  // matter; large n give a tiny p, which is all a caller needs to know).
  const size_t k = std::min(n_a, n_b), n = n_a + n_b;
  double c = 1;
  for (size_t i = 1; i <= k; ++i) c = c * static_cast<double>(n - k + i) / static_cast<double>(i);
  return std::min(1.0, 2 / c);
}

std::vector<double> HolmAdjust(const std::vector<double>& p) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < p.size(); ++i) {
    if (!std::isnan(p[i])) idx.push_back(i);
  }
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return p[x] < p[y]; });
  std::vector<double> out(p.size(), kNan);
  const double m = static_cast<double>(idx.size());
  double running = 0;
  for (size_t j = 0; j < idx.size(); ++j) {
    double adj = std::min(1.0, (m - static_cast<double>(j)) * p[idx[j]]);
    running = std::max(running, adj);
    out[idx[j]] = running;
  }
  return out;
}

double MinimalDetectableDifference(double var_a, size_t n_a, double var_b, size_t n_b, double alpha,
                                   double power) {
  if (n_a < 2 || n_b < 2 || std::isnan(var_a) || std::isnan(var_b)) return kNan;
  double va = var_a / static_cast<double>(n_a), vb = var_b / static_cast<double>(n_b);
  double df = WelchDf(va, n_a, vb, n_b);
  return (StudentTQuantile(1 - alpha / 2, df) + StudentTQuantile(power, df)) * std::sqrt(va + vb);
}

size_t RepetitionsNeeded(double cv, double effect, double alpha, double power) {
  if (!std::isfinite(cv) || cv < 0 || !std::isfinite(effect) || effect <= 0) return 0;
  if (!(alpha > 0 && alpha < 1) || !(power > 0 && power < 1)) return 0;
  if (cv == 0) return 2;
  constexpr size_t kCap = 10'000'000;
  auto detectable = [&](size_t n) {
    double df = 2.0 * static_cast<double>(n) - 2;
    double mdc = (StudentTQuantile(1 - alpha / 2, df) + StudentTQuantile(power, df)) * cv *
                 std::sqrt(2.0 / static_cast<double>(n));
    return mdc <= effect;
  };
  // The MDC decreases monotonically in n: exponential then binary search.
  size_t hi = 2;
  while (!detectable(hi)) {
    if (hi >= kCap) return kCap;
    hi = std::min(kCap, hi * 2);
  }
  size_t lo = std::max<size_t>(2, hi / 2);
  if (detectable(lo)) return lo;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (detectable(mid))
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

double ComponentSdPercent(double variance, double value) {
  if (std::isnan(variance) || std::isnan(value) || value == 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return 100 * std::sqrt(variance) / std::fabs(value);
}

VarianceComponents NestedVarianceComponents(
    const std::vector<std::vector<std::vector<double>>>& data) {
  VarianceComponents vc;
  std::vector<double> within_session, within_run, run_means;
  double reps = 0, sessions = 0;
  for (const auto& run : data) {
    std::vector<double> session_means;
    for (const std::vector<double>& values : run) {
      if (values.empty()) continue;
      session_means.push_back(Mean(values));
      reps += static_cast<double>(values.size());
      if (values.size() >= 2) within_session.push_back(Variance(values));
    }
    if (session_means.empty()) continue;
    sessions += static_cast<double>(session_means.size());
    run_means.push_back(Mean(session_means));
    if (session_means.size() >= 2) within_run.push_back(Variance(session_means));
  }
  vc.runs = run_means.size();
  if (vc.runs == 0) return vc;
  vc.sessions_per_run = sessions / static_cast<double>(vc.runs);
  vc.repetitions_per_session = reps / sessions;
  // S1^2 / n1: the repetition level's share of a session mean's variance (0 when unknown).
  double s1 = within_session.empty() ? kNan : Mean(within_session);
  double rep_share = std::isnan(s1) ? 0 : s1 / vc.repetitions_per_session;
  vc.repetition = s1;
  double s2 = within_run.empty() ? kNan : Mean(within_run);
  if (!std::isnan(s2)) vc.session = std::max(0.0, s2 - rep_share);
  if (vc.runs >= 2) {
    double lower = std::isnan(s2) ? rep_share : s2;
    vc.run = std::max(0.0, Variance(run_means) - lower / vc.sessions_per_run);
  }
  return vc;
}

double RunMeanVariance(const VarianceComponents& vc, double n_sessions, double n_repetitions) {
  auto z = [](double v) { return std::isnan(v) ? 0.0 : v; };
  return z(vc.run) + z(vc.session) / n_sessions + z(vc.repetition) / (n_sessions * n_repetitions);
}

LevelPlan PlanLevels(const VarianceComponents& vc, double mean, double effect, double alpha,
                     double power, const LevelCosts& costs, size_t min_runs) {
  LevelPlan best;
  if (!std::isfinite(mean) || mean == 0 || !std::isfinite(effect) || effect <= 0) return best;
  if (!(alpha > 0 && alpha < 1) || !(power > 0 && power < 1)) return best;
  min_runs = std::max<size_t>(min_runs, 2);
  // factor[n] = (t(1-alpha/2, 2n-2) + t(power, 2n-2))^2 * 2 / n, decreasing in n: runs n per side
  // detect `effect` when factor[n] * cv^2 <= effect^2 (RepetitionsNeeded's condition, tabulated).
  constexpr size_t kMaxRuns = kMaxPlanRuns;
  std::vector<double> factor(kMaxRuns + 1, kNan);
  for (size_t n = 2; n <= kMaxRuns; ++n) {
    double df = 2.0 * static_cast<double>(n) - 2;
    double t = StudentTQuantile(1 - alpha / 2, df) + StudentTQuantile(power, df);
    factor[n] = t * t * 2 / static_cast<double>(n);
  }
  auto runs_needed = [&](double cv2) {
    if (cv2 == 0) return min_runs;
    double limit = effect * effect / cv2;
    auto it =
        std::partition_point(factor.begin() + 2, factor.end(), [&](double f) { return f > limit; });
    if (it == factor.end()) return size_t{0};  // not reachable with kMaxRuns runs
    return std::max(min_runs, static_cast<size_t>(it - factor.begin()));
  };
  std::vector<size_t> rep_counts;
  for (size_t r = 1; r <= 100000; r = r < 100 ? r + 1 : r + r / 20) rep_counts.push_back(r);
  double best_cost = std::numeric_limits<double>::infinity();
  for (size_t s = 1; s <= 100; ++s) {
    for (size_t r : rep_counts) {
      double cv2 =
          RunMeanVariance(vc, static_cast<double>(s), static_cast<double>(r)) / (mean * mean);
      size_t n = runs_needed(cv2);
      if (n == 0) continue;
      double per_run = costs.run + static_cast<double>(s) *
                                       (costs.session + static_cast<double>(r) * costs.repetition);
      double cost = static_cast<double>(n) * per_run;
      if (cost < best_cost) {
        best_cost = cost;
        best.runs = n;
        best.sessions = s;
        best.repetitions = r;
      }
    }
  }
  if (best.runs == 0) {  // no design of <= kMaxRuns runs reaches `effect`
    best.unreachable = true;
    return best;
  }
  double var = RunMeanVariance(vc, static_cast<double>(best.sessions),
                               static_cast<double>(best.repetitions));
  best.cost_s =
      static_cast<double>(best.runs) *
      (costs.run + static_cast<double>(best.sessions) *
                       (costs.session + static_cast<double>(best.repetitions) * costs.repetition));
  best.mdc =
      MinimalDetectableDifference(var, best.runs, var, best.runs, alpha, power) / std::fabs(mean);
  return best;
}

DriftResult DetectDrift(const std::vector<double>& values, double alpha) {
  DriftResult r;
  const size_t n = values.size();
  if (n < 4 || AnyNan(values)) return r;
  const double dn = static_cast<double>(n);
  double xbar = (dn - 1) / 2, ybar = Mean(values);
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    double dx = static_cast<double>(i) - xbar;
    sxx += dx * dx;
    sxy += dx * (values[i] - ybar);
  }
  r.slope = sxy / sxx;
  double sse = 0;
  for (size_t i = 0; i < n; ++i) {
    double fit = ybar + r.slope * (static_cast<double>(i) - xbar);
    sse += (values[i] - fit) * (values[i] - fit);
  }
  r.residual_sd = std::sqrt(sse / (dn - 2));
  r.fitted_change = r.slope * (dn - 1);
  if (r.residual_sd == 0) {
    r.p = r.slope == 0 ? 1 : 0;
  } else {
    double t = r.slope / (r.residual_sd / std::sqrt(sxx));
    r.p = std::min(1.0, 2 * StudentTCdf(-std::fabs(t), dn - 2));
  }
  r.drifting = r.p < alpha && std::fabs(r.fitted_change) > r.residual_sd;
  if (std::all_of(values.begin(), values.end(), [](double v) { return v > 0; })) {
    double sly = 0;
    for (size_t i = 0; i < n; ++i) {
      sly += (static_cast<double>(i) - xbar) * std::log(values[i]);
    }
    r.ratio = std::exp(sly / sxx * (dn - 1));
  }
  return r;
}

}  // namespace kstacklab::stats
