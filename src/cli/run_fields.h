// The run plan's options, each described once (run_fields.cc, `RunFields()`): its flag, words,
// default, range and where it lives in run::RunPlan. The one table drives `kstacklab run`'s
// flags, their parsing into a plan, the words the run library's messages use for each field, and
// the command line of a session's child process.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/run/run.h"

namespace kstacklab::cli {

// The flags as given, one slot per row of RunFields() (same order). Every value arrives as text:
// counts go through ParseCount (CLI11 2.1 accepts "-5" and wraps).
struct RunFlags {
  std::vector<std::vector<std::string>> given;  // a row's values; empty = not given
  std::vector<CLI::Option*> options;            // the row's CLI11 option
  bool internal_validate = false;               // check everything, measure nothing
};

// Adds every row's option to `sub` (kstacklab run, or the parser a campaign checks its `run`
// arguments with); `f` must outlive the parse.
void AddRunFlags(CLI::App& sub, RunFlags* f);

// The plan the flags describe; a count, duration or word out of range names its flag.
Expected<run::RunPlan> PlanFromFlags(const RunFlags& f);

// What the run library's messages call each field: the rows' flags.
const run::PlanNames& FlagNames();

// The command line of session K: the same run, one session, result on stdout, no store.
std::vector<std::string> SessionArgv(const run::RunPlan& p, int session);

}  // namespace kstacklab::cli
