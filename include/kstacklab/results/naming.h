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

// A row's variant as a file holds it (RowKey): its own variant, then the --ab value, joined by a
// comma ("raw,kernel.stack_erasing=0"); either alone when the other is empty ("raw",
// "kernel.stack_erasing=0"); "" for neither. SplitStoredVariant takes one apart: {own variant,
// knob}; {variant, ""} when the variant carries no --ab value (its last comma-separated piece has
// no '='). Only the result reader splits (an --ab file's rows, once).
std::string StoredVariant(const std::string& variant, const std::string& knob);
std::pair<std::string, std::string> SplitStoredVariant(const std::string& stored);

// A row as people read it, from its key: BenchmarkLabel with the variant as stored
// ("syscall/getpid [raw,kernel.stack_erasing=0]").
std::string BenchmarkLabel(const RowKey& key);

// compare's name of a row whose variant (and --ab value) are part of the row, not a column:
// the name, then " [variant]" and " [knob]" for each that the row key holds
// ("syscall/getpid [raw]", "syscall/getpid [raw] [kernel.stack_erasing=0]"). The params follow
// separately (CompareRow::params_text).
std::string CompareRowName(const RowKey& row);

// compare's row as its notes and warnings name it: CompareRowName, then its params
// (BenchmarkLabel: "fork h:1", "syscall/getpid [raw]").
std::string CompareRowLabel(const RowKey& row);

// compare's Result Class of a row (ResultClass of CompareRowName and the row's params).
std::string RowResultClass(const RowKey& row, const std::string& metric, const std::string& unit,
                           bool several_metrics);

// A row as a test case name of a test harness (the LAVA figures of a boot): the name, "_KEYVALUE"
// per param (value as JSON), "_VARIANT" as stored, then every character outside [A-Za-z0-9_.-]
// replaced by '_' ("syscall_getpid_raw").
std::string TestCaseName(const RowKey& key);

// One comparison of a table, a campaign target's row: compare's row name and result class,
// then the column against the baseline ("syscall/getpid mean (ns): b vs a").
std::string ComparisonName(const std::string& row_name, const std::string& result_class,
                           const std::string& column, const std::string& baseline);

// The lists' Fastpath name of a row (campaign --fastpath): the name, then " key:value" per param
// with the value as JSON (strings quoted), then " [variant]" as stored.
std::string FastpathRowName(const RowKey& key);

}  // namespace kstacklab
