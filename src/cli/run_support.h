// What other commands use of `run`: recording a result in the store (campaign records each boot's
// result).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kstacklab/results.h"

namespace kstacklab::cli {

// Records the result in the store ("" = default path). A store failure is a warning: the
// result file `written_file` ("" = none was written) keeps the measurement, and the warning
// says how to add it to the store later.
std::optional<int64_t> RecordRunInStore(const RunResult& result, const std::string& store_path,
                                        const std::string& written_file);

}  // namespace kstacklab::cli
