// Plots of result files (`kstacklab plot`, docs/plots.md): latency CDFs (or tail curves) per
// benchmark from the stored histograms, and the %-change chart of a comparison table with its
// confidence intervals. Rendering is delegated to gnuplot (Debian package gnuplot-nox): the
// builders below produce a self-contained gnuplot job (script + data files) as plain text, and
// RenderGnuplot() runs it in a private temp dir and writes the image atomically.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/histogram/histogram.h"
#include "kstacklab/results/results.h"
#include "kstacklab/stats/compare.h"

namespace kstacklab::report {

enum class PlotKind {
  kCdf,      // "cdf": fraction of calls faster than x, log x (default)
  kTail,     // "tail": fraction of calls slower than x, log x and log y (shows p99, p99.9)
  kCompare,  // "compare": % change vs the first input per benchmark x metric, CI whiskers
};

// "cdf", "tail", "compare"; else a UsageError naming the allowed values.
Expected<PlotKind> ParsePlotKind(const std::string& text);

enum class PlotFormat { kPng, kSvg };

// From the output file name: ".png" -> kPng (pngcairo, or gnuplot's png when cairo is missing),
// ".svg" -> kSvg; anything else (including "-") is a UsageError naming the allowed extensions.
Expected<PlotFormat> PlotFormatForPath(const std::string& path);

// One point of a latency CDF: `fraction` of the calls took less than `ns`.
struct CdfPoint {
  double ns;
  double fraction;
};

// The empirical CDF of a histogram of raw timed regions (picoseconds), overhead-corrected:
// one point per non-empty bucket at the bucket's upper edge, x = high/1000 - overhead_ns,
// fraction = (calls in this and lower buckets) / count. Overflowed calls are represented by a
// last point at max() with fraction 1. Points whose corrected x is <= 0 cannot be drawn on a
// log axis and are left out (their calls still count in the fractions). Empty histogram -> {}.
std::vector<CdfPoint> LatencyCdf(const histogram::Histogram& histogram, double overhead_ns);

// One input as given on the command line (a path or a store id) and its loaded result: the
// same as a comparison's input, so `plot --kind compare` passes its inputs on unchanged.
using PlotInput = stats::CompareInput;

// A gnuplot job. The script writes its image to the file "plot.out" in the working directory
// and reads its data files from there, by the names given here.
struct GnuplotJob {
  std::string script;
  std::vector<std::pair<std::string, std::string>> data_files;  // name, content
  std::vector<std::string> notes;  // what was left out and why (for stderr)
};

// Latency CDF (kCdf) or tail (kTail) plot: one panel per benchmark (name + params), in order of
// first appearance, two panels per row when several; one curve per configuration (the file's
// label, or label:variant; the source is appended when two inputs share a label). Benchmarks
// without a histogram (loop mode) are skipped with a note; nothing left -> UsageError.
Expected<GnuplotJob> BuildLatencyPlot(const std::vector<PlotInput>& inputs, PlotKind kind,
                                      PlotFormat format);

// %-change chart of a comparison table: one line per row (benchmark, params, metric), one point
// per variant column with its CI as horizontal whiskers, a zero line, significant cells marked
// (R)/(I). Rows without any computable change are skipped with a note; none left -> UsageError.
Expected<GnuplotJob> BuildComparePlot(const stats::CompareTable& table, PlotFormat format);

// Runs `gnuplot` (looked up on PATH) on `job` in a fresh temp dir, then writes the image to
// `output_path` atomically; temp files are removed on every path. gnuplot missing ->
// RuntimeError with the install command; gnuplot failing -> RuntimeError with its stderr.
Status RenderGnuplot(const GnuplotJob& job, const std::string& output_path);

// Quotes text as a gnuplot single-quoted string literal (only ' needs escaping there).
std::string GnuplotQuote(const std::string& text);

}  // namespace kstacklab::report
