// Statistics for comparing configurations (issue 3): pure functions with defined edge cases.
// Definitions and when to use which: docs/reading-tables.md ("Statistics").
//
// Edge cases, common to all functions: NaN in the input propagates to a NaN result (never a
// verdict); too few values for a quantity gives NaN (Mean of {} , Variance of n < 2); zero
// variance is handled explicitly where it matters (documented per function).
#pragma once

#include <cstddef>
#include <vector>

namespace kstacklab::stats {

double Mean(const std::vector<double>& x);      // NaN when empty
double Variance(const std::vector<double>& x);  // sample variance (n - 1); NaN when n < 2
double StdDev(const std::vector<double>& x);    // sqrt(Variance)

// Quantiles of Student's t (df > 0, may be fractional) and the standard normal. p in (0, 1).
double StudentTQuantile(double p, double df);
double StudentTCdf(double t, double df);
double NormalQuantile(double p);
double NormalCdf(double z);

// Welch's unequal-variance t-test of mean(a) - mean(b) = 0, two-sided.
struct WelchResult {
  double t = 0;   // (mean_a - mean_b) / se
  double df = 0;  // Welch-Satterthwaite degrees of freedom
  double se = 0;  // sqrt(var_a/n_a + var_b/n_b)
  double p = 0;   // two-sided p-value
};
// NaN fields when either side has n < 2. Both variances zero: se = 0, p = 1 if the means are
// equal, else p = 0 (df = n_a + n_b - 2).
WelchResult WelchTTest(const std::vector<double>& a, const std::vector<double>& b);

// (1 - alpha) confidence interval of the ratio mean(num) / mean(den) of two independent means by
// Fieller's theorem: the set of R with (m_num - R m_den)^2 <= t^2 (v_num + R^2 v_den), where
// v = s^2/n and t = t(1 - alpha/2, df) with df the Welch-Satterthwaite degrees of freedom of
// m_num - R_hat m_den at the point estimate R_hat = m_num / m_den. `bounded` is false (and the
// limits NaN) when the denominator mean is not significantly non-zero (g = t^2 v_den / m_den^2
// >= 1): the set is then unbounded. n < 2 on a side: NaN, unbounded.
struct RatioInterval {
  double ratio = 0;
  double low = 0;
  double high = 0;
  double df = 0;
  bool bounded = false;
};
RatioInterval FiellerRatioCi(const std::vector<double>& num, const std::vector<double>& den,
                             double alpha);

// Two-sided Mann-Whitney U test of a vs b (R's wilcox.test(a, b) conventions): U = W =
// rank-sum(a) - n_a(n_a+1)/2. Exact null distribution when n_a < 50, n_b < 50 and there are no
// ties (p = min(1, 2 min(P[U <= u], P[U >= u]))); otherwise the normal approximation with tie
// correction and a 0.5 continuity correction. NaN p when a side is empty.
struct MannWhitneyResult {
  double u = 0;
  double p = 0;
  bool exact = false;
};
MannWhitneyResult MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b);

// Student-t confidence interval of a mean, (1 - alpha): mean +- t(1-alpha/2, n-1) s / sqrt(n).
// n < 2: NaN limits. Used by the fastpath (overlap) method.
struct MeanInterval {
  double mean = 0;
  double low = 0;
  double high = 0;
};
MeanInterval StudentMeanCi(const std::vector<double>& x, double alpha);

// Holm-Bonferroni step-down adjustment: sort the m finite p-values ascending, adj_(i) =
// max_{j<=i} min(1, (m - j + 1) p_(j)) (1-based j); NaN entries stay NaN and do not count in m.
std::vector<double> HolmAdjust(const std::vector<double>& p);

// Minimal detectable difference of means (absolute units) for a two-sided Welch test at level
// alpha with power `power`: (t(1-alpha/2, df) + t(power, df)) * sqrt(var_a/n_a + var_b/n_b),
// df Welch-Satterthwaite. NaN when n < 2 on a side.
double MinimalDetectableDifference(double var_a, size_t n_a, double var_b, size_t n_b, double alpha,
                                   double power);

// Smallest n per side such that a relative change of `effect` (0.05 = 5 %) is detected with
// `power` at `alpha` by a two-sided test on two samples of n with coefficient of variation `cv`
// (SD / mean) each: (t(1-alpha/2, 2n-2) + t(power, 2n-2)) * cv * sqrt(2/n) <= effect, n >= 2.
// Returns 0 when cv or effect is not finite and positive (cv == 0: 2). Capped at 1e7.
size_t RepetitionsNeeded(double cv, double effect, double alpha, double power);

// Drift of values taken in order (repetition order): ordinary least-squares slope of value on
// index 0..n-1. `drifting` when the slope is significant (two-sided t-test of slope = 0, df n-2,
// p < alpha) AND the fitted change over the run, |slope| * (n - 1), exceeds the residual standard
// deviation (so a trend larger than the spread around it). Needs n >= 4, else not drifting.
struct DriftResult {
  double slope = 0;          // per repetition, in the values' unit
  double fitted_change = 0;  // slope * (n - 1)
  double residual_sd = 0;    // sqrt(SSE / (n - 2))
  double p = 1;              // p-value of slope = 0
  bool drifting = false;
};
DriftResult DetectDrift(const std::vector<double>& values, double alpha);

}  // namespace kstacklab::stats
