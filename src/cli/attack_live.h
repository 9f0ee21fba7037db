// `kstacklab attack timer --live` and `attack migration --live`: the attacks on the running
// kernel with the live BPF sampler as ground truth (src/live/, docs/live.md). Same report struct
// as the model attacks (mode = "live").
#pragma once

#include <cstdint>

#include "kstacklab/analysis/attack.h"
#include "kstacklab/common/error.h"

namespace kstacklab::cli {

// `calls` getpid syscalls, half to calibrate the attacker, half scored.
Expected<analysis::AttackReport> TimerLiveReport(uint64_t calls);

// `rounds` forced migrations of a thread blocked in read(2); needs 2 CPUs.
Expected<analysis::AttackReport> MigrationLiveReport(uint64_t rounds);

}  // namespace kstacklab::cli
