// The words of a running bisect (campaign/bisect_events.h): its notes, as `kstacklab bisect`
// prints them, and its outcome, as bisect.json keeps it in `result`.
#pragma once

#include <string>

#include "kstacklab/campaign/bisect_events.h"

namespace kstacklab::report {

// "first bad kernel: k5 (last good: k4)"; "the first bad kernel is one of k3, k4 (steps
// undecided; last good: k2)"; with the two ends only: "the ends differ; a candidate can now be
// judged against them (kstacklab bisect step DIR, for git bisect run)".
std::string BisectOutcomeText(const campaign::BisectOutcome& o);

// One line per note (figures with 3 decimals, "-" when unknown):
//   "building NAME ... (log: PATH)";
//   "measuring the ends (GOOD and BAD) until their difference is established, at most 8 blocks";
//   "ends: GOOD 100.000 vs BAD 105.000: difference 5.000 [4.000, 6.000] after 3 blocks:
//   established" (or "not established");
//   "step 2: NAME (between LOW and HIGH), at most 6 blocks of 3 boots";
//   "step 2: NAME: FAILURE: undecided (skipped)";
//   "step 2: NAME: 9 boots, theta 0.950 [0.900, 1.000]: bad" ("unbounded" for an unbounded
//   interval; "undecided (skipped)" for a skip); the outcome in BisectOutcomeText's words.
std::string BisectNoteText(const campaign::BisectNote& note);

}  // namespace kstacklab::report
