// The one place that builds the labels of result rows: the params notation, a row's id, a row as
// people read it, compare's result class, a configuration's name, and the variant of a row
// measured under --ab. Library
// kstacklab_results (src/results/naming.cc).
#pragma once

#include <string>
#include <utility>

#include "kstacklab/results/json.h"
#include "kstacklab/results/results.h"

namespace kstacklab {

// "syscall/getpid" + {"h":1} -> "h:1" (empty without params), the lists' params notation.
std::string ParamsText(const Json& params);

// A benchmark row's id: "name", "name(k:v, ...)" with params, then ":variant" when there is one,
// e.g. "model/kstack(handler:getpid):percpu-prng". Unique per row of the workload table.
std::string BenchmarkId(const std::string& name, const Json& params, const std::string& variant);

// A row as people read it (the summary table, warnings, notes, plots): "name", then " " and
// params_text (ParamsText) when not empty, then " [variant]" when there is one, e.g.
// "pkeys/update n:256 [batched]". compare's result class is the lists' other form (below).
std::string BenchmarkLabel(const std::string& name, const std::string& params_text,
                           const std::string& variant = "");

// compare's row label, the lists' "Result Class": "METRIC (UNIT)" for a row without params
// ("mean (ns)"); with params, the name's last path component and the params
// ("fork: h:1 (ns)" for "syscall/fork" and "h:1"), followed by the metric when several metrics
// are compared ("fork: h:1 p99 (ns)").
std::string ResultClass(const std::string& name, const std::string& params_text,
                        const std::string& metric, const std::string& unit, bool several_metrics);

// Human-readable column label of a benchmark entry inside a file: "label" or "label:variant".
std::string ConfigurationName(const RunResult& run, const BenchmarkResult& bench);

// The variant of a row measured under an --ab value: the row's own variant and the value's tag
// ("NAME=VALUE"), joined by a comma ("raw,kernel.stack_erasing=0"; the tag alone for a row
// without a variant). SplitAbVariant takes one apart: {own variant, tag}; {variant, ""} when the
// variant carries no tag (its last comma-separated piece has no '=').
std::string AbVariant(const std::string& own, const std::string& tag);
std::pair<std::string, std::string> SplitAbVariant(const std::string& variant);

}  // namespace kstacklab
