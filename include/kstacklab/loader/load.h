// Turning a command-line argument into a RunResult: a result file, "-" (standard input) or a
// store id. Library kstacklab_loader (on top of kstacklab_store). Messages name the value, never
// a flag.
#pragma once

#include <cstdint>
#include <string>

#include "kstacklab/common/error.h"
#include "kstacklab/results/results.h"

namespace kstacklab::loader {

// "17" or "id:17" -> 17. Anything else (0, a sign, spaces, hex, more than 18 digits) ->
// UsageError naming `text` and where ids come from. The one store-id parser.
Expected<int64_t> ParseStoreId(const std::string& text);

// Loads a result named on the command line: an existing file path, "-" (standard input, which
// can be read once per process: a second "-" is a UsageError), or a store id looked up in the
// store at `store_path`, opened read-only. Errors are UsageErrors naming `spec`, or
// RuntimeErrors from the store.
Expected<RunResult> LoadResultInput(const std::string& spec, const std::string& store_path);

}  // namespace kstacklab::loader
