// Multi-session runs (`run --sessions S`): each session is a fresh process (new address space,
// stack placement and calibration) whose result is merged into one RunResult. The caller builds
// the child's command line; this unit runs it safely:
//  * the child writes its result to a pipe (its stdout), never to a named temporary file, so no
//    file is left behind on any path and no predictable name exists in /tmp;
//  * the child dies with its parent (PR_SET_PDEATHSIG): killing the parent never leaves an
//    orphan measuring on a pinned CPU;
//  * a stop request (SIGINT/SIGTERM seen by the parent) is forwarded to the child, whose partial
//    result is still read back.
#pragma once

#include <atomic>
#include <csignal>
#include <string>
#include <vector>

#include "kstacklab/error.h"
#include "kstacklab/results.h"

namespace kstacklab {

// Runs `argv` (argv[0] = the executable's path) with stdout connected to a pipe and reads the
// result document it writes there. `stop` is polled whenever a signal interrupts the read;
// `*stop_signal` (when non-zero) is the signal forwarded, else SIGTERM. `session` names the
// session in messages. Errors: the child cannot start, or it exits non-zero without a partial
// result -> RuntimeError.
Expected<RunResult> RunSession(const std::vector<std::string>& argv, int session,
                               const std::atomic<bool>* stop,
                               const volatile std::sig_atomic_t* stop_signal);

// Appends the repetitions and histograms of `other` to `into` (the same benchmarks in the same
// order, else RuntimeError); `partial` is or-ed.
Status MergeSession(RunResult& into, const RunResult& other);

}  // namespace kstacklab
