// What `kstacklab bisect` tells as it goes, as data: a kernel being built, the ends measured, each
// step begun and decided, and the outcome. The bisect words none of it; report/bisect_progress.h
// does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "kstacklab/stats/bisect_rule.h"

namespace kstacklab::campaign {

// The git-range form: kernel `kernel` (GitKernelName) is being built, its build's output going to
// the file `log`.
struct KernelBuilding {
  std::string kernel;
  std::string log;
};

// The ends `good` and `bad` are to be booted until their difference is established, in at most
// `max_blocks` blocks.
struct EndsMeasuring {
  std::string good;
  std::string bad;
  size_t max_blocks = 0;
};

// The ends measured: each end's mean, the difference (bad - good) with its interval [low, high]
// after `blocks` blocks, and whether it is established. Not-a-number figures are unknown.
struct EndsMeasured {
  std::string good;
  double good_mean = 0;
  std::string bad;
  double bad_mean = 0;
  double difference = 0;
  double low = 0;
  double high = 0;
  size_t blocks = 0;
  bool established = false;
};

// Step `number` (1-based) begins: candidate `kernel`, between the last good `low` and the first
// bad `high` kernels so far, in at most `max_blocks` blocks of 3 boots.
struct StepStarting {
  size_t number = 0;
  std::string kernel;
  std::string low;
  std::string high;
  size_t max_blocks = 0;
};

// Step `number`'s candidate `kernel` has no image to boot (`failure`: why, with its build log):
// the step is undecided, a skip, without a boot.
struct StepSkipped {
  size_t number = 0;
  std::string kernel;
  std::string failure;
};

// Step `number` decided after `boots` boots: candidate `kernel`'s theta and its interval, and the
// verdict (kGood, kBad or kUndecided: a skip).
struct StepJudged {
  size_t number = 0;
  std::string kernel;
  uint64_t boots = 0;
  stats::ThetaInterval interval;
  stats::StepVerdict verdict = stats::StepVerdict::kUndecided;
};

// How a search that has ended came out: with only the two ends (`ends_only`), that they differ and
// a candidate can be judged against them with the bisect in `dir`; else the first bad kernel
// (`first_bad` holds one name) or the kernels it is one of (several: the steps between them were
// undecided), after the last good kernel `last_good`.
struct BisectOutcome {
  bool ends_only = false;
  std::string dir;
  std::vector<std::string> first_bad;
  std::string last_good;
};

// A line always worth printing.
using BisectNote = std::variant<KernelBuilding, EndsMeasuring, EndsMeasured, StepStarting,
                                StepSkipped, StepJudged, BisectOutcome>;

}  // namespace kstacklab::campaign
