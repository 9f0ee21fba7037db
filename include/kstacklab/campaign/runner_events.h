// What the campaign runner tells as it goes, as data: a boot starting (progress), the notes (a
// boot failed, the machine lost, the precision after a block) and why a campaign stopped. The
// runner words none of it; report/campaign_progress.h does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace kstacklab::campaign {

// A boot is about to start: the `number`th of the campaign's `total` boots (this run's count,
// 1-based), boot `index` of `profile`, `elapsed_s` of boots so far in this run, and the time the
// rest should take at this run's pace (nullopt before the first boot of the run is done).
struct BootStarting {
  size_t number = 0;
  size_t total = 0;
  std::string profile;
  uint64_t index = 0;
  double elapsed_s = 0;
  std::optional<double> eta_s;
};

// A try of boot `index` of `profile` was not accepted: `reason` (the state's, capped), whether it
// is tried once more, and the path of the try's console log.
struct BootFailed {
  uint64_t index = 0;
  std::string profile;
  bool retrying = false;
  std::string reason;
  std::string console;
};

// The engine lost its machine during boot `index` of `profile`: `reason` (capped), and the path
// of the try's console log. The campaign stops.
struct MachineLost {
  uint64_t index = 0;
  std::string profile;
  std::string reason;
  std::string log;
};

// The precision rule after `block`: the worst MDC of `metric` in percent over `rows` rows (nullopt
// when fewer than 2 boots give it), the target's `target_pct`, whether it is `reached`, and the
// boots per profile the plan's rule says are needed (0: not computable).
struct BlockEvaluated {
  uint64_t block = 0;
  std::string metric;
  std::optional<double> worst_mdc_pct;
  size_t rows = 0;
  double target_pct = 0;
  bool reached = false;
  size_t needed = 0;
};

// The precision rule could not be applied after a block: the error's `message`.
struct TargetNotEvaluable {
  std::string message;
};

// A line always worth printing.
using RunnerNote = std::variant<BootFailed, MachineLost, BlockEvaluated, TargetNotEvaluable>;

// Why a campaign ended or stopped (the state's stop_reason, worded).
enum class StopKind {
  kBootsDone,       // every boot of a campaign without a target
  kTargetReached,   // after `blocks` blocks
  kMaxBoots,        // `max_boots` per profile booted, the target not reached
  kBudgetSpent,     // the boots took `boot_seconds`, the target's budget or more
  kMachineLost,     // `text`: the engine's reason
  kHostWriteFault,  // `text`: the failed write's message
  kCaller,          // `text`: the reason RunnerHooks::after_block gave, kept as it is
};
struct StopReason {
  StopKind kind = StopKind::kBootsDone;
  uint64_t blocks = 0;
  uint64_t max_boots = 0;
  double boot_seconds = 0;
  std::string text;
};

}  // namespace kstacklab::campaign
