// Pieces of `run` that tie the measurement to the environment capture and the store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kstacklab/results.h"

namespace kstacklab::cli {

// The default label of a run: the kernel release (uname -r).
std::string DefaultLabel();

// Captures the environment and appends its warnings (each "message; remedy") plus the build
// type warning to `warnings`.
Json CaptureRunEnvironment(std::vector<std::string>* warnings);

// Prints each warning once on stderr.
void PrintWarnings(const std::vector<std::string>& warnings);

// Records the result in the store ("" = default path). A store failure is a warning: the
// result file `written_file` ("" = none was written) keeps the measurement, and the warning
// says how to add it to the store later.
std::optional<int64_t> RecordRunInStore(const RunResult& result, const std::string& store_path,
                                        const std::string& written_file);

}  // namespace kstacklab::cli
