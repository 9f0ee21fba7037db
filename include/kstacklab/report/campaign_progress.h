// The words of a running campaign (campaign/runner_events.h, campaign/engine_events.h): its
// progress line, its notes and its engine's, and its stop reasons, as `kstacklab campaign` and
// `kstacklab bisect` print them and the state keeps a stop reason.
#pragma once

#include <string>

#include "kstacklab/campaign/engine_events.h"
#include "kstacklab/campaign/runner_events.h"
#include "kstacklab/campaign/state.h"

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

// One line per engine note:
//   the accelerator's reason as the engine gave it;
//   "the guest's run.log was 3000000 bytes: kept its first and last 524288 bytes (cap 1048576
//   bytes)", "the guest's result.json was over 67108864 bytes: not kept";
//   "console log PATH was 40 bytes: kept its first and last 10 bytes (cap 32 bytes)" ("LAVA log
//   PATH ..." for a LAVA job's log; control characters of PATH escaped);
//   "waiting for HOST:PORT to answer (20 s of 300 s)" (", after recover" once it has run).
std::string EngineNoteText(const campaign::EngineNote& note);

// "boots done", "target reached after 3 blocks", "max_boots (40) reached before the target",
// "time budget spent (1h02m of boots)", "the machine was lost: REASON", "a write on this host
// failed: MESSAGE", or the caller's own reason as it is.
std::string CampaignStopText(const campaign::StopReason& why);

// The journal's last line ignored on loading a campaign (LoadState), for stderr: "the last line
// of 'DIR/campaign.journal' is incomplete and is ignored (a save was killed while writing it: its
// step is done again)".
std::string JournalLineIgnoredText(const campaign::JournalLineIgnored& ignored);

}  // namespace kstacklab::report
