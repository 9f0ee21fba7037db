// Multi-session runs (RunPlan::sessions > 1): each session is a fresh process (new address space,
// stack placement and calibration) whose result is merged into one RunResult. The caller builds
// the child's command line; this unit runs it safely:
//  * the child writes its result to a pipe (its stdout), never to a named temporary file, so no
//    file is left behind on any path and no predictable name exists in /tmp;
//  * the child dies with its parent (PR_SET_PDEATHSIG): killing the parent never leaves an
//    orphan measuring on a pinned CPU;
//  * a stop request (SIGINT/SIGTERM seen by the parent) is forwarded to the child, whose partial
//    result is still read back.
#pragma once

#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/results/results.h"
#include "kstacklab/run/run.h"

namespace kstacklab::run {

// Runs `argv` (argv[0] = the executable's path) with stdout connected to a pipe and reads the
// result document it writes there. The guard's stop request is polled whenever a signal
// interrupts the read, and forwarded to the child as the signal that made it. `session` names the
// session in messages. Errors: the child cannot start, or it exits non-zero without a partial
// result -> RuntimeError.
Expected<RunResult> RunSession(const std::vector<std::string>& argv, int session,
                               const RunGuard& guard);

// Appends the repetitions and histograms of `other` to `into` (the same benchmarks in the same
// order, else RuntimeError); `partial` is or-ed.
Status MergeSession(RunResult& into, const RunResult& other);

}  // namespace kstacklab::run
