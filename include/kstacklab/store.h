// The results store: an embedded SQLite database of result files (issue 3, item 5), and the one
// place that turns a user's "FILE or store id" argument into a RunResult.
#pragma once

#include <string>

#include "kstacklab/error.h"
#include "kstacklab/results.h"

namespace kstacklab {

// Default store path: $XDG_DATA_HOME/kstacklab/results.db, else ~/.local/share/kstacklab/results.db.
std::string DefaultStorePath();

// Loads a result named on the command line: an existing file path, "-" (stdin), or a store id
// ("17" or "id:17") looked up in the store at `store_path`. Errors are UsageErrors naming `spec`.
Expected<RunResult> LoadResultInput(const std::string& spec, const std::string& store_path);

}  // namespace kstacklab
