// Statistics for comparing configurations: pure functions with defined edge cases.
// Definitions and when to use which: docs/reading-tables.md ("Statistics").
//
// Edge cases, common to all functions: NaN in the input propagates to a NaN result (never a
// verdict); too few values for a quantity gives NaN (Mean of {} , Variance of n < 2); zero
// variance is handled explicitly where it matters (documented per function).
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

namespace kstacklab::stats {

// Scale: the binary exponent e of the largest |value| in a and b (0 when all are 0 or one is not
// finite), and x / 2^e, which is exact. The scale-invariant statistics below (Welch's t and p,
// Fieller's CI, the standard deviation) work on values near 1 this way, so squares neither
// overflow (values near 1e300) nor underflow (1e-170) and the result is the same at any scale.
int MagnitudeExponent(const std::vector<double>& a, const std::vector<double>& b = {});
std::vector<double> ScaledByPowerOfTwo(std::vector<double> x, int e);

double Mean(const std::vector<double>& x);      // NaN when empty; no overflow of the sum
double Variance(const std::vector<double>& x);  // sample variance (n - 1); NaN when n < 2
double StdDev(const std::vector<double>& x);    // sqrt(Variance), computed at scale 1

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
// correction and a 0.5 continuity correction, floored at MannWhitneyMinP (below that floor only
// when ties meet few samples, where the approximation claims more than any permutation of the
// data can show). NaN p when a side is empty.
struct MannWhitneyResult {
  double u = 0;
  double p = 0;
  bool exact = false;
};
MannWhitneyResult MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b);
// The smallest two-sided p the exact test can give with n_a and n_b samples (complete
// separation): min(1, 2 / C(n_a + n_b, n_a)). 3 vs 3: 0.1, so nothing is significant at 0.05.
double MannWhitneyMinP(size_t n_a, size_t n_b);

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

// Variance components of a nested measurement, run > session > repetition (Kalibera & Jones,
// "Rigorous Benchmarking in Reasonable Time", ISMM 2013, random-effects model). data[i][j] holds
// the repetition values of session j of run i. Method-of-moments (nested ANOVA) estimates, each
// clipped at 0, with n1 = mean repetitions per session and n2 = mean sessions per run (exact for
// balanced designs, an approximation otherwise):
//   S1^2 = mean over sessions with >= 2 repetitions of their sample variance;  repetition = S1^2
//   S2^2 = mean over runs with >= 2 sessions of the variance of their session means;
//          session = max(0, S2^2 - S1^2 / n1)
//   S3^2 = variance of the run means (mean of a run's session means), >= 2 runs;
//          run = max(0, S3^2 - L / n2), L = S2^2, or S1^2 / n1 when no run has 2 sessions.
// A component is NaN when its level does not vary in the data. With one session per run the run
// component also holds the session-to-session variance (the two cannot be told apart).
struct VarianceComponents {
  double run = std::numeric_limits<double>::quiet_NaN();         // unit^2
  double session = std::numeric_limits<double>::quiet_NaN();     // unit^2
  double repetition = std::numeric_limits<double>::quiet_NaN();  // unit^2
  size_t runs = 0;
  double sessions_per_run = 0;         // mean over runs
  double repetitions_per_session = 0;  // mean over sessions
};
VarianceComponents NestedVarianceComponents(
    const std::vector<std::vector<std::vector<double>>>& data);

// A component's SD as a percentage of |value|: 100 * sqrt(variance) / |value|. NaN when the
// component is NaN (its level did not vary) or value is 0 or NaN.
double ComponentSdPercent(double variance, double value);

// Variance of one run's mean with n_sessions x n_repetitions under the components (NaN
// components count as 0): run + session / n_s + repetition / (n_s n_r).
double RunMeanVariance(const VarianceComponents& vc, double n_sessions, double n_repetitions);

// Cost of one unit at each level, in seconds, excluding the levels below (a boot; a process start
// with calibration; one repetition of the timed batch).
struct LevelCosts {
  double run = 120;
  double session = 1;
  double repetition = 0.001;
};
// Counts per configuration that detect a relative change `effect` (0.02 = 2 %) of `mean` with
// `power` at `alpha` (two-sided Welch test on run means, equal counts on both sides) at the least
// cost runs x (run + sessions x (session + repetitions x repetition)). Unconstrained, the optimum
// is Kalibera & Jones's n_i = sqrt(c_(i+1) var_i / (c_i var_(i+1))); here it is found by search
// over sessions 1..100 and repetitions 1..100000 with, for each, the exact (t-based) runs
// RepetitionsNeeded would give for sqrt(RunMeanVariance) / mean, at least `min_runs` (the floor
// a verdict needs; zero components are handled by the search). runs == 0 when not computable
// (mean 0 or NaN, effect <= 0); runs are capped at 10000.
struct LevelPlan {
  size_t runs = 0;
  size_t sessions = 0;
  size_t repetitions = 0;
  double cost_s = 0;  // per configuration
  double mdc = 0;     // relative MDC reached (0.018 = 1.8 %)
  // No design of at most kMaxPlanRuns runs per configuration reaches the effect (runs == 0).
  bool unreachable = false;
};
inline constexpr size_t kMaxPlanRuns = 10000;
LevelPlan PlanLevels(const VarianceComponents& vc, double mean, double effect, double alpha,
                     double power, const LevelCosts& costs, size_t min_runs);

// Drift of values taken in order (repetition order): ordinary least-squares slope of value on
// index 0..n-1. `drifting` when the slope is significant (two-sided t-test of slope = 0, df n-2,
// p < alpha) AND the fitted change over the run, |slope| * (n - 1), exceeds the residual standard
// deviation (so a trend larger than the spread around it). Needs n >= 4, else not drifting.
// How large the drift is, on the scale of a time: `ratio`, the fitted last value over the fitted
// first on a log scale (the least-squares slope of log(value), exponentiated over n - 1 steps):
// always > 0, so its change, ratio - 1, never falls below -100 % (a linear fit of a falling tail
// can end below zero: {8, 4, 2, 1} fit linearly fall by 184 % of their mean; their ratio is 1/8).
struct DriftResult {
  double slope = 0;                                         // per repetition, in the values' unit
  double fitted_change = 0;                                 // slope * (n - 1)
  double residual_sd = 0;                                   // sqrt(SSE / (n - 2))
  double p = 1;                                             // p-value of slope = 0
  double ratio = std::numeric_limits<double>::quiet_NaN();  // NaN unless every value is > 0
  bool drifting = false;
};
DriftResult DetectDrift(const std::vector<double>& values, double alpha);

}  // namespace kstacklab::stats
