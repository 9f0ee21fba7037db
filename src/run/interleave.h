// The interleaved runners behind run::Run (include/kstacklab/run/run.h): the rows of one process
// measured repetition by repetition, and the A/B of a knob's values. No I/O, no printing.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/knobs/knobs.h"
#include "kstacklab/results/results.h"
#include "kstacklab/run/run.h"
#include "kstacklab/sampler/sampler.h"
#include "kstacklab/workloads/workload.h"

namespace kstacklab::run {

struct RunOptions {
  sampler::SamplerConfig sampler;
  int repetitions = 10;
  int session = 0;  // recorded in every repetition
  // The index of the first repetition in the order of RoundOrder (RunAb measures one repetition
  // per call and passes its own count, so its rows alternate direction too).
  int first_repetition = 0;
};

// The order of n rows (or knob values) in repetition r: as given for even r, reversed for odd r
// (A B C, C B A, A B C, ...). Each row's mean position in time is then the same over every two
// repetitions, so a linear drift of the machine hits every row alike; a fixed order would give
// the row measured last in each round its own systematic share of the drift.
std::vector<size_t> RoundOrder(size_t n, int repetition);

// fraction in [0,1], seconds elapsed, the row being measured.
using ProgressFn = std::function<void(double fraction, double elapsed_s, const std::string& row)>;

// Sets every row up (each checks its call once), then measures repetition r of every row before
// repetition r+1 of any, in RoundOrder, so slow drift of the machine hits all rows alike.
// Setup failure -> RuntimeError naming the row, before anything is measured. When `stop` turns
// true the run ends early: the result holds only completed repetitions and partial = true.
Expected<RunResult> RunWorkloads(const std::vector<workloads::WorkloadDef>& rows,
                                 const RunOptions& options, const sampler::ClockParams& clock,
                                 const std::atomic<bool>* stop, const ProgressFn& progress);

// What RunAb measured, and a runtime failure after something was measured (a knob that could
// not be set mid-run, or not restored; the result is then partial).
struct AbOutcome {
  RunResult result;
  std::optional<Error> failure;
};

// The interleaved A/B: for each repetition, for each value in RoundOrder, sets the knob and runs
// one repetition of the value's rows (Knob::RowsFor, then RunWorkloads). A sysctl knob writes
// each row once per value, its variant suffixed with "NAME=VALUE" ("kernel.stack_erasing=0", or
// "generic,kernel.stack_erasing=0"); a model knob writes the rows carrying each value under
// their own variant ("off", "percpu-prng"). Every value's rows are chosen (and checked) before
// anything is measured, and a sysctl takes every value once (read back) before the first timed
// call: a value it refuses is a UsageError. A sysctl knob is held by `guard` and restored before
// returning, on every path. The guard's stop request ends it early (partial).
Expected<AbOutcome> RunAb(const std::vector<workloads::WorkloadDef>& rows,
                          const RunOptions& options, const sampler::ClockParams& clock,
                          RunGuard& guard, const ProgressFn& progress, const knobs::AbSpec& spec,
                          knobs::Knob& knob);

// The rows measured in this process (run::Run, after calibrating): what a killed A/B run left
// changed is restored first (one warning per knob; while a live run holds the recovery file, an
// A/B is refused and a plain run warned). Without `ab` the rows as they are (RunWorkloads); with
// it, the rows the knob takes under each of its values (RunAb), the others named in one warning
// and left out.
Expected<AbOutcome> MeasureRows(const std::optional<knobs::AbSpec>& ab,
                                const std::vector<workloads::WorkloadDef>& rows,
                                const RunOptions& opt, const sampler::ClockParams& clock,
                                RunGuard& guard, const RunHooks& hooks);

}  // namespace kstacklab::run
