// The decision rule of a performance bisect (docs/bisect.md): where a candidate kernel lies
// between the two ends of a regression, estimated from randomised blocks that boot the good end,
// the candidate and the bad end once each, with a verdict only when the data carry one.
//
// Each block b gives per-boot values G_b, C_b, B_b (one metric: a row's mean, or a strength fact).
// theta = (C - G) / (B - G): 0 where the candidate behaves as the good end, 1 as the bad end.
// Its confidence interval is Fieller's for paired data: theta is in the interval when the block
// differences z_b(theta) = (C_b - G_b) - theta (B_b - G_b) have a mean that a one-sample t test
// (df = blocks - 1) does not reject. The blocks pair the three boots, so a drift of the machine
// between blocks cancels in both differences.
//
// A step's verdict is read at a few looks (min_blocks, then each about 1.5 times the last, up to
// max_blocks). A wrong verdict is one-sided: a truly good candidate (theta = 0) is called bad
// only when the interval lies above 1/2, which excludes its theta from below. Each look reads
// the interval with alpha / looks on each side (Bonferroni over the looks), so the chance that
// a step whose candidate is truly good or bad is called the other way is at most alpha, however
// the looks fall. A step still undecided at max_blocks is a skip, never a guess.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kstacklab::stats {

struct BisectBlock {
  double good = 0;
  double candidate = 0;
  double bad = 0;
};

struct BisectRule {
  // The defaults are chosen by the simulation in tests/bisect_rule_test.cc (docs/bisect.md): a
  // 5 % step under 1.5 % per-boot noise is found in >= 99 % of bisects of 16 to 64 kernels.
  double alpha = 0.01;         // per step: the chance of a wrong verdict (Bonferroni over looks)
  size_t min_blocks = 3;       // the first look
  size_t max_blocks = 24;      // the last look: a step still undecided then is a skip
  size_t max_end_blocks = 24;  // the ends' last look before "no regression between the ends"
  // The block counts at which a verdict is read: min_blocks, then ceil(1.5 x) up to `last`
  // (always included): {3, 5, 8, 12, 18, 24} for 3..24.
  std::vector<size_t> Looks(size_t last) const;
  bool IsLook(size_t blocks, size_t last) const;
  double LookAlpha(size_t last) const;  // alpha / Looks(last).size()
};

// The (1 - alpha) interval of theta from `blocks` (Fieller, paired). `bounded` is false when
// B - G is not significantly non-zero at alpha (the set is then the whole line or two rays):
// low and high are NaN.
struct ThetaInterval {
  double theta = 0;
  double low = 0;
  double high = 0;
  bool bounded = false;
  size_t blocks = 0;
};
ThetaInterval PairedFiellerTheta(const std::vector<BisectBlock>& blocks, double alpha);

enum class StepVerdict {
  kGood,       // the interval lies below 1/2
  kBad,        // the interval lies above 1/2
  kMore,       // undecided, and another block is allowed
  kUndecided,  // undecided at max_blocks: the step is a skip
};
const char* StepVerdictName(StepVerdict v);  // "good", "bad", "more", "undecided"

struct StepJudgement {
  StepVerdict verdict = StepVerdict::kMore;
  ThetaInterval interval;  // at the look's alpha
};
// Read at a look (IsLook(blocks.size(), max_blocks)); between looks the verdict is kMore.
StepJudgement JudgeStep(const std::vector<BisectBlock>& blocks, const BisectRule& rule);

// The ends before the first step, from blocks of (good, bad) boots: their difference is
// established when, at a look of max_end_blocks, the (1 - LookAlpha) interval of mean(bad - good)
// (paired t) excludes 0; kNoRegression when it still does not at max_end_blocks.
enum class EndsVerdict { kEstablished, kMore, kNoRegression };
struct EndsJudgement {
  EndsVerdict verdict = EndsVerdict::kMore;
  double difference = 0;  // mean(bad - good)
  double low = 0;         // its interval at the look's alpha
  double high = 0;
  size_t blocks = 0;
};
// `pairs`: {good, bad} per block.
EndsJudgement JudgeEnds(const std::vector<std::pair<double, double>>& pairs,
                        const BisectRule& rule);

// The search over kernels 0..n-1 (0 is the good end, n-1 the bad end), as `git bisect` walks
// it: the candidate is the middle of the open range; good moves the low end up, bad the high end
// down; an undecided candidate is skipped and the next one tried is the untested kernel nearest
// the middle. Done when the range holds no untested kernel: the first bad kernel is `high` when
// no kernel between is skipped, else one of the skipped ones up to `high` (FirstBadRange).
class BisectSearch {
 public:
  explicit BisectSearch(size_t kernels);
  // The next kernel to measure, or nullopt when the search is over.
  std::optional<size_t> Next() const;
  void Record(size_t kernel, StepVerdict verdict);  // kGood, kBad or kUndecided
  size_t low() const { return low_; }
  size_t high() const { return high_; }
  // The kernels that may be the first bad one: {high} when decided, else the skipped kernels in
  // (low, high) and high.
  std::vector<size_t> FirstBadRange() const;
  size_t steps() const { return steps_; }

 private:
  size_t low_;
  size_t high_;
  std::vector<bool> skipped_;
  size_t steps_ = 0;
};

}  // namespace kstacklab::stats
