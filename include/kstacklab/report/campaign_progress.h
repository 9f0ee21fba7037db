// The words of a running campaign (campaign/runner_events.h): its progress line, its notes and
// its stop reasons, as `kstacklab campaign` and `kstacklab bisect` print them and the state keeps
// a stop reason.
#pragma once

#include <string>

#include "kstacklab/campaign/runner_events.h"

namespace kstacklab::report {

// A duration in whole units, cut (not rounded): "45s", "1m05s", "2h03m".
std::string CampaignDurationText(double seconds);

// "boot 3 of 12: profile a (boot 2), 1m05s elapsed, ETA 4m10s" (no ETA when unknown).
std::string BootStartingText(const campaign::BootStarting& b);

// One line per note:
//   "boot 2 of 'a' failed, retrying once: REASON (console: PATH)" (no ", retrying once" on the
//   last try); "boot 2 of 'a': REASON (log: PATH)" (the machine lost);
//   "after block 3: worst MDC of the mean 1.23 % over 4 rows (target 2 %): reached" (or
//   "; about N boots per profile needed (plan)", or nothing, after the target; "not yet known
//   (fewer than 2 boots)" for the MDC); "the target cannot be evaluated: MESSAGE".
std::string RunnerNoteText(const campaign::RunnerNote& note);

// "boots done", "target reached after 3 blocks", "max_boots (40) reached before the target",
// "time budget spent (1h02m of boots)", "the machine was lost: REASON", "a write on this host
// failed: MESSAGE", or the caller's own reason as it is.
std::string CampaignStopText(const campaign::StopReason& why);

}  // namespace kstacklab::report
