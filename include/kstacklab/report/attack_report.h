// Renderers of an attack report (include/kstacklab/analysis/attack.h): the grid table (default) and
// JSON.
#pragma once

#include <string>

#include "kstacklab/analysis/attack.h"
#include "kstacklab/results/results.h"

namespace kstacklab::report {

// The grid: design, setting, observations, predicted, correct, accuracy, x chance, remaining
// bits, verdict, then one column per evidence key (keys of the first row, in order); under it
// the claim, the meaning of remaining bits, the seed and the notes.
std::string RenderAttackTable(const analysis::AttackReport& report);

// {"schema": "kstacklab-attack/1", "attack", "mode", "seed", "claim", "chance",
//  "remaining_bits_meaning", "rows": [{design, setting, observations, predicted, correct,
//  accuracy, chance, remaining_bits, verdict, <evidence keys, spaces and '-' as '_'>...}],
//  "notes": [...]}.
Json AttackReportToJson(const analysis::AttackReport& report);
std::string RenderAttackJson(const analysis::AttackReport& report);

}  // namespace kstacklab::report
