// Reading a result file: parse and validate it against the schema and its limits
// (kstacklab/results/results.h), and the label check the reader applies. Library kstacklab_results
// (src/results/json.cc). A command-line argument (a file, "-" or a store id):
// kstacklab/loader/load.h.
#pragma once

#include <optional>
#include <string>

#include "kstacklab/common/error.h"
#include "kstacklab/results/results.h"

namespace kstacklab {

// Parses and validates a result document. `source` names it in messages (a path or "store id 3").
// Malformed JSON -> UsageError with the byte position; unknown schema -> UsageError naming it;
// a NaN/inf/non-number metric, a label/name/variant that is not UTF-8 or holds a control
// character, a benchmark without repetitions, an inconsistent histogram or anything beyond
// ResultLimits -> UsageError naming the field. Never throws, whatever `text` holds.
Expected<RunResult> ResultFromJson(const std::string& text, const std::string& source);
Expected<RunResult> ReadResultFile(const std::string& path);
// Standard input read (at most ResultLimits::kMaxFileBytes) and parsed, named "<stdin>".
Expected<RunResult> ReadResultStdin();

// Checks a label (run --label, or a variant/name) for what ResultFromJson would refuse:
// returns "is not valid UTF-8 (...)" / "contains the control character ..." or nullopt.
std::optional<std::string> LabelProblem(const std::string& label);

}  // namespace kstacklab
